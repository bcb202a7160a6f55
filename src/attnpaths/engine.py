"""Where the independent tasks of a sweep run: in this process, or on a Dask cluster.

A sweep (the data sets of a band, the sampled widths of a chapter, the widths of a theory grid, ...) is a
list of tasks, each a call ``function(**arguments)``. :func:`map_tasks`
runs them and returns their results in task order. Where they run is chosen outside the code that calls
it, by the environment variable :data:`SCHEDULER_ENV`:

- unset, empty or ``"in-process"``: one after the other in the calling process (a notebook opened by hand,
  ``python -m attnpaths_book ... --workers 1``);
- a Dask scheduler address (``tcp://host:port``): as Dask tasks of a ``dask.distributed.Client`` connected
  to it (``python -m attnpaths_book book`` starts an embedded ``LocalCluster`` and sets the variable for the
  chapters it executes; ``--scheduler ADDRESS`` names an existing cluster instead, see :func:`start_engine`).

The numbers do not depend on that choice, bit for bit: a task's randomness comes from the chapter's seed and
the task's identity (:func:`task_seed`), never from the order or the place in which it runs, and every task
runs with one thread in every thread pool (:func:`single_threaded`), so that reductions add in the same order
in a worker process and in the calling process. A task that raises ends the sweep with :class:`TaskFailed`,
which names the sweep, the task and its arguments and carries the original traceback; no partial list of
results is ever returned. A worker that dies mid-task is Dask's to handle: the scheduler runs the task again
on another worker (and the result is the same, since the task is a pure function of its arguments).
"""

from __future__ import annotations

import contextvars
import os
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import threadpoolctl
import torch
from threadpoolctl import ThreadpoolController, threadpool_limits
from tqdm import tqdm

from ._optional import require
from ._validation import positive_int

SCHEDULER_ENV = "ATTNPATHS_SCHEDULER"
"""Environment variable naming where tasks run (a Dask scheduler address, or ``"in-process"``)."""

IN_PROCESS = "in-process"
THREADS = "threads"
"""The mode of an :class:`Engine` that runs tasks in a pool of threads of the calling process
(``start_engine(workers=k, threads=True)``, passed as the ``client`` of :func:`map_tasks` or the ``engine`` of a
streamed computation): no process to start and nothing to serialise, for tasks whose work releases the
interpreter lock (torch and numpy kernels), e.g. the chunks of :func:`attnpaths.streaming.gram_statistics`."""


class TaskFailed(RuntimeError):
    """A task of a sweep raised. ``sweep``: the sweep's description; ``index``: the task's position;
    ``arguments``: a short description of its arguments; ``remote_traceback``: the original traceback (as
    text; it happened in a worker process when the sweep ran on a cluster). The original exception is the
    ``__cause__``."""

    def __init__(self, sweep: str, index: int, total: int, arguments: str, remote_traceback: str):
        self.sweep, self.index, self.arguments, self.remote_traceback = sweep, index, arguments, remote_traceback
        super().__init__(
            f"task {index + 1} of {total} of the sweep {sweep!r} failed; its arguments: {arguments}\n"
            f"original traceback:\n{remote_traceback.rstrip()}"
        )


def _entropy(seed, identity) -> list[int]:
    entropy = [seed, *identity]
    for value in entropy:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"seed and identity must be non-negative integers, got {tuple(entropy)!r}")
    return [int(v) for v in entropy]


def task_seed(seed: int, *identity: int) -> int:
    """A 32-bit seed for one task, from the sweep's ``seed`` and the task's identity (e.g. network index and
    width): ``SeedSequence([seed, *identity])``. Adding or removing a task changes no other task's stream.

    Raises ``ValueError`` unless ``seed`` and every entry of ``identity`` are non-negative integers.
    """
    return int(np.random.SeedSequence(_entropy(seed, identity)).generate_state(1)[0])


def task_generator(seed: int, *identity: int) -> torch.Generator:
    """A CPU ``torch.Generator`` seeded with :func:`task_seed` ``(seed, *identity)``."""
    return torch.Generator().manual_seed(task_seed(seed, *identity))


