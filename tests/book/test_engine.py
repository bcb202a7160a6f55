"""The Dask engine: task order, errors that name the task, seeds from task identity, bit-identical sweeps in one
process, on one and on two worker processes, a worker killed mid-sweep, and an existing cluster started with
Dask's own command-line tools."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import cloudpickle
import numpy as np
import pytest
import torch
from book_helpers import write_chapter, write_toc
from helpers import random_attention, random_inputs

from attnpaths import engine
from attnpaths.experiments import sampling
from attnpaths.experiments.path_data import PathData, PathNetwork, path_data
from attnpaths.hmc import bands as hmc_ex
from attnpaths.hmc.networks import four_path_network, two_path_network
from attnpaths.oneshot import temperature_grid

# the tasks and types defined here travel to the workers by value: the workers cannot import this module
cloudpickle.register_pickle_by_value(sys.modules[__name__])


@contextlib.contextmanager
def _cluster(workers: int):
    """A client of a LocalCluster of ``workers`` single-threaded worker processes, both closed on leaving."""
    from distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        memory_limit=None,
        dashboard_address="127.0.0.1:0",
        host="127.0.0.1",
    )
    client = Client(cluster, set_as_default=False)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


@pytest.fixture(scope="module")
def two_workers():
    with _cluster(2) as client:
        yield client


@pytest.fixture(scope="module")
def one_worker():
    with _cluster(1) as client:
        yield client


def _square_plus(x, offset):
    return x * x + offset


def _fails_at_three(x):
    if x == 3:
        raise ArithmeticError("three is not allowed here")
    return x


# ---------------------------------------------------------------------------------------------------------
# in-process behaviour


def test_map_tasks_keeps_task_order_and_passes_shared_arguments():
    assert engine.map_tasks(
        _square_plus, [dict(x=x) for x in (3, 1, 2)], shared=dict(offset=10), description="squares", progress=False
    ) == [19, 11, 14]


def test_a_failing_task_names_the_sweep_its_arguments_and_the_original_traceback():
    with pytest.raises(engine.TaskFailed) as info:
        engine.map_tasks(_fails_at_three, [dict(x=x) for x in range(5)], description="counting", progress=False)
    message = str(info.value)
    assert "task 4 of 5 of the sweep 'counting'" in message and "x=3" in message
    assert "ArithmeticError: three is not allowed here" in message and "_fails_at_three" in message
    assert isinstance(info.value.__cause__, ArithmeticError)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="shared and tasks must name different arguments"):
        engine.map_tasks(_square_plus, [dict(x=1, offset=2)], shared=dict(offset=3), description="s")
    with pytest.raises(ValueError, match="function must be callable"):
        engine.map_tasks(3, [dict(x=1)], description="s")
    with pytest.raises(ValueError, match="seed and identity must be non-negative integers"):
        engine.task_seed(-1, 2)
    with pytest.raises(ValueError, match="workers must be an integer >= 1"):
        with engine.start_engine(workers=0):
            pass


def test_task_seeds_depend_on_the_identity_only():
    assert engine.task_seed(5, 1, 10) == engine.task_seed(5, 1, 10)
    seeds = {engine.task_seed(5, i, w) for i in range(3) for w in (10, 30, 100)} | {engine.task_seed(6, 0, 10)}
    assert len(seeds) == 10
    # the seeds the chapters used before the engine existed, so their numbers did not change
    assert engine.task_seed(7, 1, 30) == int(np.random.SeedSequence([7, 1, 30]).generate_state(1)[0])


def test_single_threaded_restores_the_thread_count():
    torch.set_num_threads(2)
    try:
        with engine.single_threaded():
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(1)


def test_the_environment_variable_chooses_the_engine(monkeypatch):
    monkeypatch.delenv(engine.SCHEDULER_ENV, raising=False)
    assert engine.scheduler_address() is None
    monkeypatch.setenv(engine.SCHEDULER_ENV, engine.IN_PROCESS)
    assert engine.scheduler_address() is None
    with engine.start_engine(workers=1) as found:
        assert found.mode == engine.IN_PROCESS and found.environment == {engine.SCHEDULER_ENV: engine.IN_PROCESS}
    monkeypatch.setattr(engine, "CONNECT_TIMEOUT", "2s")
    monkeypatch.setenv(engine.SCHEDULER_ENV, "tcp://127.0.0.1:9")  # nothing listens on the discard port
    with pytest.raises(ValueError, match="must be the address of a running Dask scheduler"):
        engine.map_tasks(_square_plus, [dict(x=1, offset=0)], description="s", progress=False)


# ---------------------------------------------------------------------------------------------------------
# the package's sweeps on real clusters


@pytest.fixture(scope="module")
def hmc_data():
    sets = hmc_ex.draw_data_sets(3, torch.Generator().manual_seed(4), num_train=30, num_test=60)
    train, test = sets[0]
    return sets, path_data(four_path_network(train), train, test)


def _sweeps(hmc_data, client):
    """Three of the package's sweeps, run with ``client`` (``None``: in-process)."""
    sets, data = hmc_data
    band = engine_band(sets, client)
    plans = [sampling.SamplingPlan(w, 5, 20, 2, 2, 10, 8, 1) for w in (10, 30)]
    samples = _with_client(client, sampling.sample_widths, data, plans, 0.01, 11, network_index=0, progress=False)
    return band, samples


