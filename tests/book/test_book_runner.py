"""The runner on tiny throw-away books: caching, failures, interruption, kills, the build lock, timings (each
execution starts a kernel, so the books are small and executed books are copied rather than executed again)."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from book_helpers import write_chapter, write_stand_in_packages, write_toc

from attnpaths_book import runner
from attnpaths_book.cli import main
from attnpaths_book.executor import ChapterFailed
from attnpaths_book.layout import BookLayout
from attnpaths_book.results import read_results

ALLOCATED_MIB = 400


@pytest.fixture(scope="module")
def executed_book(tmp_path_factory):
    """A two-chapter book executed once (smoke profile); ``alpha`` briefly holds ALLOCATED_MIB of memory."""
    root = tmp_path_factory.mktemp("executed_book")
    (root / "_config.yml").write_text("title: tiny\n")
    write_stand_in_packages(root)
    write_chapter(
        root,
        "alpha",
        "n = 3",
        f"""
        import numpy as np
        block = np.ones({ALLOCATED_MIB} * 2**20 // 8)
        values = {{"n": n, "total": float(block.sum() / block.size) * n}}
        del block
        """,
    )
    write_chapter(
        root, "beta", "m = 2", "values = {'m': m}\nprint('beta ran with', m)", profiles={"smoke": {}, "paper": {"m": 5}}
    )
    write_toc(root, ["alpha", "beta"])
    layout = BookLayout(root)
    outcomes = runner.run_book(layout, "smoke")
    assert [o.executed for o in outcomes] == [True, True]
    return layout


@pytest.fixture
def book(executed_book, tmp_path):
    """A private copy of the executed book (the cache stays valid: keys hold no absolute paths)."""
    shutil.copytree(executed_book.root, tmp_path / "book_copy")
    return BookLayout(tmp_path / "book_copy")


def executed(outcomes):
    return [o.chapter for o in outcomes if o.executed]


def _default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_cli(root, *args, **kwargs):
    """Start ``python -m attnpaths_book ARGS`` in ``root`` in its own process group, with SIGINT at its default
    disposition: a background job of a shell (``pytest &``, ``nohup``) inherits SIGINT ignored, and a Ctrl-C
    sent by a test would be lost."""
    return subprocess.Popen(
        [sys.executable, "-m", "attnpaths_book", *args],
        cwd=root,
        text=True,
        start_new_session=True,
        preexec_fn=_default_sigint,
        **kwargs,
    )


def wait_for(condition, process, timeout_s=120):
    """Poll ``condition()`` until it holds; fails if ``process`` ends first or the time runs out."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert process.poll() is None, f"the process ended with status {process.returncode} first"
        assert time.monotonic() < deadline, f"waited {timeout_s} s"
        time.sleep(0.2)


def descendants(pid):
    """PIDs of the living descendants of ``pid`` (Linux /proc)."""
    try:
        children = [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except FileNotFoundError:
        return []
    return children + [d for c in children for d in descendants(c)]


def alive(pid):
    """Whether ``pid`` is a living process (a zombie counts as ended)."""
    try:
        return not Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return False


def kill_all(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def snapshot(book, chapter):
    """The bytes of a chapter's results file, executed notebook and the timings file."""
    paths = (book.results_file(chapter), book.executed_notebook(f"book/{chapter}"), book.timings)
    return {path: path.read_bytes() for path in paths}


def test_results_notebooks_and_parameter_record(executed_book):
    assert read_results("alpha", executed_book.results_dir)["values"] == {"n": 3, "total": 3.0}
    notebook = nbformat.read(executed_book.executed_notebook("book/beta"), as_version=4)
    assert notebook.metadata["papermill"]["parameters"] == {"m": 2, "profile": "smoke", "results_dir": "_build/results"}
    outputs = [o for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert any("beta ran with 2" in o.get("text", "") for o in outputs)


def test_timings_record_wall_time_and_peak_memory(executed_book):
    timings = runner.read_timings(executed_book.results_dir)["smoke"]
    assert set(timings) == {"alpha", "beta"}
    assert all(entry["wall_s"] > 0 for entry in timings.values())
    assert timings["alpha"]["peak_rss_mib"] >= ALLOCATED_MIB
    assert timings["beta"]["peak_rss_mib"] < timings["alpha"]["peak_rss_mib"]


def test_second_run_executes_nothing(book):
    assert executed(runner.run_book(book, "smoke")) == []
    assert runner.stale_chapters(book, "smoke") == []


def test_changing_one_parameter_reexecutes_only_that_chapter(book):
    source = book.root / "book" / "beta.md"
    source.write_text(
        source.read_text().replace("paper: {m: 5}", "paper: {m: 7}").replace("smoke: {}", "smoke: {m: 4}")
    )
    assert runner.stale_chapters(book, "smoke") == ["beta"]
    assert executed(runner.run_book(book, "smoke")) == ["beta"]
    assert read_results("beta", book.results_dir)["values"] == {"m": 4}


def test_package_change_makes_stale_the_chapters_that_execute_it(book):
    (book.package_dir / "new_module.py").write_text("VALUE = 1\n")  # imported by no chapter
    assert runner.stale_chapters(book, "smoke") == []
    (book.package_dir / "__init__.py").write_text(
        "VALUE = 2\n"
    )  # every chapter imports the companion, which imports it
    assert runner.stale_chapters(book, "smoke") == ["alpha", "beta"]


def test_run_one_chapter_with_an_override(book, capsys, monkeypatch):
    monkeypatch.chdir(book.root)
    assert main(["run", "beta", "--set", "m=11", "--workers", "1"]) == 0
    assert "beta: done in" in capsys.readouterr().out
    assert read_results("beta", book.results_dir)["values"] == {"m": 11}
    notebook = nbformat.read(book.executed_notebook("book/beta"), as_version=4)
    assert notebook.metadata["papermill"]["parameters"]["m"] == 11
    # runs with overrides are not a profile's timing, and the profile run redoes the chapter
    assert runner.read_timings(book.results_dir)["smoke"]["beta"]["peak_rss_mib"] > 0
    assert runner.stale_chapters(book, "smoke") == ["beta"]


def test_bad_override_is_refused_before_anything_runs(book, capsys, monkeypatch):
    monkeypatch.chdir(book.root)
    before = book.executed_notebook("book/beta").stat().st_mtime_ns
    assert main(["run", "beta", "--set", "m=two"]) == 2
    error = capsys.readouterr().err
    assert "m='two' (str)" in error and "m: int = 2" in error and "parameters of chapter 'beta'" in error
    assert main(["run", "beta", "--set", "k=1"]) == 2
    assert "unknown parameter 'k'" in capsys.readouterr().err
    assert book.executed_notebook("book/beta").stat().st_mtime_ns == before
    assert not any(book.build_dir.glob(".run-*"))


def test_unknown_chapter_is_refused(book, capsys, monkeypatch):
    monkeypatch.chdir(book.root)
    assert main(["run", "gamma"]) == 2
    assert "alpha, beta" in capsys.readouterr().err


def test_failing_chapter_names_itself_shows_the_error_and_leaves_no_result(book):
    write_chapter(book.root, "gamma", "k = 1", "values = {'k': k}\nraise ValueError('k is too small: ' + str(k))")
    write_toc(book.root, ["alpha", "beta", "gamma"])
    with pytest.raises(ChapterFailed) as info:
        runner.run_book(book, "smoke")
    message = str(info.value)
    assert info.value.chapter == "gamma"
    assert (
        "chapter 'gamma' (book/gamma.md) with the parameters k=1, profile='smoke', results_dir='_build/results' "
        "failed in the cell ["
    ) in message
    assert info.value.parameters == {"k": 1, "profile": "smoke", "results_dir": "_build/results"}
    assert "Traceback (most recent call last)" in message and "Cell In[" in message  # the kernel's traceback
    assert "raise ValueError('k is too small: ' + str(k))" in message  # the failing cell's code
    assert "ValueError: k is too small: 1" in message and message.count("k is too small: 1") == 1
    assert "# Parameters" not in message  # the failing cell, not another one
    assert not (book.results_dir / "gamma.json").exists()
    assert not book.executed_notebook("book/gamma").exists()
    assert (book.failed_dir / "gamma.ipynb").is_file()
    assert not any(book.build_dir.glob(".run-*"))
    # fixed, the run resumes: finished chapters are not executed again
    write_chapter(book.root, "gamma", "k = 1", "values = {'k': k}")
    assert executed(runner.run_book(book, "smoke")) == ["gamma"]


def test_chapter_without_results_file_fails_and_keeps_the_previous_one(book):
    before = snapshot(book, "beta")
    source = book.root / "book" / "beta.md"
    source.write_text(source.read_text().replace("recorder.write()", "pass"))
    with pytest.raises(ChapterFailed, match="wrote no results file _build/results/beta.json") as info:
        runner.run_book(book, "smoke")
    assert "The previous results file _build/results/beta.json is unchanged." in str(info.value)
    assert snapshot(book, "beta") == before
    assert not any(book.build_dir.glob(".run-*"))


def test_a_chapter_kernel_runs_with_one_thread_in_every_pool(book):
    """The kernel's numbers do not depend on the machine's cores: torch and the BLAS pools have one thread."""
    write_chapter(
        book.root,
        "beta",
        "m = 2",
        """
        import torch
        from threadpoolctl import threadpool_info
        values = {'torch': torch.get_num_threads(), 'pools': sorted({p['num_threads'] for p in threadpool_info()})}
        """,
    )
    runner.run_chapter(book, "beta", "smoke", force=True)
    assert read_results("beta", book.results_dir)["values"] == {"torch": 1, "pools": [1]}


def test_results_with_other_parameters_than_the_run_are_refused(book):
    """A chapter that writes its results with a hand-kept parameter list missing one parameter fails, naming it;
    the last good results stay."""
    before = snapshot(book, "beta")
    write_chapter(
        book.root,
        "beta",
        "m = 2\nk = 3",
        """
        from attnpaths_book.results import write_results
        write_results('beta', profile, {'m': m}, {'m': m}, results_dir)
        values = {'m': m}
        """,
        profiles={"smoke": {}, "paper": {"m": 5}},
    )
    source = book.root / "book" / "beta.md"
    source.write_text(source.read_text().replace("recorder.write()", "pass"))
    with pytest.raises(
        ChapterFailed,
        match=r"recorded other parameters than it ran with \(profile 'smoke'; "
        r"differing: k\)",
    ):
        runner.run_chapter(book, "beta", "smoke", force=True)
    assert snapshot(book, "beta") == before


def test_failed_run_keeps_the_previous_results_and_names_its_parameters(book):
    """A chapter that wrote its results file and then failed: its new results are not taken, the last good
    ones stay, and the message names the chapter, its parameters and the traceback."""
    before = snapshot(book, "beta")
    write_chapter(
        book.root,
        "beta",
        "m = 2",
        """
        from attnpaths_book.results import write_results
        write_results('beta', profile, {}, {'m': -1}, results_dir)
        values = {'m': m}
        assert m > 2, f'm must exceed 2, got {m}'
        """,
        profiles={"smoke": {}, "paper": {"m": 5}},
    )
    with pytest.raises(ChapterFailed) as info:
        runner.run_chapter(book, "beta", "smoke", {"m": 2}, force=True)
    message = str(info.value)
    assert message.startswith(
        "chapter 'beta' (book/beta.md) with the parameters m=2, profile='smoke', "
        "results_dir='_build/results' failed in the cell ["
    )
    assert "assert m > 2, f'm must exceed 2, got {m}'" in message  # the failing cell
    assert "AssertionError: m must exceed 2, got 2" in message
    assert "The previous results file _build/results/beta.json is unchanged." in message
    assert snapshot(book, "beta") == before
    assert read_results("beta", book.results_dir)["values"] == {"m": 2}
    assert not any(book.build_dir.glob(".run-*"))


def test_killed_run_keeps_the_previous_results_and_leaves_nothing_running(book):
    """SIGKILL of the command while its chapter runs, after the chapter has written its new results file:
    the last good results, executed notebook and timings stay byte for byte, the worker and the kernel end,
    and the next run removes the killed run's working folder."""
    before = snapshot(book, "beta")
    reached = book.root / "reached"
    write_chapter(
        book.root,
        "beta",
        "m = 2",
        f"""
        import pathlib, time
        from attnpaths_book.results import write_results
        write_results('beta', profile, {{}}, {{'m': -1}}, results_dir)
        pathlib.Path({str(reached)!r}).write_text('written')
        time.sleep(120)
        values = {{'m': m}}
        """,
        profiles={"smoke": {}, "paper": {"m": 5}},
    )
    process = start_cli(book.root, "run", "beta", "--force", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    children = []
    try:
        wait_for(reached.is_file, process)
        children = descendants(process.pid)  # the worker and its kernel
        assert len(children) >= 2, children
        process.kill()
        process.wait(timeout=30)
        assert snapshot(book, "beta") == before
        assert read_results("beta", book.results_dir)["values"] == {"m": 2}
        deadline = time.monotonic() + 30
        while any(alive(pid) for pid in children) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(alive(pid) for pid in children), "the killed run's worker or kernel is still running"
    finally:
        kill_all([process.pid, *children])
    assert any(book.build_dir.glob(".run-beta-*"))  # the killed run could not clean up
    assert executed([runner.run_chapter(book, "alpha", "smoke")]) == []
    assert not any(book.build_dir.glob(".run-*"))


@pytest.mark.parametrize("workers", ["1", "2"])
def test_interrupted_run_resumes_without_redoing_finished_chapters(book, workers):
    """Ctrl-C during a chapter: finished chapters are kept, the interrupted one leaves nothing, and the next run
    executes only what is left. One worker runs the chapters one at a time (beta never starts); two run slow
    and beta at once (beta finishes before the interrupt and is kept)."""
    started = book.root / "slow-started"
    write_chapter(
        book.root, "slow", "", f"import time\nopen({str(started)!r}, 'w').close()\nvalues = {{}}\ntime.sleep(120)"
    )
    write_toc(book.root, ["alpha", "slow", "beta"])
    source = book.root / "book" / "beta.md"
    source.write_text(source.read_text().replace("smoke: {}", "smoke: {m: 3}"))  # beta is stale too
    # as in a background job of a shell (`pytest &`, nohup), where SIGINT is inherited as ignored
    default = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        out_file, err_file = open(book.root / "book.out", "w"), open(book.root / "book.err", "w")
        process = start_cli(book.root, "book", "--no-html", "--workers", workers, stdout=out_file, stderr=err_file)
    finally:
        signal.signal(signal.SIGINT, default)
    try:
        wait_for(started.is_file, process)  # slow's cell is running
        if workers == "2":  # beta's run has ended (notebook, timing, progress line)
            wait_for(lambda: "beta: done" in (book.root / "book.out").read_text(), process)
        os.killpg(process.pid, signal.SIGINT)  # Ctrl-C: the whole process group
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        out_file.close()
        err_file.close()
    out, err = (book.root / "book.out").read_text(), (book.root / "book.err").read_text()
    assert process.returncode == 130, (out, err)
    assert "alpha: up to date" in out and "slow: executing" in out
    assert ("beta: done" in out) == (workers == "2") and ("beta: executing" in out) == (workers == "2")
    assert "interrupted" in err
    assert not (book.results_dir / "slow.json").exists()
    assert not book.executed_notebook("book/slow").exists()
    assert not any(book.build_dir.glob(".run-*"))
    write_chapter(book.root, "slow", "", "values = {}")
    assert executed(runner.run_book(book, "smoke")) == (["slow", "beta"] if workers == "1" else ["slow"])
    assert json.loads((book.results_dir / "beta.json").read_text())["values"] == {"m": 3}


def test_second_run_waits_for_the_first_and_names_it(book):
    """Two `run --force` of one chapter at once: the second waits, naming the lock and the first's PID, and
    the executions do not overlap."""
    log, release = book.root / "executions.log", book.root / "release"
    # each execution holds the lock until the test creates `release` (an event, not a time window); the second
    # finds it there when it starts, so it does not wait
    write_chapter(
        book.root,
        "beta",
        "m = 2",
        f"""
        import os, time
        with open({str(log)!r}, 'a') as handle:
            handle.write('start\\n')
        while not os.path.exists({str(release)!r}):
            time.sleep(0.05)
        with open({str(log)!r}, 'a') as handle:
            handle.write('end\\n')
        values = {{'m': m}}
        """,
        profiles={"smoke": {}, "paper": {"m": 5}},
    )
    first_out, second_out = book.root / "first.out", book.root / "second.out"
    with open(first_out, "w") as out1, open(second_out, "w") as out2:
        first = start_cli(book.root, "run", "beta", "--force", "--workers", "1", stdout=out1, stderr=subprocess.STDOUT)
        second = None
        try:
            wait_for(lambda: log.is_file(), first)  # the first holds the lock and executes
            second = start_cli(
                book.root, "run", "beta", "--force", "--workers", "1", stdout=out2, stderr=subprocess.STDOUT
            )
            wait_for(lambda: "waiting for the build lock" in second_out.read_text(), second)  # the second waits
            release.touch()
            assert first.wait(timeout=120) == 0, first_out.read_text()
            assert second.wait(timeout=120) == 0, second_out.read_text()
        finally:
            kill_all([p.pid for p in (first, second) if p is not None and p.poll() is None])
    waited = second_out.read_text()
    assert (
        f"waiting for the build lock _build/.lock of this checkout, held by PID {first.pid} "
        f"({Path(sys.executable).name} -m attnpaths_book run beta --force --workers 1, since "
    ) in waited, waited
    assert "got the build lock _build/.lock after waiting" in waited
    assert log.read_text().split() == ["start", "end", "start", "end"]  # one after the other
    assert book.lock.read_text() == ""  # released: no holder recorded


def test_lock_of_a_killed_holder_does_not_block(book):
    """A run waiting for the lock goes on as soon as the process holding it is killed."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"""
import time
from pathlib import Path
from attnpaths_book.layout import BookLayout, book_lock
with book_lock(BookLayout(Path({str(book.root)!r}))):
    print('held', flush=True)
    time.sleep(300)
""",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    waiting_out = book.root / "waiting.out"
    waiting = None
    try:
        assert holder.stdout.readline() == "held\n"
        with open(waiting_out, "w") as out:
            waiting = start_cli(book.root, "run", "beta", stdout=out, stderr=subprocess.STDOUT)
        named = f"held by PID {holder.pid} ({Path(sys.executable).name} -c "
        wait_for(lambda: named in waiting_out.read_text(), waiting, timeout_s=60)
        holder.kill()
        holder.wait()
        assert waiting.wait(timeout=60) == 0, waiting_out.read_text()
    finally:
        kill_all([p.pid for p in (holder, waiting) if p is not None and p.poll() is None])
    out = waiting_out.read_text()
    assert "got the build lock _build/.lock after waiting" in out and "beta: up to date" in out, out


class _Listed:
    """A stand-in chapter for the scheduler: a name and whether it is a report chapter."""

    def __init__(self, name, report=False):
        self.name, self.report = name, report


def _schedule(peaks, budget, reports=()):
    """Run stand-in chapters through the concurrent scheduler, two at a time; returns each one's (start, end)
    in a shared sequence of events, so overlaps are read from the order, not from clocks."""
    import threading

    names = list(peaks)
    chapters = [_Listed(name, name in reports) for name in names]
    counter, lock, spans = iter(range(1000)), threading.Lock(), {}

    def run(i):
        with lock:
            start = next(counter)
        time.sleep(0.05)
        with lock:
            spans[names[i]] = (start, next(counter))
        return names[i]

    outcomes = runner._run_concurrently(chapters, run, 2, peaks=[peaks[n] for n in names], budget=budget)
    assert outcomes == names
    return spans


def overlap(a, b):
    return a[0] < b[1] and b[0] < a[1]


def test_a_chapter_starts_only_when_its_expected_peak_fits_beside_the_running_ones():
    """Two chapters of 6 GiB never run together within 8 GiB; a small one that fits starts beside the first in
    the meantime, and a chapter larger than the whole budget runs alone."""
    spans = _schedule({"big": 6000.0, "also_big": 6000.0, "small": 1000.0, "huge": 9000.0}, budget=8000.0)
    assert not overlap(spans["big"], spans["also_big"])
    assert overlap(spans["big"], spans["small"])  # skipped ahead of also_big, which did not fit
    assert spans["small"][0] < spans["also_big"][0]
    assert not any(overlap(spans["huge"], spans[name]) for name in ("big", "also_big", "small"))
    # without a memory limit, two at a time in order
    spans = _schedule({"big": 6000.0, "also_big": 6000.0, "small": 1000.0}, budget=float("inf"))
    assert overlap(spans["big"], spans["also_big"])


def test_a_report_chapter_waits_for_every_chapter_before_it_whatever_fits():
    spans = _schedule({"a": 10.0, "b": 10.0, "report": 10.0}, budget=float("inf"), reports=("report",))
    assert spans["report"][0] > max(spans["a"][1], spans["b"][1])


def test_expected_peaks_come_from_this_machine_first_then_from_the_paper_records(executed_book, tmp_path):
    layout = BookLayout(tmp_path / "book_copy")
    shutil.copytree(executed_book.root, layout.root)
    records = layout.root / "tests" / "paper_records"
    records.mkdir(parents=True)
    (records / "alpha.json").write_text(json.dumps({"execution": {"peak_rss_mib": 5000.0}}))
    (records / "gamma.json").write_text(json.dumps({"execution": {"peak_rss_mib": 700.0}}))
    (records / "damaged.json").write_text("{")
    (records / "negative.json").write_text(json.dumps({"execution": {"peak_rss_mib": -5.0}}))
    (records / "not_a_number.json").write_text('{"execution": {"peak_rss_mib": NaN}}')
    measured = runner.store.read_timings(layout.results_dir)["smoke"]
    assert runner.expected_peaks(layout, "smoke") == {name: t["peak_rss_mib"] for name, t in measured.items()}
    timings = layout.results_dir / "_timings.json"
    data = json.loads(timings.read_text())
    data["paper"] = {"alpha": dict(measured["alpha"], peak_rss_mib=1234.0)}
    timings.write_text(json.dumps(data))
    assert runner.expected_peaks(layout, "paper") == {"alpha": 1234.0, "gamma": 700.0}