def experiment_generator(seed: int, *identity: int) -> np.random.Generator:
    """A numpy ``Generator`` for one experiment of a chapter, ``default_rng([seed, *identity])``: independent
    streams for experiments that share the chapter's ``seed``, whatever order or place they run in.

    Raises ``ValueError`` unless ``seed`` and every entry of ``identity`` are non-negative integers.
    """
    return np.random.default_rng(_entropy(seed, identity))


# Counted, not held: tasks running at once in threads of one process (an engine of mode "threads") share the
# one-thread settings, which the first task in sets and the last task out restores; a task that runs a sweep
# in-process nests single_threaded() in its own thread and only adds a count. An engine of threads holds a count
# in the calling thread for the whole sweep, so that its tasks never set or restore the process's settings.
_thread_settings = threading.Lock()
_one_thread_users = 0
_restore_one_thread = None
_openmp_pools = None  # threadpoolctl's controller of the OpenMP libraries loaded when the settings were made


def _release_openblas() -> None:
    """Let the next thread that sets a BLAS limit take effect.

    Recent threadpoolctl releases let one thread only change a process-wide (pthreads) OpenBLAS pool: the first
    to set a limit, until it leaves a ``with threadpool_limits(...)`` block; a limit set by any other thread is
    silently ignored. A thread that sets a limit without such a block keeps that control for its lifetime: after
    one in-process sweep, the tasks of an engine of threads would run OpenBLAS on every core and sum a Gram matrix
    of ``D = 924`` (``attnpaths.gram.GramStatistics``) to other bits. The settings made here are the process's:
    the thread that makes or restores them takes the control first, and leaves it to nobody."""
    controller = getattr(threadpoolctl, "OpenBLASController", None)
    release = getattr(controller, "clear_controlling_thread", None)  # absent from earlier threadpoolctl releases
    if release is not None:
        release(force=True)


def _one_thread_in_process():
    """Set torch and every BLAS pool of the process to one thread; returns the function that restores them.

    scipy's own OpenBLAS is loaded on the first import of ``scipy.linalg``; a limit reaches only the libraries
    loaded when it is set, so it is loaded first."""
    global _openmp_pools
    import scipy.linalg.blas  # noqa: F401  (loads scipy's BLAS, so that the limit below reaches it)

    pools = ThreadpoolController()
    _release_openblas()
    limits = pools.select(user_api="blas").limit(limits=1)  # restores the BLAS pools only, in any thread
    _release_openblas()
    _openmp_pools = pools.select(user_api="openmp")
    previous = torch.get_num_threads()  # last: a failure above leaves torch's setting as it was
    torch.set_num_threads(1)

    def restore():
        _release_openblas()
        limits.restore_original_limits()
        _release_openblas()
        torch.set_num_threads(previous)

    return restore


@contextmanager
def single_threaded(*, blas_only: bool = False):
    """Run the body with one thread in torch and in every BLAS/OpenMP pool, restoring the settings after the
    last body running in this process ends (bodies may run at once in several threads).

    Floating-point sums depend on how a reduction is split between threads; with one thread everywhere a
    task gives the same bits in any process, and in any thread. The BLAS pools and torch's thread count are the
    process's, set by the first body in and restored by the last one out; an OpenMP pool's size is each thread's
    own (a thread the process starts gets the default), so every body sets its own thread's, and restores it.

    With ``blas_only``, only the BLAS and LAPACK pools get one thread, restored when the body ends: for many
    independent small factorisations or products, which splitting over threads slows down (with
    ``OMP_NUM_THREADS=2`` on a loaded 2-core machine OpenBLAS's threaded ``potrf``/``gesv`` were measured 20-60
    times slower than on one thread)."""
    if blas_only:
        with threadpool_limits(limits=1, user_api="blas"):
            yield
        return
    global _one_thread_users, _restore_one_thread
    with _thread_settings:
        if _one_thread_users == 0:
            _restore_one_thread = _one_thread_in_process()
        _one_thread_users += 1
        openmp = _openmp_pools.limit(limits=1)
    try:
        yield
    finally:
        with _thread_settings:
            openmp.restore_original_limits()
            _one_thread_users -= 1
            if _one_thread_users == 0:
                _restore_one_thread()
                _restore_one_thread = None


THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
"""Environment variables that fix the size of the OpenMP and BLAS thread pools a library creates when loaded."""


def use_one_thread() -> None:
    """Use one thread in torch and in every BLAS/OpenMP pool for the rest of the process, pools loaded later
    included (through :data:`THREAD_VARIABLES`): the settings of :func:`single_threaded`, never restored. A
    chapter calls it first, so that its numbers are the same bit for bit in the book's runs, on any number of
    workers, and in a reader's notebook."""
    for name in THREAD_VARIABLES:
        os.environ[name] = "1"
    with _thread_settings:
        _one_thread_in_process()  # its restoring function is dropped: the settings stay
        _openmp_pools.limit(limits=1)


def run_task(function: Callable, arguments: Mapping):
    """``function(**arguments)`` with one thread (:func:`single_threaded`): the body of every task."""
    with single_threaded():
        return function(**arguments)


def scheduler_address() -> str | None:
    """The scheduler address named by :data:`SCHEDULER_ENV`, or ``None`` for in-process execution."""
    value = os.environ.get(SCHEDULER_ENV, "").strip()
    return None if value in ("", IN_PROCESS) else value


_clients: dict = {}
CONNECT_TIMEOUT = "20s"
"""How long :func:`client_for` waits for a scheduler to answer."""
_chosen_client: contextvars.ContextVar = contextvars.ContextVar("attnpaths_client", default=None)


@contextmanager
def use_client(client):
    """Send the tasks of every sweep in the body to ``client`` (a ``dask.distributed.Client``), whatever
    :data:`SCHEDULER_ENV` says: ``with use_client(Client(cluster)): data_set_band(...)``."""
    token = _chosen_client.set(client)
    try:
        yield client
    finally:
        _chosen_client.reset(token)


def client_for(address: str):
    """A ``dask.distributed.Client`` connected to ``address`` (one per address and process, kept open).

    Raises ``ValueError`` naming the address when no scheduler answers there."""
    Client = require("distributed", "engine").Client

    client = _clients.get(address)
    if client is None or client.status not in ("running", "connecting"):
        try:
            client = Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False)
        except (OSError, TimeoutError) as err:
            raise ValueError(
                f"{SCHEDULER_ENV} / --scheduler must be the address of a running Dask scheduler, got {address!r}: {err}"
            ) from err
        _clients[address] = client
    return client


def _describe(value) -> str:
    """A short description of one argument: small values by their repr, arrays by shape, others by type."""
    if isinstance(value, (bool, int, float, str, type(None))) or (
        isinstance(value, (tuple, list)) and len(value) <= 8 and all(isinstance(v, (int, float)) for v in value)
    ):
        text = repr(value)
        return text if len(text) <= 60 else text[:57] + "..."
    shape = getattr(value, "shape", None)
    if shape is not None:
        return f"{type(value).__name__}{list(shape)}"
    return type(value).__name__


def _resolve_client(client):
    """``client`` if given, else the one of :func:`use_client`, else the one :data:`SCHEDULER_ENV` names, else
    ``None`` (in-process). An :class:`Engine` given: ``None`` in-process, itself in threads, else a client of its
    scheduler."""
    if isinstance(client, Engine):
        if client.mode == IN_PROCESS:
            return None
        return client if client.mode == THREADS else client_for(client.address)
    if client is None:
        client = _chosen_client.get()
    if client is None:
        address = scheduler_address()
        client = client_for(address) if address is not None else None
    return client


def describe_arguments(arguments: Mapping) -> str:
    """``name=value, ...`` with ``_describe`` for each value."""
    return ", ".join(f"{name}={_describe(value)}" for name, value in arguments.items())