def _with_client(client, function, *args, **kwargs):
    """Call ``function`` with its sweeps sent to ``client`` (``None``: in-process)."""
    if client is None:
        return function(*args, **kwargs)
    with engine.use_client(client):
        return function(*args, **kwargs)


def engine_band(sets, client):
    return _with_client(client, hmc_ex.data_set_band, sets, two_path_network, (10, 100), 0.01, progress=False)


@pytest.mark.cross_machine
def test_sweeps_are_bit_identical_in_process_and_on_one_and_two_workers(hmc_data, one_worker, two_workers):
    results = {
        name: _sweeps(hmc_data, client)
        for name, client in (("in-process", None), ("1 worker", one_worker), ("2 workers", two_workers))
    }
    reference_band, (reference_points, reference_exact) = results["in-process"]
    # determinism: the same task functions on the same inputs and seeds, in process or on workers
    for name, (band, (points, exact)) in results.items():
        assert np.array_equal(band.accuracy, reference_band.accuracy), name
        assert np.array_equal(band.U, reference_band.U), name
        assert all(np.array_equal(band.gp[k], reference_band.gp[k]) for k in band.gp), name
        for width in reference_points:
            for field in ("mean", "sd", "U", "U_se", "kernel_mean"):
                assert np.array_equal(getattr(points[width], field), getattr(reference_points[width], field)), (
                    name,
                    width,
                    field,
                )
            assert np.array_equal(exact[width].U, reference_exact[width].U), (name, width)
    # and the sampled widths really were computed apart: different widths give different numbers
    assert not np.array_equal(reference_points[10].U, reference_points[30].U)


def test_a_task_error_on_a_cluster_carries_the_remote_traceback(two_workers):
    with pytest.raises(engine.TaskFailed) as info:
        engine.map_tasks(
            _fails_at_three, [dict(x=x) for x in range(5)], description="counting", progress=False, engine=two_workers
        )
    assert "x=3" in str(info.value) and "three is not allowed here" in str(info.value)
    assert "_fails_at_three" in info.value.remote_traceback


