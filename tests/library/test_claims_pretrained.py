"""The claims and figures of the chapter on the pretrained transformer (attnpaths.pretrained.claims, .plots): McNemar's
exact test of an accuracy gain, the rank test of head rankings against pruning costs, their power checks and the
chapter's plain answer."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnpaths.claims import Outcome
from attnpaths.pretrained import claims


def paired(wins: int, losses: int, ties_right: int = 5, ties_wrong: int = 3):
    """Outputs of two predictors on ``wins + losses + ties`` snippets of label +1: the first alone right on
    ``wins``, the second alone right on ``losses``, both right on ``ties_right`` and both wrong on ``ties_wrong``."""
    first = [1.0] * wins + [-1.0] * losses + [1.0] * ties_right + [-1.0] * ties_wrong
    second = [-1.0] * wins + [1.0] * losses + [1.0] * ties_right + [-1.0] * ties_wrong
    return np.array(first), np.array(second), np.ones(len(first))


def test_the_accuracy_gain_is_mcnemars_exact_test():
    a, b, y = paired(9, 1)
    verdict = claims.accuracy_gain("M", "a beats b", outputs=a, baseline_outputs=b, labels=y, level=0.05)
    # P(W >= 9) for W ~ Binomial(10, 1/2): (C(10, 9) + C(10, 10)) / 2^10
    assert verdict.p_value == pytest.approx(11 / 1024)
    assert verdict.value == pytest.approx((9 - 1) / 18)
    assert verdict.outcome is Outcome.HOLDS
    reversed_ = claims.accuracy_gain("M", "a beats b", outputs=b, baseline_outputs=a, labels=y, level=0.05)
    assert reversed_.outcome is Outcome.CONTRADICTED
    even = claims.accuracy_gain("M", "a beats b", outputs=a[[0, 1, 9, 10]], baseline_outputs=b[[0, 1, 9, 10]],
                                labels=y[:4], level=0.05)  # fmt: skip
    assert even.outcome is Outcome.NOT_SIGNIFICANT


def test_an_output_of_zero_counts_half_and_a_tie_is_not_a_win():
    a, b, y = np.array([0.0, 1.0]), np.array([-1.0, 1.0]), np.array([1.0, 1.0])
    verdict = claims.accuracy_gain("M", "a beats b", outputs=a, baseline_outputs=b, labels=y)
    assert verdict.value == pytest.approx(0.5)  # one snippet won, of two
    with pytest.raises(ValueError, match="outputs and labels"):
        claims.accuracy_gain("M", "a beats b", outputs=a, baseline_outputs=b, labels=y[:1])


def test_the_power_of_the_accuracy_gain_comes_from_the_discordant_snippets():
    a, b, y = paired(30, 20)
    check = claims.accuracy_gain_power("M", outputs=a, baseline_outputs=b, labels=y, level=0.01)
    assert check.se[0] == pytest.approx(math.sqrt(50) / 58)
    assert check.estimate[0] == pytest.approx(10 / 58)
    assert "M" in check.sentence and "points" in check.sentence


def test_the_rank_claim_follows_the_direction_of_the_ranking():
    rng = np.random.default_rng(0)
    cost = rng.normal(size=(4, 6))
    holds = claims.ranks_pruning_cost("P", name="score", scores=cost + 0.1 * rng.normal(size=cost.shape), costs=cost,
                                      num_draws=2000)  # fmt: skip
    assert holds.outcome is Outcome.HOLDS and holds.value > 0.9
    against = claims.ranks_pruning_cost("P", name="score", scores=-cost, costs=cost, num_draws=2000)
    assert against.outcome is Outcome.CONTRADICTED and against.value == pytest.approx(-1.0)
    unrelated = claims.ranks_pruning_cost("P", name="score", scores=rng.normal(size=cost.shape), costs=cost,
                                          num_draws=2000, seed=1)  # fmt: skip
    assert unrelated.outcome is Outcome.NOT_SIGNIFICANT


def test_the_rank_claim_leaves_out_missing_heads():
    cost = np.array([[1.0, 2.0, 3.0, np.nan], [4.0, 5.0, 6.0, 7.0]])
    scores = np.array([[1.0, 2.0, 3.0, 100.0], [4.0, 5.0, 6.0, np.nan]])
    verdict = claims.ranks_pruning_cost("P", name="score", scores=scores, costs=cost, num_draws=500)
    assert "over 6 heads" in verdict.measured and verdict.value == pytest.approx(1.0)


def test_the_power_of_the_rank_claim_shrinks_with_more_heads():
    few, many = claims.rank_power("P", num_heads=12), claims.rank_power("P", num_heads=72)
    assert few.se[0] == pytest.approx(1 / math.sqrt(11)) and many.se[0] == pytest.approx(1 / math.sqrt(71))
    assert many.detectable[0] < few.detectable[0]
    with pytest.raises(ValueError, match="num_heads"):
        claims.rank_power("P", num_heads=2)


def test_the_answer_follows_the_outcomes():
    a, b, y = paired(40, 5)
    cost = np.arange(24.0).reshape(4, 6)
    verdicts = {
        "M1": claims.accuracy_gain("M1", "theory beats GP", outputs=a, baseline_outputs=b, labels=y),
        "P1": claims.ranks_pruning_cost("P1", name="theory", scores=-cost, costs=cost, num_draws=500),
        "P2": claims.ranks_pruning_cost("P2", name="gradient", scores=cost, costs=cost, num_draws=500),
    }
    text = claims.answer(verdicts.values())
    assert "more accurate than its GP limit" in text
    assert "rank MiniLM's heads against" in text
    assert "gradient importance computed on MiniLM itself ranks its heads by that cost" in text
    flipped = claims.accuracy_gain("M1", "theory beats GP", outputs=b, baseline_outputs=a, labels=y)
    assert "GP limit of one frozen MiniLM layer is more accurate" in claims.answer(
        [flipped, *list(verdicts.values())[1:]]
    )
    with pytest.raises(ValueError, match="P2"):
        claims.answer([verdicts["M1"], verdicts["P1"]])


def test_the_figures_label_what_they_draw():
    pytest.importorskip("matplotlib")
    from matplotlib import pyplot as plt

    from attnpaths.pretrained import plots

    rng = np.random.default_rng(0)
    curves = rng.uniform(0.5, 0.8, size=(3, 2, 2))
    fig = plots.plot_accuracies([10, 100, 1000], curves, {"theory": [0.7, 0.72], "gp": [0.69, 0.7],
                                                          "readout": [0.75, 0.77]})  # fmt: skip
    left, right = fig.axes
    assert left.get_xscale() == "log" and left.get_ylabel() == "test accuracy (%)"
    np.testing.assert_allclose(left.lines[0].get_ydata(), 100 * curves[:, :, 0].mean(axis=1))
    plt.close(fig)
    U = np.eye(4) + 0.1
    fig = plots.plot_head_weights(rng.uniform(size=(3, 4)), 1, U)
    assert fig.axes[1].get_title() == "(b) order parameter U of layer 2"
    plt.close(fig)
    scores = {"theory": rng.normal(size=(2, 3)), "gradient": rng.normal(size=(2, 3))}
    fig = plots.plot_pruning(scores, rng.normal(size=(2, 3)), [0, 2, 4],
                             {"theory": [0.8, 0.7, 0.5], "random 1": [0.8, 0.6, 0.5], "random 2": [0.8, 0.7, 0.4]},
                             cost_label="cost")  # fmt: skip
    labels = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert labels == ["theory", "random orders"]  # one label for every random order
    plt.close(fig)