def map_tasks(
    function: Callable,
    tasks: Sequence[Mapping],
    *,
    description: str,
    shared: Mapping | None = None,
    progress: bool = True,
    engine=None,
) -> list:
    """Run ``function(**shared, **task)`` for every task and return the results in task order.

    Args:
        function: a function of the package (or any function ``cloudpickle`` can ship); it must be a pure
            function of its arguments: seeds are arguments (:func:`task_seed`), never global state.
        tasks: one mapping of keyword arguments per task.
        shared: keyword arguments common to every task (e.g. the data): on a cluster they are sent to the
            workers once, not with every task.
        description: the sweep's name, shown on the progress bar and in errors.
        progress: a tqdm bar over finished tasks.
        engine: where the tasks run, the one engine argument of the library: an :class:`Engine` (of
            :func:`start_engine`; ``"threads"``: a pool of threads of this process; :data:`HERE`: this process) or
            a ``dask.distributed.Client``; by default (None) the client of :func:`use_client`, else the scheduler
            :data:`SCHEDULER_ENV` names, else this process.

    Raises:
        TaskFailed: a task raised (the first failure noticed; the tasks not yet finished are cancelled).
    """
    tasks = [dict(t) for t in tasks]
    shared = dict(shared or {})
    if not callable(function):
        raise ValueError(f"function must be callable, got {type(function).__name__}")
    overlap = sorted(set(shared) & set().union(*tasks))
    if overlap:
        raise ValueError(f"shared and tasks must name different arguments, both name {overlap}")
    client = _resolve_client(engine)
    bar = tqdm(total=len(tasks), desc=description, disable=not progress, leave=False)
    try:
        if client is None:
            return _in_process(function, tasks, shared, description, bar)
        if isinstance(client, Engine) and client.mode == THREADS:
            return _in_threads(client.workers, function, tasks, shared, description, bar)
        return _on_cluster(client, function, tasks, shared, description, bar)
    finally:
        bar.close()


def _failure(description: str, index: int, tasks: list, err: BaseException) -> TaskFailed:
    text = "".join(traceback.format_exception(type(err), err, err.__traceback__))
    return TaskFailed(description, index, len(tasks), describe_arguments(tasks[index]), text)


def _in_process(function, tasks, shared, description, bar) -> list:
    results = []
    for index, arguments in enumerate(tasks):
        try:
            results.append(run_task(function, {**shared, **arguments}))
        except Exception as err:
            raise _failure(description, index, tasks, err) from err
        bar.update()
    return results


def _in_threads(threads: int, function, tasks, shared, description, bar) -> list:
    """The tasks on a pool of ``threads`` threads of this process, each with one thread in every pool. The calling
    thread holds the process's settings (:func:`single_threaded`) from before the first task starts to after the
    last one ends, so they are set and restored in one thread, once, and no task runs between a restore and the
    next setting. The standard library's pool: Dask's threaded scheduler would run the same pool behind a task graph
    these independent tasks do not need."""
    from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

    with single_threaded(), ThreadPoolExecutor(max_workers=threads, thread_name_prefix="attnpaths-task") as pool:
        futures = [pool.submit(run_task, function, {**shared, **arguments}) for arguments in tasks]
        pending = set(futures)
        try:
            while pending:
                done, pending = wait(pending, return_when=FIRST_EXCEPTION)
                for future in sorted(done, key=futures.index):
                    err = future.exception()
                    if err is not None:
                        raise _failure(description, futures.index(future), tasks, err) from err
                bar.update(len(done))
        finally:
            for future in pending:
                future.cancel()
        return [future.result() for future in futures]


def _value(value):
    return value