def test_a_worker_killed_mid_sweep_changes_no_result(hmc_data, process_environment):
    """A real LocalCluster with 2 worker processes; one is killed (SIGKILL) while the sweep runs; the scheduler
    reruns its tasks and the results equal those of the undisturbed in-process run."""
    _, data = hmc_data
    plans = [sampling.SamplingPlan(w, 20, 120, 4, 2, 10, 8, 1) for w in (10, 12, 14, 16, 18, 20)]
    undisturbed, _ = sampling.sample_widths(data, plans, 0.01, 3, network_index=0, progress=False)
    with _cluster(2) as client:
        pids = client.run(os.getpid)
        result, errors = {}, []

        def sweep():
            try:
                result["points"] = _with_client(
                    client, sampling.sample_widths, data, plans, 0.01, 3, network_index=0, progress=False
                )[0]
            except BaseException as err:  # reported below
                errors.append(err)

        thread = threading.Thread(target=sweep)
        thread.start()
        deadline = time.monotonic() + 60
        while not client.processing() or not any(client.processing().values()):
            assert time.monotonic() < deadline, "the sweep never started"
            time.sleep(0.05)
        busy = [address for address, keys in client.processing().items() if keys]
        os.kill(pids[busy[0]], signal.SIGKILL)
        killed_at = time.monotonic()
        thread.join(timeout=300)
        assert not thread.is_alive() and not errors, errors
        assert time.monotonic() - killed_at > 0  # the sweep finished after the kill
    assert list(result["points"]) == list(undisturbed)
    for width, point in undisturbed.items():  # determinism: the rerun tasks are the same tasks
        assert np.array_equal(result["points"][width].U, point.U)
        assert np.array_equal(result["points"][width].mean, point.mean)


@pytest.mark.cross_machine
def test_theory_grid_rows_are_identical_on_a_cluster(two_workers):
    """The one-shot (N, T) grid, one task per width, equals the in-process grid bit for bit."""
    rng = np.random.default_rng(0)
    features = {s: torch.as_tensor(rng.standard_normal((n, 6, 4))) for s, n in (("train", 20), ("test", 30))}
    y = {s: torch.as_tensor(np.sign(rng.standard_normal(f.shape[0]))) for s, f in features.items()}
    network = _TwoByTwo(random_attention(torch.Generator().manual_seed(0), (2, 2), 6))
    data = PathData(network, features["train"], y["train"], {"test": (features["test"], y["test"])})
    local = temperature_grid.theory_grid(data, (10, 100), (0.1, 1.0), progress=False)
    remote = _with_client(two_workers, temperature_grid.theory_grid, data, (10, 100), (0.1, 1.0), progress=False)
    for field in ("U", "converged", "iterations", "warm_started"):  # determinism: the same tasks, here or remote
        assert np.array_equal(getattr(local, field), getattr(remote, field)), field
    for split in local.means:
        assert np.array_equal(local.means[split], remote.means[split])
        assert np.array_equal(local.accuracy[split], remote.accuracy[split])


@dataclasses.dataclass(frozen=True)
class _TwoByTwo(PathNetwork):
    """A network with 2 layers of 2 heads and named paths: what the theory grid needs of a network."""

    attention: object
    path_names: tuple = ("a", "b", "c", "d")


# ---------------------------------------------------------------------------------------------------------
# a chapter through the command line, on each engine


CHAPTER_BODY = """
import numpy as np, torch
from attnpaths.hmc import bands as ex
from attnpaths.hmc.networks import two_path_network
sets = ex.draw_data_sets(2, torch.Generator().manual_seed(seed), num_train=30, num_test=60)
band = ex.data_set_band(sets, two_path_network, (10, 100), 0.01, progress=False)
values = {"accuracy": band.accuracy.tolist(), "U": band.U.tolist(), "gp": band.gp["all"].tolist()}
"""


def _cli(root: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "attnpaths_book", *args], cwd=root, env=env, capture_output=True, text=True, timeout=600
    )


def _results(root: Path) -> dict:
    return json.loads((root / "_build" / "results" / "band.json").read_text())["values"]


