"""Learning curves of the theory (``attnpaths.experiments.learning_curves``): the statistics of nested training
sets from one pass (``gram_statistics_at``) against those of each set on its own, the curves against a solve of
each training set, the same bits on any engine, the claims on replicates where they must hold and where a wrong
theory (the GP kernel in place of the renormalised one) must not, and the errors of bad input."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import IN_THIS_PROCESS, SMALL_TASK, random_problem, send_by_value

from attnpaths.claims import Outcome
from attnpaths.experiments import learning_curves as lc
from attnpaths.hmc import four_path_network
from attnpaths.hmc.streams import HMCChunks
from attnpaths.streaming import gram_statistics, gram_statistics_at
from attnpaths.theory import classification_accuracy, solve

send_by_value(__name__)  # the chunk generators defined here travel to the workers
CURVE_RTOL = 1e-9
"""A point of a curve (a solve from the statistics of the first chunks) against ``solve`` on those examples, whose
default route at these sizes forms the ``[P, P]`` kernel: the two routes minimise the same action (agreement 1e-13
in ``tests/library/test_gram_route.py``), here at low temperature (T = 0.05), where ``U``'s large entries carry
the conditioning of ``K + T I`` (up to 1e3 on these small sets)."""


class ListChunks:
    """``make_chunk`` over fixed pieces of a data set (picklable)."""

    def __init__(self, pieces):
        self.pieces = list(pieces)

    def __call__(self, k):
        return self.pieces[k]


def _chunks(P=60, chunk=10, seed=2):
    xi, y = random_problem(P=P, n0=3, heads=(2, 2), seed=seed)
    return xi, y, ListChunks([(xi[a : a + chunk], y[a : a + chunk]) for a in range(0, P, chunk)])


def _totals(s):
    return s.gram, s.features_targets, s.targets_norm2, s.num_examples


def test_prefix_statistics_are_those_of_each_prefix_on_its_own():
    """With one chunk per task, the statistics at each prefix are the same bits as ``gram_statistics`` of that
    many chunks (the same tasks merged in the same order); with several chunks per task they agree up to
    rounding (the blocks are grouped otherwise)."""
    _, _, chunks = _chunks()
    prefixes = [1, 3, 6]
    found = gram_statistics_at(chunks, prefixes, engine=IN_THIS_PROCESS, progress=False)
    assert [s.num_examples for s in found] == [10, 30, 60]
    for m, stats in zip(prefixes, found):
        alone = gram_statistics(chunks, m, engine=IN_THIS_PROCESS, progress=False)
        assert all(np.array_equal(a, b) for a, b in zip(_totals(stats), _totals(alone)))
    grouped = gram_statistics_at(chunks, prefixes, engine=IN_THIS_PROCESS, chunks_per_task=4, progress=False)
    for a, b in zip(grouped, found):
        np.testing.assert_allclose(a.gram, b.gram, rtol=1e-13, atol=1e-13 * np.abs(b.gram).max())
        assert a.num_examples == b.num_examples


def test_prefix_statistics_are_the_same_bits_on_two_workers(cluster_client):
    chunks = HMCChunks(SMALL_TASK, four_path_network(SMALL_TASK).attention, seed=1, num_examples=48, chunk_size=6)
    here = gram_statistics_at(chunks, [2, 5, 8], engine=IN_THIS_PROCESS, chunks_per_task=2, progress=False)
    there = gram_statistics_at(chunks, [2, 5, 8], engine=cluster_client, chunks_per_task=2, progress=False)
    for a, b in zip(here, there):
        assert all(np.array_equal(x, y) for x, y in zip(_totals(a), _totals(b)))


def test_the_curves_equal_a_solve_of_each_training_set():
    xi, y, chunks = _chunks(P=60, chunk=10, seed=4)
    xt, yt = random_problem(P=40, n0=3, heads=(2, 2), seed=5)
    sizes = [20, 40, 60]
    curve = lc.learning_curve(
        chunks, 10, sizes, xt, yt, heads=(2, 2), temperature=0.05, widths=[3.0], alphas=[10.0],
        engine=IN_THIS_PROCESS, progress=False,
    )  # fmt: skip
    assert curve.curves == ("N = 3", "alpha = 10", "GP")
    np.testing.assert_array_equal(curve.widths[1], np.array(sizes) / 10.0)
    assert np.isinf(curve.widths[2]).all()
    for j, P in enumerate(sizes):
        for i, width in enumerate(curve.widths[:, j]):
            sol = solve(xi[:P], y[:P], heads=(2, 2), width=float(width), temperature=0.05, on_failure="raise")
            np.testing.assert_allclose(curve.U[i, j], sol.U, rtol=CURVE_RTOL, atol=CURVE_RTOL * np.abs(sol.U).max())
            mean, _ = sol.predict(xt)
            assert curve.accuracy[i, j] == classification_accuracy(mean, yt)
            assert curve.converged[i, j]
    shares = curve.path_share("N = 3", 0)
    np.testing.assert_allclose(shares, curve.U[0, :, 0, 0] / np.trace(curve.U[0], axis1=1, axis2=2))
    np.testing.assert_allclose(np.einsum("kii->ki", curve.correlations("N = 3")), 1.0)
    record = curve.to_record()
    assert record["curves"]["GP"]["N"] == ["inf"] * 3 and record["sizes"] == sizes


def _curve(accuracy_theory, accuracy_gp, shares):
    """A LearningCurve over two sizes with given accuracies and the first path's share ``shares``."""
    sizes = np.array([100, 1000])
    U = np.zeros((2, 2, 2, 2))
    for j, s in enumerate(shares):
        U[0, j] = np.diag([s, 1 - s])
        U[1, j] = np.eye(2)
    return lc.LearningCurve(
        sizes, ("N = 10", "GP"), np.array([[10.0, 10.0], [np.inf, np.inf]]),
        np.array([accuracy_theory, accuracy_gp]), U, np.ones((2, 2), dtype=bool), 1000,
    )  # fmt: skip