def _on_cluster(client, function, tasks, shared, description, bar) -> list:
    from distributed import as_completed

    # each shared value is sent once, as the result of a task that returns it: a task's arguments then hold
    # its future. Unlike scattered data, which is lost with the worker holding it, a task's result can be
    # recomputed by the scheduler when a worker dies
    with warnings.catch_warnings():
        # Dask advises against graphs over 10 MB because repeated data should be sent once; here every task's
        # own arguments are unique to it (e.g. its data set) and shared ones are already sent once
        warnings.filterwarnings("ignore", message="Sending large graph", category=UserWarning)
        sent = {name: client.submit(_value, value, pure=False) for name, value in shared.items()}
        futures = [client.submit(run_task, function, {**sent, **arguments}, pure=False) for arguments in tasks]
    position = {future.key: index for index, future in enumerate(futures)}
    try:
        for future in as_completed(futures, loop=client.loop):
            if future.status == "error":
                index = position[future.key]
                err = future.exception()
                err.__traceback__ = future.traceback()
                raise _failure(description, index, tasks, err) from err
            bar.update()
        return client.gather(futures)
    finally:
        client.cancel([f for f in futures if not f.done()])


@dataclass(frozen=True)
class Timed:
    """A task's result with the wall-clock and CPU seconds it took where it ran."""

    value: object
    wall_s: float
    cpu_s: float


def run_timed(function: Callable, arguments: Mapping) -> Timed:
    """:func:`run_task`, timed where it runs."""
    wall, cpu = time.perf_counter(), time.process_time()
    value = run_task(function, arguments)
    return Timed(value, time.perf_counter() - wall, time.process_time() - cpu)


class Pending:
    """One task submitted with :func:`submit`: :meth:`result` waits for it (in-process: runs it then).

    After :meth:`result`, ``wall_s`` and ``cpu_s`` hold the seconds the task took where it ran."""

    def __init__(self, function: Callable, arguments: dict, description: str, client):
        self._function, self._arguments, self.description = function, arguments, description
        self._future = client.submit(run_timed, function, arguments, pure=False) if client is not None else None
        self._timed: Timed | None = None
        self.wall_s = self.cpu_s = None

    def result(self):
        """The task's return value; :class:`TaskFailed` if it raised."""
        if self._timed is None:
            try:
                if self._future is None:
                    self._timed = run_timed(self._function, self._arguments)
                else:
                    self._timed = self._future.result()
            except Exception as err:
                raise _failure(self.description, 0, [self._arguments], err) from err
            self.wall_s, self.cpu_s = self._timed.wall_s, self._timed.cpu_s
        return self._timed.value


def submit(function: Callable, *, description: str, engine=None, **arguments) -> Pending:
    """Submit one task ``function(**arguments)`` (e.g. one of a chapter's independent experiments) and
    return at once: on a cluster it starts now, so several submitted tasks run at the same time;
    in-process it runs when its :meth:`Pending.result` is first asked for. The engine is chosen as in
    :func:`map_tasks`."""
    if not callable(function):
        raise ValueError(f"function must be callable, got {type(function).__name__}")
    client = _resolve_client(engine)
    return Pending(function, dict(arguments), description, client)


# --------------------------------------------------------------------------------------------------------
# the engine of a command: embedded cluster, existing cluster, or none


@dataclass(frozen=True)
class Engine:
    """Where a command's chapters send their tasks: ``mode`` (``"embedded"``, ``"external"``, ``"in-process"``
    or ``"threads"``), ``address`` (the scheduler's, ``None`` in-process and in threads), ``workers`` (worker
    processes; 1 in-process; threads of this process in ``"threads"``), ``dashboard`` (the dashboard's address,
    ``None`` when there is none)."""

    mode: str
    address: str | None
    workers: int
    dashboard: str | None

    def describe(self) -> str:
        """One line for the command's output."""
        if self.mode == IN_PROCESS:
            return "engine: in-process (tasks run one after the other inside each chapter)"
        if self.mode == THREADS:
            return f"engine: {self.workers} thread(s) of this process, each task with one thread"
        where = "embedded LocalCluster" if self.mode == "embedded" else "existing Dask cluster"
        dashboard = f", dashboard {self.dashboard}" if self.dashboard else ", no dashboard"
        return f"engine: {where} at {self.address}, {self.workers} worker process(es) with one thread{dashboard}"

    @property
    def environment(self) -> dict:
        """The environment that sends a chapter's tasks to this engine.

        Raises:
            ValueError: a ``"threads"`` engine, whose threads no other process can reach."""
        if self.mode == THREADS:
            raise ValueError(
                "a threads engine runs tasks in this process only: pass it as the engine of a computation; "
                "for chapters executed in other processes use start_engine(workers=k) (a Dask cluster)"
            )
        return {SCHEDULER_ENV: self.address or IN_PROCESS}