def test_a_chapter_gives_the_same_results_on_an_existing_cluster_and_embedded(
    tiny_book, tmp_path_factory, process_environment
):
    """A scheduler and two workers started with `python -m dask scheduler|worker` on loopback; the chapter runs
    against --scheduler, on the embedded cluster and in-process, and its results files are identical."""
    root = tiny_book.root
    write_chapter(root, "band", "seed = 3", CHAPTER_BODY)
    write_toc(root, ["band"])
    scheduler_file = tmp_path_factory.mktemp("dask") / "scheduler.json"
    dask = [sys.executable, "-m", "dask"]
    processes = [
        subprocess.Popen(
            [
                *dask,
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                str(scheduler_file),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    ]
    try:
        deadline = time.monotonic() + 60
        while not scheduler_file.is_file():
            assert time.monotonic() < deadline, "the scheduler did not start"
            time.sleep(0.2)
        processes += [
            subprocess.Popen(
                [
                    *dask,
                    "worker",
                    "--scheduler-file",
                    str(scheduler_file),
                    "--nthreads",
                    "1",
                    "--no-dashboard",
                    "--memory-limit",
                    "0",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for _ in range(2)
        ]
        address = json.loads(scheduler_file.read_text())["address"]
        from distributed import Client

        with Client(address, timeout="30s") as client:
            client.wait_for_workers(2, timeout=60)
        external = _cli(root, process_environment, "run", "band", "--scheduler", address, "--force")
        assert external.returncode == 0, external.stderr
        assert f"existing Dask cluster at {address}, 2 worker process(es)" in external.stdout
        on_cluster = _results(root)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=30)
    embedded = _cli(root, process_environment, "run", "band", "--workers", "2", "--force")
    assert embedded.returncode == 0, embedded.stderr
    assert "embedded LocalCluster" in embedded.stdout
    assert _results(root) == on_cluster
    in_process = _cli(root, process_environment, "run", "band", "--workers", "1", "--force")
    assert in_process.returncode == 0 and "engine: in-process" in in_process.stdout
    assert _results(root) == on_cluster
    assert len(on_cluster["accuracy"]) == 2 and on_cluster["accuracy"][0] != on_cluster["accuracy"][1]


# ---------------------------------------------------------------------------------------------------------
# the benchmarks of the engine, at tiny size


def test_projected_makespan_schedules_longest_first():
    from attnpaths_book.benchmarks.sweep import projected_makespan

    assert projected_makespan([1, 1, 2], 2) == 2  # in the given order it would be 3
    assert projected_makespan([3, 3, 2, 2, 2], 2) == 7
    assert projected_makespan([5, 1, 1], 8) == 5
    assert projected_makespan([1.0] * 8, 1) == 8


def test_bench_sweep_records_identical_runs_and_speedups(tmp_path, process_environment):
    from attnpaths_book.benchmarks import sweep

    output = tmp_path / "sweep.json"
    assert sweep.main(["--num-sets", "2", "--workers", "1", "2", "--project", "1", "2", "--output", str(output)]) == 0
    report = json.loads(output.read_text())["report"]
    assert [r["workers"] for r in report["runs"]] == [1, 2]
    assert all(r["identical_to_first_run"] for r in report["runs"]) and report["num_tasks"] == 2
    assert report["speedup"]["1"] == 1.0 and report["speedup"]["2"] > 0  # exact on any CPU: t / t = 1
    assert report["projection"]["2"]["makespan_s"] == pytest.approx(max(report["runs"][0]["task_seconds"]), abs=1e-3)


def test_bench_book_runs_the_book_with_each_engine(tiny_book, process_environment):
    from attnpaths_book.benchmarks.book import run_book

    write_chapter(tiny_book.root, "alpha", "", "values = {'a': 1}")
    write_toc(tiny_book.root, ["alpha"])
    for workers in (1, 2):
        run = run_book(tiny_book.root, "smoke", workers)
        assert run["workers"] == workers and run["wall_s"] > 0
        assert run["chapters"]["alpha"]["engine"] == ("in-process" if workers == 1 else "embedded")
        assert run["chapters"]["alpha"]["workers"] == workers
        assert 0 < run["cpu_busy_fraction"] <= 1
        cells = run["chapters"]["alpha"]["slowest_cells"]
        assert cells and all(cell["seconds"] >= 0 for cell in cells), cells
        assert [c["seconds"] for c in cells] == sorted((c["seconds"] for c in cells), reverse=True)
        assert len(cells) == 3 and any(c["first_line"].startswith("profile = ") for c in cells), cells


def test_the_busy_fraction_is_the_share_of_cpu_time_not_idle():
    from attnpaths_book.benchmarks.book import busy_fraction, cpu_times

    assert busy_fraction((100.0, 400.0), (250.0, 600.0)) == 0.75  # exact on any CPU: 150 / 200, exact scalars
    assert busy_fraction(None, (1.0, 2.0)) is None and busy_fraction((1.0, 2.0), (1.0, 2.0)) is None
    now = cpu_times()
    assert now is None or 0 <= now[0] <= now[1]


def test_slowest_cells_are_read_from_papermills_durations(tmp_path):
    from attnpaths_book.benchmarks.book import slowest_cells

    def code(source, duration):
        return {
            "cell_type": "code",
            "source": source,
            "metadata": {} if duration is None else {"papermill": {"duration": duration}},
        }

    notebook = tmp_path / "chapter.ipynb"
    notebook.write_text(
        json.dumps(
            {
                "cells": [
                    code("# a comment first\nfast()", 0.5),
                    {"cell_type": "markdown", "source": "text", "metadata": {}},
                    code(["slow(\n", "  x)"], 12.25),
                    code("untimed()", None),
                    code("middle()", 3.0),
                    code("last()", 0.1),
                ]
            }
        )
    )
    assert slowest_cells(notebook, count=3) == [
        {"cell": 1, "first_line": "slow(", "seconds": 12.25},
        {"cell": 3, "first_line": "middle()", "seconds": 3.0},
        {"cell": 0, "first_line": "fast()", "seconds": 0.5},
    ]


def test_submitted_tasks_run_lazily_in_process_and_at_once_on_a_cluster(two_workers):
    calls = []

    def record_call(x):
        calls.append(x)
        return x * 2

    pending = engine.submit(record_call, description="lazy", x=4)
    assert calls == []  # in-process: nothing ran yet
    assert pending.result() == 8 and calls == [4] and pending.wall_s >= 0 and pending.cpu_s >= 0
    assert pending.result() == 8 and calls == [4]  # once
    remote = [engine.submit(_square_plus, description="squares", engine=two_workers, x=x, offset=1) for x in (2, 3)]
    assert [p.result() for p in remote] == [5, 10]
    failing = engine.submit(_fails_at_three, description="counting", engine=two_workers, x=3)
    with pytest.raises(engine.TaskFailed, match="'counting' failed; its arguments: x=3"):
        failing.result()


@pytest.mark.cross_machine
def test_the_prior_kernel_check_is_identical_on_a_cluster(two_workers):
    from attnpaths.checks import prior_kernel_at_widths

    generator = torch.Generator().manual_seed(1)
    attention = random_attention(generator, (2, 2), 3)
    x = random_inputs(generator, 5, 3, 4)
    local = prior_kernel_at_widths(attention, x, (3, 30), 7, num_samples=200)
    with engine.use_client(two_workers):
        remote = prior_kernel_at_widths(attention, x, (3, 30), 7, num_samples=200)
    assert list(local) == [3, 30]
    for width in local:  # determinism: the same tasks, here or remote
        assert torch.equal(local[width][0], remote[width][0]) and torch.equal(local[width][1], remote[width][1])
    assert not torch.equal(local[3][0], local[30][0])


def test_the_sweep_benchmark_notices_a_changed_bit():
    from attnpaths_book.benchmarks.sweep import same_member

    member = {"accuracy": np.array([0.5, 0.75]), "U": np.eye(2), "gp": {"all": 0.5}, "label_fraction": (0.1, 0.2)}
    assert same_member(member, dict(member))
    assert not same_member(member, dict(member, U=np.eye(2) + np.nextafter(0, 1)))
    assert not same_member(member, dict(member, gp={"all": np.nextafter(0.5, 1)}))


def test_experiment_generators_are_independent_streams_of_the_chapter_seed():
    from attnpaths.engine import experiment_generator

    first = experiment_generator(7, 1).random(4)
    assert np.array_equal(first, np.random.default_rng([7, 1]).random(4))  # determinism: the same stream
    assert not np.array_equal(first, experiment_generator(7, 2).random(4))
    with pytest.raises(ValueError, match="non-negative integers"):
        experiment_generator(7, -1)


def test_use_one_thread_limits_torch_and_every_pool_of_the_process():
    script = (
        "import torch, numpy\nfrom threadpoolctl import threadpool_info\n"
        "from attnpaths.engine import use_one_thread\nuse_one_thread()\nimport scipy.linalg\n"
        "print(torch.get_num_threads(), sorted({p['num_threads'] for p in threadpool_info()}))"
    )
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split("\n")[0] == "1 [1]"


def test_single_threaded_is_shared_by_tasks_running_at_once_in_threads():
    """Two bodies in two threads at once: both run with one thread, neither waits for the other (the settings are
    counted, not held), and the settings come back when the last one ends, not the first."""
    import threading

    from attnpaths.engine import single_threaded

    torch.set_num_threads(2)
    try:
        inside, release, seen = threading.Barrier(2, timeout=30), threading.Event(), []

        def body(last: bool):
            with single_threaded():
                inside.wait()  # both bodies inside at once: a lock held by the first would deadlock here
                if last:
                    release.wait(timeout=30)
                seen.append(torch.get_num_threads())
            if not last:
                seen.append(("after first", torch.get_num_threads()))
                release.set()

        workers = [threading.Thread(target=body, args=(last,)) for last in (False, True)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(timeout=60)
        assert seen == [1, ("after first", 1), 1]
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(1)


def test_an_engine_of_threads_runs_tasks_at_once_in_order_and_refuses_what_it_cannot_do():
    import threading

    barrier = threading.Barrier(2, timeout=30)

    def meet(i):
        barrier.wait()  # two tasks at once, or this times out
        return i * i

    with engine.start_engine(workers=2, threads=True) as found:
        assert found.mode == engine.THREADS and found.address is None
        assert "2 thread(s) of this process" in found.describe()
        assert engine.map_tasks(meet, [dict(i=i) for i in range(6)], description="meet", engine=found,
                                progress=False) == [0, 1, 4, 9, 16, 25]  # fmt: skip
        with pytest.raises(ValueError, match="threads engine runs tasks in this process only"):
            _ = found.environment
    with engine.start_engine(workers=1, threads=True) as found:
        assert found.mode == engine.IN_PROCESS
    with pytest.raises(ValueError, match="threads must be True or False"):
        with engine.start_engine(workers=2, threads="yes"):
            pass
    with pytest.raises(ValueError, match="threads must be False with a scheduler"):
        with engine.start_engine(scheduler="tcp://127.0.0.1:1", threads=True):
            pass


def test_single_threaded_nests():
    from attnpaths.engine import single_threaded

    threads = torch.get_num_threads()
    with single_threaded():
        with single_threaded():  # a sweep run in-process inside a task
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == threads


# ---------------------------------------------------------------------------------------------------------
# an engine of threads holds every pool of the process to one thread

IN_THIS_PROCESS = engine.Engine(engine.IN_PROCESS, None, 1, None)


def _pool_sizes() -> dict:
    """torch's thread count and the size of every BLAS and OpenMP pool of this process, as read in this thread."""
    from threadpoolctl import threadpool_info

    return {"torch": torch.get_num_threads(), **{p["filepath"]: p["num_threads"] for p in threadpool_info()}}


def test_every_pool_has_one_thread_in_every_task_of_an_engine_of_threads():
    """With the process's pools at two threads (a notebook on a machine of two cores or more) and an in-process
    sweep run first (its task sets the one-thread limits in the calling thread), the tasks of an engine of threads,
    two at once in the pool's two threads, see one thread in torch and in every BLAS (numpy's and scipy's OpenBLAS)
    and OpenMP pool; afterwards the pools have their sizes back."""
    import scipy.linalg.blas  # noqa: F401  (scipy's OpenBLAS, loaded on first import: one of the pools checked)
    from threadpoolctl import threadpool_limits

    if (os.cpu_count() or 1) < 2:
        pytest.skip("OpenBLAS caps its pool at the number of CPUs: one CPU cannot show two threads")
    barrier = threading.Barrier(2, timeout=30)

    def sizes(i):
        if i < 2:
            barrier.wait()  # the first two tasks at once: one in each thread of the pool
        return _pool_sizes()

    with threadpool_limits(limits=2):
        before = _pool_sizes()
        here = engine.map_tasks(sizes, [dict(i=9)], description="in-process", engine=IN_THIS_PROCESS, progress=False)
        with engine.start_engine(workers=2, threads=True) as threads:
            seen = engine.map_tasks(sizes, [dict(i=i) for i in range(4)], description="pools", engine=threads,
                                    progress=False)  # fmt: skip
        after = _pool_sizes()
    assert any("openblas" in name for name in before) and max(before.values()) == 2
    for found in [*here, *seen]:
        assert set(found) == set(before) and set(found.values()) == {1}, found
    assert after == before


class _WideChunks:
    """Chunk ``k``: ``(features [300, 231, 4], y [300])`` of standard normal numbers drawn from ``[seed, k]`` (the
    features of the paper's HMC task have ``D = 231 * 4 = 924``)."""

    def __init__(self, seed: int):
        self.seed = seed

    def __call__(self, k):
        rng = np.random.default_rng([self.seed, k])
        return rng.standard_normal((300, 231, 4)), rng.standard_normal(300)


def test_an_engine_of_threads_sums_a_wide_gram_matrix_to_the_bits_of_the_in_process_run():
    """At ``D = 924`` OpenBLAS on two threads sums ``F^T F`` (``dsyrk``) to other bits than on one (checked here
    first: at the small ``D`` of the other tests the bits are the same either way); with the process's pools at two
    threads, after an in-process run, an engine of threads still gives the in-process run's statistics bit for bit."""
    from threadpoolctl import threadpool_limits

    from attnpaths.gram import GramStatistics
    from attnpaths.streaming import gram_statistics

    chunks = _WideChunks(seed=4)
    arguments = dict(make_chunk=chunks, num_chunks=4, block_size=300, progress=False)
    with threadpool_limits(limits=2):
        here = gram_statistics(engine=IN_THIS_PROCESS, **arguments)
        two_threads = GramStatistics(300)
        for k in range(4):
            two_threads.update(*chunks(k))
        if np.array_equal(two_threads.gram, here.gram):
            pytest.skip("this machine's OpenBLAS sums F^T F of D = 924 to the same bits on two threads as on one")
        with engine.start_engine(workers=2, threads=True) as threads:
            there = gram_statistics(engine=threads, chunks_per_round=4, **arguments)
    assert here.dimension == 924
    # determinism: the same blocks summed on one thread each, in the same order
    assert np.array_equal(there.gram, here.gram) and np.array_equal(there.features_targets, here.features_targets)
    assert there.targets_norm2 == here.targets_norm2 and there.num_examples == here.num_examples == 1200


def test_single_threaded_blas_only_limits_the_blas_pools_and_leaves_torch_alone():
    from threadpoolctl import threadpool_info

    from attnpaths.engine import single_threaded

    def blas_threads():
        return sorted({pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"})

    before, threads = blas_threads(), torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with single_threaded(blas_only=True):
            assert blas_threads() == [1]
            assert torch.get_num_threads() == 2  # torch keeps its pool: only BLAS/LAPACK calls are made serial
        assert blas_threads() == before
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(threads)