def test_the_claims_hold_for_a_clear_effect_and_a_wrong_theory_fails_them():
    rng = np.random.default_rng(0)
    curves = [
        _curve([0.95 + 0.01 * rng.standard_normal(), 0.97], [0.82 + 0.01 * rng.standard_normal(), 0.97 + 1e-3 * k],
               [0.6 + 0.01 * rng.standard_normal(), 0.99])
        for k in range(5)
    ]  # fmt: skip
    verdicts = lc.curve_claims(curves, theory="N = 10", path=0, path_name="g")
    assert [v.claim for v in verdicts] == ["a", "b", "c"]
    assert all(v.outcome == Outcome.HOLDS for v in verdicts), [v.outcome for v in verdicts]
    wrong = lc.curve_claims(curves, theory=lc.GP_CURVE, path=0, path_name="g")
    assert all(v.outcome != Outcome.HOLDS for v in wrong), [v.outcome for v in wrong]
    # the reversed effect is contradicted, not merely unresolved
    reversed_curves = [_curve(c.accuracy[1], c.accuracy[0], [0.6, 0.99]) for c in curves]
    assert lc.curve_claims(reversed_curves, theory="N = 10", path=0, path_name="g")[0].outcome == Outcome.CONTRADICTED


def test_pointwise_advantage_tests_every_size_with_bonferroni():
    theory = np.array([[0.95, 0.80, 0.97], [0.94, 0.81, 0.97], [0.96, 0.79, 0.97], [0.95, 0.80, 0.97]])
    gp = np.array([[0.82, 0.90, 0.97], [0.83, 0.91, 0.97], [0.81, 0.90, 0.97], [0.82, 0.91, 0.97]])
    verdicts = lc.pointwise_advantage(theory, gp, [100, 1000, 10000])
    assert [v.outcome for v in verdicts] == [Outcome.HOLDS, Outcome.CONTRADICTED, Outcome.NOT_SIGNIFICANT]
    assert "3 tests" in verdicts[0].correction


def test_bad_input_is_refused_naming_it():
    _, _, chunks = _chunks()
    xt, yt = random_problem(P=10, n0=3, heads=(2, 2), seed=5)
    options = dict(heads=(2, 2), temperature=0.05, engine=IN_THIS_PROCESS, progress=False)
    with pytest.raises(ValueError, match="multiples of chunk_size = 10"):
        lc.learning_curve(chunks, 10, [15, 30], xt, yt, widths=[3], **options)
    with pytest.raises(ValueError, match="strictly increasing"):
        lc.learning_curve(chunks, 10, [30, 20], xt, yt, widths=[3], **options)
    with pytest.raises(ValueError, match="at least one curve"):
        lc.learning_curve(chunks, 10, [20], xt, yt, gp=False, **options)
    with pytest.raises(ValueError, match="widths"):
        lc.learning_curve(chunks, 10, [20], xt, yt, widths=[0.0], **options)
    with pytest.raises(ValueError, match="chunks of chunk_size = 20"):
        lc.learning_curve(chunks, 20, [20], xt, yt, widths=[3], **options)
    with pytest.raises(ValueError, match="test_targets must have shape"):
        lc.learning_curve(chunks, 10, [20], xt, yt[:5], widths=[3], **options)
    with pytest.raises(ValueError, match="temperature"):
        lc.learning_curve(chunks, 10, [20], xt, yt, widths=[3], **{**options, "temperature": 0.0})
    with pytest.raises(ValueError, match="prefixes"):
        gram_statistics_at(chunks, [0, 2], engine=IN_THIS_PROCESS, progress=False)
    curve = _curve([0.9, 0.9], [0.8, 0.9], [0.5, 0.6])
    with pytest.raises(ValueError, match="curve must be one of"):
        curve.index("N = 3")
    with pytest.raises(ValueError, match="size must be one of"):
        curve.size_index(50)
    with pytest.raises(ValueError, match="path must be a path index"):
        curve.path_share("GP", 2)
    with pytest.raises(ValueError, match=">= 2 LearningCurve"):
        lc.curve_claims([curve], theory="N = 10", path=0, path_name="g")
