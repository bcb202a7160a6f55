"""Power tests of the claims about the trained one-shot model (attnpaths.oneshot.claims): each test must
hold on a correct input and say "contradicted" on a deliberately wrong one."""

import numpy as np
import pytest

from attnpaths.claims import Outcome
from attnpaths.oneshot import claims as os_claims

HOLDS, NS, CONTRADICTED = Outcome.HOLDS, Outcome.NOT_SIGNIFICANT, Outcome.CONTRADICTED


def test_head_scores_predict_drops_holds_when_ranks_agree_and_is_contradicted_when_reversed():
    scores = np.array([[0.2, 0.4, 0.6, 0.8], [0.3, 0.5, 0.7, 1.0]])
    agree = os_claims.head_scores_predict_drops("7a", scores=scores, drops=0.1 * scores)
    assert agree.outcome is HOLDS and agree.value == pytest.approx(1.0) and agree.p_value == pytest.approx(1 / 40320)
    reversed_ = os_claims.head_scores_predict_drops("7a", scores=scores, drops=-scores)
    assert reversed_.outcome is CONTRADICTED
    # shuffled scores: a weak correlation that permutations reproduce often
    shuffled = os_claims.head_scores_predict_drops("7a", scores=scores.ravel()[[3, 0, 6, 1, 7, 2, 4, 5]],
                                                   drops=scores)
    assert shuffled.outcome is NS


def test_pruning_order_against_random_orders():
    rng = np.random.default_rng(0)
    random_curves = 0.8 - np.cumsum(0.05 + 0.02 * rng.random((20, 7)), axis=1)
    random_curves = np.hstack([np.full((20, 1), 0.8), random_curves[:, :-1]])
    best = np.concatenate([[0.8], random_curves[:, 1:].max(axis=0) + 0.01])
    worst = np.concatenate([[0.8], random_curves[:, 1:].min(axis=0) - 0.01])
    assert os_claims.pruning_order("7b", score_curve=best, random_curves=random_curves).outcome is HOLDS
    assert os_claims.pruning_order("7b", score_curve=worst, random_curves=random_curves).outcome is CONTRADICTED
    # a curve in the middle of the random ones
    middle = np.median(random_curves, axis=0)
    assert os_claims.pruning_order("7b", score_curve=middle, random_curves=random_curves).outcome is NS
    # too few random orders can never reach the level: not significant, however good the order
    few = os_claims.pruning_order("7b", score_curve=best, random_curves=random_curves[:3])
    assert few.outcome is NS and few.p_value == pytest.approx(1 / 4)
    with pytest.raises(ValueError, match="random_curves"):
        os_claims.pruning_order("7b", score_curve=best[:3], random_curves=random_curves)


def test_pattern_transfer_holds_for_the_same_pattern_and_is_contradicted_when_negated():
    rng = np.random.default_rng(1)
    B = rng.standard_normal((16, 16))
    V = B @ B.T
    assert os_claims.pattern_transfer("8", U_theory=V, U_gd=2 * V, heads=(4, 4)).outcome is HOLDS
    assert os_claims.pattern_transfer("8", U_theory=V, U_gd=-V, heads=(4, 4)).outcome is CONTRADICTED
    # with 2 heads per layer only 4 relabellings exist: p >= 1/4, never significant at 5 %
    A = rng.standard_normal((4, 4))
    U = A @ A.T + 0.1 * np.eye(4)
    assert os_claims.pattern_transfer("8", U_theory=U, U_gd=U, heads=(2, 2)).outcome is NS
