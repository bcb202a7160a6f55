"""Streaming a training set through the engine in chunks (``attnpaths.streaming``): the Gram statistics
of the chunks against those of the whole set, the solve from them against ``solve(route="gram")``, the same bits
on any engine, streamed predictions; the HMC chunk generator (``attnpaths.hmc.streams``): chunk ``k`` from its own
seed, whatever was made before; the errors of bad input."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch
from helpers import (
    IN_THIS_PROCESS,
    SMALL_TASK,
    assert_bad_chunk_arguments_are_refused,
    assert_chunks_do_not_depend_on_their_order,
    assert_rounding_close,
    assert_streamed_solve_equals_the_whole_set,
    random_attention,
    random_problem,
    send_by_value,
)

from attnpaths.engine import THREADS, TaskFailed, start_engine, task_seed, use_client
from attnpaths.gram import GramStatistics
from attnpaths.hmc import HMCTask, four_path_network
from attnpaths.hmc.streams import HMCChunks
from attnpaths.paths import path_features
from attnpaths.streaming import gram_statistics, predict_streamed
from attnpaths.theory import solve, solve_from_statistics

send_by_value(__name__)  # the chunk generators defined here travel to the workers
STATISTICS_RTOL = 1e-13
"""Chunked against one-shot statistics: the same products, summed in another grouping (each chunk's partial block
is added on its own, and the chunks' sums are added to each other rather than block after block to one sum), so
they differ by rounding only: a few ulps of the sums of at most 80 positive or mixed-sign terms of order one."""
ROUTE_RTOL = 1e-10
"""A solve from the chunked statistics against ``solve(route="gram")`` on the whole set: both minimise the same
action, from statistics that differ by rounding (:data:`STATISTICS_RTOL`), amplified by the conditioning of the
minimum (as in ``tests/library/test_gram_route.py``, whose solves agree to 1e-13)."""


class ListChunks:
    """``make_chunk`` over fixed pieces of a data set: chunk ``k`` is ``pieces[k]`` (picklable)."""

    def __init__(self, pieces):
        self.pieces = list(pieces)

    def __call__(self, k):
        return self.pieces[k]


def _pieces(features, y, sizes):
    edges = np.cumsum([0, *sizes])
    assert edges[-1] == features.shape[0]
    return [(features[a:b], y[a:b]) for a, b in zip(edges[:-1], edges[1:])]


def _totals(statistics: GramStatistics):
    return statistics.gram, statistics.features_targets, statistics.targets_norm2, statistics.num_examples


def _small_chunks(**fields) -> HMCChunks:
    options = dict(seed=3, num_examples=30, chunk_size=8)
    options.update(fields)
    return HMCChunks(SMALL_TASK, four_path_network(SMALL_TASK).attention, **options)


# --------------------------------------------------------------------------------------------------------
# the statistics


def test_chunked_statistics_equal_the_one_shot_statistics_of_the_whole_set():
    xi, y = random_problem(P=80, n0=3, heads=(2, 2), seed=5)
    whole = GramStatistics(block_size=8).update(xi, y)
    results = {}
    for sizes in ((80,), (7, 13, 30, 30), (8,) * 10, (1,) * 80):
        chunks = ListChunks(_pieces(xi, y, sizes))
        streamed = gram_statistics(chunks, len(sizes), block_size=8, engine=IN_THIS_PROCESS, progress=False)
        assert streamed.block_size == 8 and streamed.num_examples == 80 and streamed.dimension == 12
        gram, b, yy, P = _totals(streamed)
        # rounding only: the products are the same, their grouping is not (STATISTICS_RTOL)
        np.testing.assert_allclose(
            gram, whole.gram, rtol=STATISTICS_RTOL, atol=STATISTICS_RTOL * np.abs(whole.gram).max()
        )
        np.testing.assert_allclose(
            b, whole.features_targets, rtol=STATISTICS_RTOL, atol=STATISTICS_RTOL * np.abs(whole.features_targets).max()
        )
        assert yy == pytest.approx(whole.targets_norm2, rel=STATISTICS_RTOL) and P == 80
        assert np.array_equal(gram, gram.T)
        results[sizes] = _totals(streamed)
    # one chunk: the statistics of the whole set, bit for bit (the same blocks, then copied exactly)
    assert all(np.array_equal(a, b) for a, b in zip(results[(80,)], _totals(whole)))


def test_the_sums_do_not_depend_on_the_rounds_or_the_engine_in_process():
    """The fixed reduction order: the chunks' statistics are merged in chunk order however many are sent at once,
    and on the default engine (this process here) as on an in-process Engine."""
    xi, y = random_problem(P=60, n0=3, heads=(2, 2), seed=6)
    chunks = ListChunks(_pieces(xi, y, (11, 9, 20, 4, 16)))
    reference = _totals(gram_statistics(chunks, 5, engine=IN_THIS_PROCESS, progress=False))
    for engine, per_round in ((IN_THIS_PROCESS, 1), (IN_THIS_PROCESS, 2), (None, 3), (None, 16)):
        found = _totals(gram_statistics(chunks, 5, engine=engine, chunks_per_round=per_round, progress=False))
        assert all(np.array_equal(a, b) for a, b in zip(found, reference)), (engine, per_round)


def test_the_sums_and_predictions_are_the_same_bits_on_two_threads_of_this_process():
    """An engine of threads (``start_engine(workers=2, threads=True)``): the chunks are made two at a time in this
    process, each on one thread, and merged in chunk order: the same statistics and predictions, bit for bit, as one
    after the other; the process's thread settings are back after it; a chunk that raises is named."""
    chunks = _small_chunks(num_examples=40, chunk_size=6)
    here = gram_statistics(chunks, chunks.num_chunks, engine=IN_THIS_PROCESS, progress=False)
    threads_before = torch.get_num_threads()
    with start_engine(workers=2, threads=True) as engine:
        assert engine.mode == THREADS and engine.workers == 2
        for per_round in (1, 3, 16):
            there = gram_statistics(
                chunks, chunks.num_chunks, engine=engine, chunks_per_round=per_round, progress=False
            )
            assert all(np.array_equal(a, b) for a, b in zip(_totals(there), _totals(here))), per_round
        solution = solve_from_statistics(here, heads=chunks.heads, width=10, temperature=0.01)
        test = _small_chunks(num_examples=12, chunk_size=4, stream=1)
        expected = predict_streamed(solution, test, test.num_chunks, engine=IN_THIS_PROCESS, progress=False)
        found = predict_streamed(solution, test, test.num_chunks, engine=engine, progress=False)
        assert all(np.array_equal(a, b) for a, b in zip(found, expected))

        def failing(k):
            if k == 4:
                raise RuntimeError("chunk four is broken")
            return chunks(k)

        with pytest.raises(TaskFailed, match=r"(?s)task 5 of 7 .*k=4.*chunk four is broken") as failure:
            gram_statistics(failing, chunks.num_chunks, engine=engine, chunks_per_round=3, progress=False)
        assert isinstance(failure.value.__cause__, RuntimeError)
    assert torch.get_num_threads() == threads_before


def test_the_sums_are_the_same_bits_on_two_workers(cluster_client):
    chunks = _small_chunks(num_examples=40, chunk_size=6)
    here = _totals(gram_statistics(chunks, chunks.num_chunks, engine=IN_THIS_PROCESS, progress=False))
    there = _totals(
        gram_statistics(chunks, chunks.num_chunks, engine=cluster_client, chunks_per_round=3, progress=False)
    )
    with use_client(cluster_client):
        chosen = _totals(gram_statistics(chunks, chunks.num_chunks, progress=False))
    for found in (there, chosen):
        assert all(np.array_equal(a, b) for a, b in zip(found, here))
    # and the predictions streamed over a test set on the workers: those made here
    solution = solve_from_statistics(
        gram_statistics(chunks, chunks.num_chunks, engine=IN_THIS_PROCESS, progress=False),
        heads=chunks.heads,
        width=10,
        temperature=0.01,
    )
    test = _small_chunks(num_examples=12, chunk_size=4, stream=1)
    here = predict_streamed(solution, test, test.num_chunks, engine=IN_THIS_PROCESS, progress=False)
    there = predict_streamed(solution, test, test.num_chunks, engine=cluster_client, progress=False)
    assert all(np.array_equal(a, b) for a, b in zip(there, here)) and here[0].shape == (12,)


def test_the_solve_from_streamed_statistics_equals_the_gram_route_on_the_whole_set():
    xi, y = random_problem(P=90, n0=3, heads=(2, 2), seed=7)
    options = dict(heads=(2, 2), width=(4, 3, 5), temperature=0.1)
    streamed = gram_statistics(ListChunks(_pieces(xi, y, (25, 25, 40))), 3, engine=IN_THIS_PROCESS, progress=False)
    found = solve_from_statistics(streamed, **options)
    expected = solve(xi, y, route="gram", **options)
    assert found.converged and expected.converged and found.route == "gram"
    for a, b in zip(found.U_layers, expected.U_layers):
        np.testing.assert_allclose(a, b, rtol=ROUTE_RTOL, atol=ROUTE_RTOL * np.abs(b).max())
    assert found.action == pytest.approx(expected.action, rel=ROUTE_RTOL)
    # and the dense route: the same minimum up to rounding
    dense = solve(xi, y, route="feature", **options)
    np.testing.assert_allclose(found.U, dense.U, rtol=ROUTE_RTOL, atol=ROUTE_RTOL * np.abs(dense.U).max())

    # predictions streamed over a test set in chunks: those of the solution on the whole test set
    xt, yt = random_problem(P=30, n0=3, heads=(2, 2), seed=8)
    mean, variance, labels = predict_streamed(
        found, ListChunks(_pieces(xt, yt, (10, 3, 17))), 3, engine=IN_THIS_PROCESS, batch_size=4, progress=False
    )
    expected_mean, expected_variance = found.predict(xt)
    np.testing.assert_allclose(mean, expected_mean, rtol=1e-12, atol=1e-12 * np.abs(expected_mean).max())
    np.testing.assert_allclose(variance, expected_variance, rtol=1e-12, atol=1e-12 * np.abs(expected_variance).max())
    assert np.array_equal(labels, yt.numpy())


def test_hmc_chunks_stream_into_a_solve():
    chunks = _small_chunks(num_examples=40, chunk_size=10)
    statistics = assert_streamed_solve_equals_the_whole_set(chunks, widths=10, rtol=ROUTE_RTOL)
    assert statistics.num_examples == 40


# --------------------------------------------------------------------------------------------------------
# the HMC chunk generator


def test_an_hmc_chunk_is_the_same_whether_or_not_earlier_chunks_were_made():
    chunks, (features, y), in_order = assert_chunks_do_not_depend_on_their_order(_small_chunks)
    assert features.shape == (8, SMALL_TASK.input_width, 4) and features.dtype == torch.float64
    # chunk k's draws: the task's sample from task_seed(seed, k, stream) (the engine's rule), then the paths:
    # path_features itself (determinism: the same code on the same inputs), or with factored_features the
    # factored computation, equal up to rounding
    data = SMALL_TASK.sample(8, torch.Generator().manual_seed(task_seed(3, 2, 0)))
    assert torch.equal(y, data.y)  # exact on any CPU: +-1 labels
    expected = path_features(data.x, chunks.attention)
    assert torch.equal(features, expected)
    factored = _small_chunks(factored_features=True)
    assert_rounding_close(factored(2)[0], expected, what="factored features")
    assert torch.equal(pickle.loads(pickle.dumps(factored))(2)[0], factored(2)[0])  # determinism
    # different chunks, streams and seeds differ
    for other in (in_order[1][0], _small_chunks(stream=1)(2)[0], _small_chunks(seed=4)(2)[0]):
        assert not torch.equal(other, features)


# --------------------------------------------------------------------------------------------------------
# bad input


def _raises(match, make_chunk, num_chunks, **options):
    with pytest.raises(ValueError, match=match):
        gram_statistics(make_chunk, num_chunks, **{"engine": IN_THIS_PROCESS, "progress": False, **options})


def test_bad_chunks_and_arguments_are_refused_naming_them():
    xi, y = random_problem(P=24, n0=3, heads=(2, 2), seed=9)
    good = _pieces(xi, y, (8, 8, 8))
    bad_nan = xi[8:16].clone()
    bad_nan[3, 1, 2] = float("nan")
    _raises(r"num_chunks must be an integer >= 1, got 0", ListChunks(good), 0)
    _raises(r"num_chunks must be an integer >= 1", ListChunks(good), 1.5)
    _raises(r"chunks_per_round must be an integer >= 1", ListChunks(good), 3, chunks_per_round=0)
    _raises(r"block_size must be an integer >= 1", ListChunks(good), 3, block_size=0)
    _raises(r"make_chunk must be callable", good, 3)
    _raises(
        r"make_chunk\(1\) returned a bad chunk: features must contain only finite values",
        ListChunks([good[0], (bad_nan, y[8:16]), good[2]]),
        3,
    )
    _raises(
        r"make_chunk\(2\) returned a bad chunk: targets must contain only finite values",
        ListChunks([good[0], good[1], (xi[16:], torch.full((8,), float("inf")))]),
        3,
    )
    _raises(
        r"make_chunk\(2\) must return features \[p, N0, n_paths\] = \[p, 3, 4\] like chunk 0, got \[8, 4, 4\]",
        ListChunks([good[0], good[1], (torch.zeros(8, 4, 4, dtype=torch.float64), y[16:])]),
        3,
    )
    _raises(
        r"make_chunk\(1\) returned a bad chunk: targets must have shape \[B\] = \[8\]",
        ListChunks([good[0], (xi[8:16], y[8:12]), good[2]]),
        3,
    )
    _raises(
        r"make_chunk\(0\) returned a bad chunk: features must have shape \[B, N0, n_paths\]",
        ListChunks([(xi[:8, 0], y[:8])]),
        1,
    )
    _raises(r"make_chunk\(0\) must return a pair", ListChunks([xi[:8]]), 1)
    _raises(r"make_chunk\(1\) must return p >= 1 examples", ListChunks([good[0], (xi[:0], y[:0])]), 2)
    _raises(r"engine must be None, an attnpaths.engine.Engine", ListChunks(good), 3, engine="tcp://nowhere")
    for per_round in (16, 3):  # make_chunk(3) raises IndexError: the task is named by its place among all chunks
        with pytest.raises(TaskFailed, match=r"task 4 of 4 of the sweep 'Gram statistics' failed; its arguments: k=3"):
            gram_statistics(ListChunks(good), 4, engine=IN_THIS_PROCESS, chunks_per_round=per_round, progress=False)

    solution = solve(xi, y, heads=(2, 2), width=5, temperature=0.1)
    with pytest.raises(ValueError, match=r"make_chunk\(1\) returned a bad chunk: features_test must"):
        predict_streamed(
            solution, ListChunks([good[0], (xi[8:16, :2], y[8:16])]), 2, engine=IN_THIS_PROCESS, progress=False
        )
    with pytest.raises(
        ValueError, match=r"make_chunk\(0\) returned a bad chunk: targets must have shape \[B\] = \[8\]"
    ):
        predict_streamed(solution, ListChunks([(xi[:8], y[:5])]), 1, engine=IN_THIS_PROCESS, progress=False)
    with pytest.raises(ValueError, match=r"solution must be a TheorySolution"):
        predict_streamed(object(), ListChunks(good), 3, progress=False)
    with pytest.raises(ValueError, match=r"num_chunks must be an integer >= 1"):
        predict_streamed(solution, ListChunks(good), 0, progress=False)


def test_both_streamed_doors_refuse_labels_as_the_in_memory_solve_does():
    """Boolean and complex labels are refused by the training and the prediction streams alike, with the
    message of ``solve`` (never turned into 0/1, or made real by dropping their imaginary part), naming the chunk;
    so are labels of another length than the chunk's features."""
    xi, y = random_problem(P=16, n0=3, heads=(2, 2), seed=9)
    solution = solve(xi, y, heads=(2, 2), width=5, temperature=0.1)
    for labels, in_memory in ((y > 0, True), (y.numpy() + 0.5j, True), (y[:13], False)):
        chunks = ListChunks([(xi[:8], y[:8]), (xi[8:], labels[8:])])
        messages = []
        for door in (gram_statistics, lambda *a, **o: predict_streamed(solution, *a, **o)):
            with pytest.raises(ValueError, match=r"^make_chunk\(1\) returned a bad chunk: targets must") as refused:
                door(chunks, 2, engine=IN_THIS_PROCESS, progress=False)
            messages.append(str(refused.value))
        assert messages[0] == messages[1]
        if in_memory:  # the dtype's message of the in-memory solve, word for word
            with pytest.raises(TypeError) as refused:
                solve(xi, labels, heads=(2, 2), width=5, temperature=0.1)
            assert messages[0] == f"make_chunk(1) returned a bad chunk: {refused.value}"
        else:
            assert messages[0].endswith(
                "targets must have shape [B] = [8] (one label per example of features), got (5,)"
            )


def test_predict_streamed_refuses_a_stream_of_the_heads_in_another_order():
    """Heads (3, 2) and (2, 3) both give six paths, which the features cannot tell apart; a stream that carries its
    heads (a ChunkedStream) is refused by a solution of the other order, naming ``make_chunk``."""
    generator = torch.Generator().manual_seed(12)
    streams = {
        heads: HMCChunks(SMALL_TASK, random_attention(generator, heads, SMALL_TASK.input_width), 5, 16, 8)
        for heads in ((2, 3), (3, 2))
    }
    features, y = streams[(2, 3)](0)
    solution = solve(features, y, heads=(2, 3), width=5, temperature=0.1)
    mean, _, labels = predict_streamed(solution, streams[(2, 3)], 2, engine=IN_THIS_PROCESS, progress=False)
    assert mean.shape == labels.shape == (16,)
    with pytest.raises(
        ValueError,
        match=r"^make_chunk must make the features of the solution's heads \(2, 3\), in that order: "
        r"it carries heads \(3, 2\)",
    ):
        predict_streamed(solution, streams[(3, 2)], 2, engine=IN_THIS_PROCESS, progress=False)


def test_bad_hmc_chunk_arguments_are_refused():
    assert_bad_chunk_arguments_are_refused(_small_chunks)
    attention = four_path_network(SMALL_TASK).attention
    with pytest.raises(ValueError, match=r"attention must read inputs of the task's width N0 = 231, got N0 = 14"):
        HMCChunks(HMCTask(), attention, seed=0, num_examples=10)
    with pytest.raises(ValueError, match=r"task must be an HMCTask"):
        HMCChunks(None, attention, seed=0, num_examples=10)
    with pytest.raises(ValueError, match=r"attention must be an Attention"):
        HMCChunks(SMALL_TASK, four_path_network(SMALL_TASK), seed=0, num_examples=10)


def test_twenty_thousand_examples_streamed_over_workers_solve_as_the_whole_set(cluster_client):
    """P = 2 10^4 HMC sequences (the small task, D = 56): streamed in 20 chunks over two workers and solved from
    the statistics, against the whole set's features concatenated and solved by ``solve`` (which takes the Gram
    route at this P): U, the action and the predictor agree within ROUTE_RTOL (the same action, from statistics
    summed in another grouping)."""
    chunks = _small_chunks(num_examples=20_000, chunk_size=1000)
    options = dict(heads=chunks.heads, width=10, temperature=0.01, on_failure="raise")
    streamed = solve_from_statistics(
        gram_statistics(chunks, chunks.num_chunks, engine=cluster_client, progress=False), **options
    )
    parts = [chunks(k) for k in range(chunks.num_chunks)]
    whole = solve(torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts]), **options)
    assert whole.route == "gram" and streamed.converged and whole.converged
    np.testing.assert_allclose(streamed.U, whole.U, rtol=ROUTE_RTOL, atol=ROUTE_RTOL * np.abs(whole.U).max())
    assert streamed.action == pytest.approx(whole.action, rel=ROUTE_RTOL)
    test = _small_chunks(seed=4, num_examples=200, chunk_size=200, stream=1)(0)[0]
    for a, b in zip(streamed.predict(test), whole.predict(test)):
        np.testing.assert_allclose(a, b, rtol=ROUTE_RTOL, atol=ROUTE_RTOL * np.abs(b).max())