HERE = Engine(IN_PROCESS, None, 1, None)
"""The engine of this process. Its tasks run one after the other in the calling process, whatever
:func:`use_client` or the environment say (``engine=HERE``; the default of the sweeps that are a loop here)."""


def worker_config() -> dict:
    """Dask settings of the embedded cluster's workers, measured on the hmc band sweep (``bench sweep``).

    Dask sets ``MALLOC_TRIM_THRESHOLD_`` in its workers to return memory to the system early; setting it
    turns off glibc's adaptive mmap threshold, so every temporary array above 128 KiB is mapped and unmapped
    again: the sweep's tasks took 1.5 times as long in a worker as in-process, with a large system time.
    The workers' statistical profiler samples the running task's stack every 10 ms, holding the interpreter
    lock: another few percent, for a dashboard view this project does not need."""
    import dask

    environment = dict(dask.config.get("distributed.nanny.pre-spawn-environ", {}))
    environment.pop("MALLOC_TRIM_THRESHOLD_", None)
    return {"distributed.nanny.pre-spawn-environ": environment, "distributed.worker.profile.enabled": False}


def default_workers() -> int:
    """Worker processes of the embedded cluster: the CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


@contextmanager
def start_engine(scheduler: str | None = None, workers: int | None = None, threads: bool = False):
    """The engine of one command, as a context manager yielding an :class:`Engine`.

    Args:
        scheduler: address of an existing Dask scheduler (default: the value of :data:`SCHEDULER_ENV`, if it
            names one); with it, ``workers`` must be ``None`` and ``threads`` false.
        workers: ``1`` runs every task in-process (for debugging); ``k > 1`` starts an embedded
            ``LocalCluster`` of ``k`` worker processes with one thread each; ``None``: :func:`default_workers`
            (in-process when that is 1).
        threads: with ``k > 1`` workers, a pool of ``k`` threads of this process instead of worker processes
            (mode :data:`THREADS`; the scheduler of the environment is then not used).

    The embedded cluster has no memory limit per worker: a chapter's tasks are sized for the machine, and
    Dask's pause-and-restart policy would turn one large task into a restart loop.
    """
    if workers is not None:
        positive_int(workers, "workers")
    if not isinstance(threads, bool):
        raise ValueError(f"threads must be True or False, got {threads!r}")
    if threads:
        if scheduler is not None:
            raise ValueError("threads must be False with a scheduler: an existing cluster has its own workers")
        workers = default_workers() if workers is None else workers
        yield Engine(THREADS, None, workers, None) if workers > 1 else Engine(IN_PROCESS, None, 1, None)
        return
    scheduler = scheduler or scheduler_address()
    if scheduler is not None:
        if workers is not None:
            raise ValueError("workers must not be given with a scheduler: an existing cluster has its own workers")
        client = client_for(scheduler)
        info = client.scheduler_info()
        yield Engine("external", scheduler, len(info.get("workers", {})), client.dashboard_link or None)
        return
    workers = default_workers() if workers is None else workers
    if workers == 1:
        yield Engine(IN_PROCESS, None, 1, None)
        return
    dask = require("dask", "engine")
    LocalCluster = require("distributed", "engine").LocalCluster

    with (
        dask.config.set(worker_config()),
        LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            memory_limit=None,
            dashboard_address="127.0.0.1:0",
            host="127.0.0.1",
        ) as cluster,
    ):
        dashboard = cluster.dashboard_link if _has_dashboard() else None
        try:
            yield Engine("embedded", cluster.scheduler_address, workers, dashboard)
        finally:
            client = _clients.pop(cluster.scheduler_address, None)
            if client is not None:
                client.close()


def _has_dashboard() -> bool:
    try:
        import bokeh  # noqa: F401  (the dashboard needs it)
    except ImportError:
        return False
    return True
