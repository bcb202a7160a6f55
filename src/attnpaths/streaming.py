"""Training sets too large to hold: their Gram statistics (eq-action, eq-predictor; :mod:`attnpaths.gram`)
accumulated chunk by chunk on the engine (:mod:`attnpaths.engine`), and predictions streamed over test sets in
chunks.

A data set is given as ``make_chunk``, a picklable callable with ``make_chunk(k) = (features [p_k, N0, n_paths],
y [p_k])`` for the chunks ``k = 0, ..., num_chunks - 1`` (e.g. :class:`attnpaths.hmc.streams.HMCChunks`), each made
from ``k`` alone (its seed from :func:`attnpaths.engine.task_seed`), so that chunks are independent tasks.

:func:`gram_statistics` runs one :func:`attnpaths.engine.map_tasks` task per chunk: it makes the chunk and returns
its :class:`attnpaths.gram.GramStatistics`; these are merged in chunk order, ``((S_0 + S_1) + S_2) + ...``, in the
calling process. Each task runs on one thread (:func:`attnpaths.engine.run_task`), so the statistics of a chunk are
the same bits wherever it runs, and the fixed order of the merge makes the sums the same bits whatever the number
of workers. On one machine without a cluster, ``start_engine(workers=2, threads=True)`` makes the chunks on two
threads of the calling process (:data:`attnpaths.engine.THREADS`): nearly twice as fast on two cores, with nothing
to serialise. They equal the statistics of the concatenated features (one :meth:`attnpaths.gram.GramStatistics.update`)
up to rounding only: the partial sums are grouped by chunk. Memory in the calling process is a few ``[D, D]``
matrices (``D = N0 n_paths``) and the results of one round of ``chunks_per_round`` tasks, whatever ``P``::

    stats = gram_statistics(chunks, chunks.num_chunks)
    sol = solve_from_statistics(stats, heads=(2, 2), width=10, temperature=0.01)
    mean, variance, y = predict_streamed(sol, test_chunks, test_chunks.num_chunks)
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable

import numpy as np
from tqdm import tqdm

from ._validation import increasing_ints, labelled_examples, positive_int
from .engine import IN_PROCESS, THREADS, Engine, TaskFailed, client_for, map_tasks
from .gram import DEFAULT_BLOCK_SIZE, GramStatistics
from .paths import check_num_paths


class ChunkedStream:
    """What the tasks' chunk generators share (:class:`attnpaths.hmc.streams.HMCChunks`,
    :class:`attnpaths.oneshot.streams.EpisodeChunks`): ``P = num_examples`` examples cut into chunks of
    ``chunk_size``, the last one holding the rest, read through a network's ``attention``. A base class of frozen
    dataclasses with those three fields (checked by their own ``__post_init__``)."""

    num_examples: int
    chunk_size: int

    @property
    def num_chunks(self) -> int:
        """``ceil(P / chunk_size)``."""
        return math.ceil(self.num_examples / self.chunk_size)

    @property
    def heads(self) -> tuple[int, ...]:
        """``(H_1, ..., H_L)`` of the attention."""
        return self.attention.heads

    def chunk_examples(self, k: int) -> int:
        """``p_k``, the examples of chunk ``k`` (``0 <= k < num_chunks``).

        Raises:
            ValueError: ``k`` is not an integer in ``[0, num_chunks)``.
        """
        k = self._index(k)
        return min(self.chunk_size, self.num_examples - k * self.chunk_size)

    def _index(self, k) -> int:
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 0 <= k < self.num_chunks:
            raise ValueError(f"k must be a chunk index, an integer in [0, {self.num_chunks}), got {k!r}")
        return int(k)


CHUNKS_PER_ROUND = 16
"""Chunks sent to the engine at once by default. The calling process holds the statistics of one round
(``[D, D]`` each, 7 MB at ``D = 924``) before they are merged into the running sum."""


def _client(engine):
    """The ``client`` of :func:`attnpaths.engine.map_tasks` for ``engine``: None (the engine of
    :func:`attnpaths.engine.use_client` or of the environment), an :class:`attnpaths.engine.Engine` (in-process:
    this process, whatever the environment says; threads: a pool of this process's threads) or a
    ``dask.distributed.Client``."""
    if engine is None:
        return None
    if isinstance(engine, Engine):
        return engine if engine.mode in (IN_PROCESS, THREADS) else client_for(engine.address)
    if not callable(getattr(engine, "submit", None)) or not callable(getattr(engine, "gather", None)):
        raise ValueError(
            f"engine must be None, an attnpaths.engine.Engine (start_engine) or a dask.distributed "
            f"Client, got {type(engine).__name__}"
        )
    return engine


def _rounds(function, tasks: list[dict], shared: dict, description: str, client, per_round: int):
    """``(first, results)`` of every round of ``per_round`` tasks (:func:`attnpaths.engine.map_tasks`), the
    ``first``-th task first: a :class:`attnpaths.engine.TaskFailed` names the task's place among all of them."""
    for first in range(0, len(tasks), per_round):
        batch = tasks[first : first + per_round]
        try:
            results = map_tasks(function, batch, shared=shared, description=description, progress=False, engine=client)
        except TaskFailed as err:
            index, total = first + err.index, len(tasks)
            raise TaskFailed(description, index, total, err.arguments, err.remote_traceback) from err.__cause__
        yield first, results


def _check_chunk(make_chunk: Callable, k: int):
    """``(features [p, N0, n_paths], y [p])`` of ``make_chunk(k)``, float64 tensors checked as the in-memory
    :func:`attnpaths.theory.solve` and :meth:`attnpaths.gram.GramStatistics.update` check their data
    (:func:`attnpaths._validation.labelled_examples`: finite, real, not boolean, one label per example), and with
    ``n_paths = H_1 ... H_L`` where ``make_chunk`` carries its ``heads`` (:class:`ChunkedStream`). A ``ValueError``
    (``TypeError`` for complex, boolean or object values) for the caller to name the chunk in."""
    chunk = make_chunk(k)
    if not isinstance(chunk, (tuple, list)) or len(chunk) != 2:
        raise ValueError(
            f"make_chunk({k}) must return a pair (features [p, N0, n_paths], y [p]), got {type(chunk).__name__}"
        )
    features, y = labelled_examples(*chunk)
    heads = getattr(make_chunk, "heads", None)
    if heads is not None:
        check_num_paths(features.shape[2], heads)
    return features, y


def _refused(err: Exception, k: int) -> str:
    """The message of a chunk refused by :func:`_check_chunk` (or by ``make_chunk`` itself with a ``ValueError``),
    naming the chunk."""
    if isinstance(err, ValueError) and str(err).startswith(f"make_chunk({k})"):
        return str(err)
    return f"make_chunk({k}) returned a bad chunk: {err}"


def _chunk_statistics(make_chunk: Callable, k: int, block_size: int = DEFAULT_BLOCK_SIZE, stop: int | None = None):
    """The task of :func:`gram_statistics_at` for chunks ``k, ..., stop - 1`` (default: chunk ``k`` alone):
    ``(statistics, None)``, the :class:`attnpaths.gram.GramStatistics` of their examples in chunk order, or
    ``(None, message)`` where a chunk is refused (:func:`_check_chunk`; ``p = 0``; features of another ``N0`` or
    ``n_paths`` than the task's first chunk): the caller raises the ``ValueError``, naming the chunk, in its own
    process.

    The statistics returned hold no block buffer (``[block_size, D]``, 15 MB at ``D = 924``): they are the
    merge of the chunks' into empty statistics of blocks of one example, which copies the sums exactly (each is
    added to zeros) and leaves nothing to add later."""
    heads, readout = getattr(make_chunk, "heads", None), getattr(make_chunk, "readout", None)
    statistics = GramStatistics(block_size, heads=heads, readout=readout)
    for j in range(k, k + 1 if stop is None else stop):
        try:
            features, y = _check_chunk(make_chunk, j)
            if len(features) == 0:
                raise ValueError(f"make_chunk({j}) must return p >= 1 examples (features [p, N0, n_paths]), got none")
            statistics.update(features, y)
        except (ValueError, TypeError) as err:
            return None, _refused(err, j)
    return GramStatistics(1).merge(statistics), None


def _tasks(prefixes: list[int], chunks_per_task: int) -> list[tuple[int, int]]:
    """The chunk ranges ``[start, stop)`` of the tasks of :func:`gram_statistics_at`: consecutive, at most
    ``chunks_per_task`` chunks each, none across a prefix's end (so each prefix is a sum of whole tasks)."""
    tasks, start = [], 0
    for end in prefixes:
        while start < end:
            stop = min(start + chunks_per_task, end)
            tasks.append((start, stop))
            start = stop
    return tasks


def gram_statistics(
    make_chunk: Callable,
    num_chunks: int,
    *,
    engine=None,
    block_size: int = DEFAULT_BLOCK_SIZE,
    chunks_per_round: int = CHUNKS_PER_ROUND,
    progress: bool = True,
    description: str = "Gram statistics",
) -> GramStatistics:
    """The :class:`attnpaths.gram.GramStatistics` (``F^T F``, ``F^T y``, ``y^T y``, ``P``) of the chunks
    ``make_chunk(0), ..., make_chunk(num_chunks - 1)``: one engine task per chunk, merged in chunk order (module
    docstring), for :func:`attnpaths.theory.solve_from_statistics`.

    Args:
        make_chunk: a picklable callable, ``make_chunk(k) = (features [p_k, N0, n_paths], y [p_k])`` (numpy or
            torch, raw path features as :func:`attnpaths.theory.solve` takes them), a pure function of ``k``.
        num_chunks: an integer >= 1.
        engine: where the tasks run: None (:func:`attnpaths.engine.map_tasks`' choice: the client of
            :func:`attnpaths.engine.use_client`, else the scheduler of the environment, else this process), an
            :class:`attnpaths.engine.Engine` of :func:`attnpaths.engine.start_engine` (with ``threads=True``: a
            pool of this process's threads, the chunks made at once on as many cores), or a
            ``dask.distributed`` client. The result is the same bits on any of them.
        block_size: examples per block of each chunk's statistics (:class:`attnpaths.gram.GramStatistics`).
        chunks_per_round: tasks sent at once, an integer >= 1 (memory only: the result does not depend on it).
        progress: a tqdm bar over the chunks.
        description: the sweep's name on the bar and in the engine's errors.

    Returns:
        the merged statistics, of blocks of ``block_size`` examples (more chunks can be added to them with
        :meth:`attnpaths.gram.GramStatistics.merge` or :meth:`~attnpaths.gram.GramStatistics.update`).

    Raises:
        ValueError: ``num_chunks``, ``block_size`` or ``chunks_per_round`` out of range, ``engine`` of another
            kind, a chunk that is not a pair of finite real (not boolean) arrays ``[p, N0, n_paths]`` and ``[p]``
            with ``p >= 1`` (``n_paths = H_1 ... H_L`` where ``make_chunk`` carries its ``heads``), or chunks of
            different ``N0`` or ``n_paths`` (each naming the chunk).
        attnpaths.engine.TaskFailed: ``make_chunk`` itself raised.
    """
    num_chunks = positive_int(num_chunks, "num_chunks")
    (statistics,) = gram_statistics_at(
        make_chunk,
        [num_chunks],
        engine=engine,
        block_size=block_size,
        chunks_per_round=chunks_per_round,
        progress=progress,
        description=description,
    )
    return statistics


def gram_statistics_at(
    make_chunk: Callable,
    prefixes,
    *,
    engine=None,
    block_size: int = DEFAULT_BLOCK_SIZE,
    chunks_per_task: int = 1,
    chunks_per_round: int = CHUNKS_PER_ROUND,
    progress: bool = True,
    description: str = "Gram statistics",
) -> list[GramStatistics]:
    """The :class:`attnpaths.gram.GramStatistics` of the first ``m`` chunks for every ``m`` in ``prefixes``, from
    one pass over ``make_chunk(0), ..., make_chunk(max(prefixes) - 1)``: the nested training sets of a learning
    curve (``P = 10^2, ..., 10^5`` examples) cost what the largest one costs.

    The chunks are cut into tasks of at most ``chunks_per_task`` consecutive chunks, none across the end of a
    prefix; a task accumulates its chunks in order (:meth:`attnpaths.gram.GramStatistics.update`), and the tasks'
    statistics are merged in order, ``((S_0 + S_1) + S_2) + ...``, the merged sum read at each prefix's end. The
    tasks depend on ``prefixes`` and ``chunks_per_task`` only, so the statistics are the same bits whatever the
    engine and its number of workers (with one prefix and ``chunks_per_task = 1`` they are those of
    :func:`gram_statistics`).

    Args:
        make_chunk, engine, block_size, chunks_per_round, progress, description: as in :func:`gram_statistics`
            (``chunks_per_round`` counts tasks).
        prefixes: strictly increasing integers >= 1, numbers of chunks.
        chunks_per_task: an integer >= 1 (more: fewer ``[D, D]`` results to send back, 7 MB each at ``D = 924``).

    Returns:
        one :class:`attnpaths.gram.GramStatistics` per prefix, in the order of ``prefixes`` (independent objects).

    Raises:
        ValueError: as :func:`gram_statistics`; ``prefixes`` not strictly increasing integers >= 1.
        attnpaths.engine.TaskFailed: ``make_chunk`` itself raised.
    """
    if not callable(make_chunk):
        raise ValueError(f"make_chunk must be callable (k -> (features, y)), got {type(make_chunk).__name__}")
    prefixes = [int(m) for m in increasing_ints(prefixes, "prefixes (numbers of chunks)", 1)]
    block_size = positive_int(block_size, "block_size")
    chunks_per_task = positive_int(chunks_per_task, "chunks_per_task")
    chunks_per_round = positive_int(chunks_per_round, "chunks_per_round")
    client = _client(engine)
    tasks = _tasks(prefixes, chunks_per_task)
    ends = set(prefixes)
    total = GramStatistics(block_size)
    found_at = []
    shape = None  # (N0, n_paths) of chunk 0
    with tqdm(total=prefixes[-1], desc=description, disable=not progress, leave=False, unit="chunk") as bar:
        arguments = [dict(k=start, stop=stop) for start, stop in tasks]
        shared = dict(make_chunk=make_chunk, block_size=block_size)
        for first, results in _rounds(_chunk_statistics, arguments, shared, description, client, chunks_per_round):
            for (start, stop), (statistics, message) in zip(tasks[first:], results):
                if message is not None:
                    raise ValueError(message)
                found = (statistics.input_width, statistics.num_paths)
                if shape is None:
                    shape = found
                elif found != shape:
                    raise ValueError(
                        f"make_chunk({start}) must return features [p, N0, n_paths] = [p, {shape[0]}, "
                        f"{shape[1]}] like chunk 0, got [{statistics.num_examples if stop - start == 1 else 'p'}, "
                        f"{found[0]}, {found[1]}]"
                    )
                total = total.merge(statistics)  # in chunk order: the same sums whatever the engine
                if stop in ends:
                    found_at.append(total)
                bar.update(stop - start)
    return found_at


def _chunk_predictions(solution, make_chunk: Callable, k: int, batch_size: int = 512):
    """The task of :func:`predict_streamed` for chunk ``k``: ``(mean, variance, y)`` of ``make_chunk(k)``
    (numpy arrays), or ``(None, message, None)`` where the chunk is refused."""
    try:
        features, labels = _check_chunk(make_chunk, k)
        mean, variance = solution.predict(features, batch_size=batch_size)
    except (ValueError, TypeError) as err:
        return None, _refused(err, k), None
    return mean, variance, labels.numpy()


def predict_streamed(
    solution,
    make_chunk: Callable,
    num_chunks: int,
    *,
    engine=None,
    batch_size: int = 512,
    chunks_per_round: int = CHUNKS_PER_ROUND,
    progress: bool = True,
    description: str = "streamed predictions",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The predictor's mean and variance (eq-predictor, :meth:`attnpaths.theory.TheorySolution.predict`) on the
    chunks of a test set too large to hold, one engine task per chunk (the solution is sent to each worker once),
    concatenated in chunk order with the chunks' labels.

    Args:
        solution: a :class:`attnpaths.theory.TheorySolution` (of :func:`attnpaths.theory.solve_from_statistics`:
            it holds no training examples, so it is small to send).
        make_chunk, num_chunks, engine, chunks_per_round, progress, description: as in :func:`gram_statistics`.
        batch_size: test examples per batch of :meth:`~attnpaths.theory.TheorySolution.predict`.

    Returns:
        ``(mean, variance, y)``, numpy arrays of length ``sum_k p_k``.

    Raises:
        ValueError: an argument out of range; a ``make_chunk`` that carries its heads (:class:`ChunkedStream`) other
            than the solution's, in another order included; or a chunk that is not a pair
            ``(features [p, N0, n_paths], y [p])`` of finite real (not boolean) arrays of the solution's ``N0`` and
            ``n_paths`` (naming the chunk).
    """
    if not callable(getattr(solution, "predict", None)):
        raise ValueError(f"solution must be a TheorySolution (attnpaths.theory), got {type(solution).__name__}")
    if not callable(make_chunk):
        raise ValueError(f"make_chunk must be callable (k -> (features, y)), got {type(make_chunk).__name__}")
    heads, stream_heads = tuple(getattr(solution, "heads", ())), getattr(make_chunk, "heads", None)
    if stream_heads is not None and tuple(stream_heads) != heads:
        # the features hold the paths in one flat axis: heads of one product in another order give features of
        # the same shape, read with the paths mislabelled
        raise ValueError(
            f"make_chunk must make the features of the solution's heads {heads}, in that order: it carries heads "
            f"{tuple(stream_heads)}"
        )
    num_chunks = positive_int(num_chunks, "num_chunks")
    batch_size = positive_int(batch_size, "batch_size")
    chunks_per_round = positive_int(chunks_per_round, "chunks_per_round")
    client = _client(engine)
    means, variances, labels = [], [], []
    with tqdm(total=num_chunks, desc=description, disable=not progress, leave=False) as bar:
        arguments = [dict(k=k) for k in range(num_chunks)]
        shared = dict(solution=solution, make_chunk=make_chunk, batch_size=batch_size)
        for _, results in _rounds(_chunk_predictions, arguments, shared, description, client, chunks_per_round):
            for mean, variance, y in results:
                if mean is None:
                    raise ValueError(variance)
                means.append(mean)
                variances.append(variance)
                labels.append(y)
            bar.update(len(results))
    return np.concatenate(means), np.concatenate(variances), np.concatenate(labels)
