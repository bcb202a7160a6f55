"""Power tests of the claims about the trained one-shot model (attnpaths.oneshot.claims): each test must
hold on a correct input and say "contradicted" on a deliberately wrong one."""

import itertools

import numpy as np
import pytest
from helpers import verdict

from attnpaths.claims import Outcome
from attnpaths.experiments.head_pruning import all_heads, pruning_sets
from attnpaths.experiments.head_subsets import random_order_area_distribution, subset_curve, subset_masks
from attnpaths.oneshot import claims as os_claims
from attnpaths.oneshot import pruning as oneshot_pruning

HOLDS, NS, CONTRADICTED = Outcome.HOLDS, Outcome.NOT_SIGNIFICANT, Outcome.CONTRADICTED


def test_head_scores_predict_drops_holds_when_ranks_agree_and_is_contradicted_when_reversed():
    scores = np.array([[0.2, 0.4, 0.6, 0.8], [0.3, 0.5, 0.7, 1.0]])
    agree = os_claims.head_scores_predict_drops("7a", scores=scores, drops=0.1 * scores)
    assert agree.outcome is HOLDS and agree.value == pytest.approx(1.0) and agree.p_value == pytest.approx(1 / 40320)
    reversed_ = os_claims.head_scores_predict_drops("7a", scores=scores, drops=-scores)
    assert reversed_.outcome is CONTRADICTED
    # shuffled scores: a weak correlation that permutations reproduce often
    shuffled = os_claims.head_scores_predict_drops("7a", scores=scores.ravel()[[3, 0, 6, 1, 7, 2, 4, 5]], drops=scores)
    assert shuffled.outcome is NS and "not attainable" not in shuffled.measured
    # 4 heads: 4! = 24 pairings, p >= 1/24 > 1 %
    four = os_claims.head_scores_predict_drops("7a", scores=[1.0, 2.0, 3.0, 4.0], drops=[1.0, 2.0, 3.0, 4.0])
    assert four.outcome is NS and "not attainable with 4! pairings" in four.measured


def additive_table(weights, heads):
    """Accuracy of every set of pruned heads when each head ``i`` costs ``weights[i]`` on its own."""
    masks = subset_masks(heads)
    return 0.9 - masks @ np.asarray(weights, dtype=float)


def test_pruning_order_against_every_random_order():
    heads = (4, 4)
    weights = np.array([0.01, 0.05, 0.02, 0.08, 0.03, 0.07, 0.04, 0.06])
    values = additive_table(weights, heads)
    pairs = all_heads(heads)
    cheapest_first = [pairs[i] for i in np.argsort(weights)]
    holds = os_claims.pruning_order("7b", score_order=cheapest_first, values=values, heads=heads)
    assert holds.outcome is HOLDS and holds.level == 0.01 and holds.p_value < 0.001
    assert "not attainable" not in holds.measured and "exact" in holds.test
    dearest_first = cheapest_first[::-1]
    assert os_claims.pruning_order("7b", score_order=dearest_first, values=values, heads=heads).outcome is CONTRADICTED
    # an order that alternates cheap and dear heads sits in the middle of the random orders
    middle = [cheapest_first[i] for i in (0, 7, 1, 6, 2, 5, 3, 4)]
    assert os_claims.pruning_order("7b", score_order=middle, values=values, heads=heads).outcome is NS
    # two heads per layer: two sets to prune, a handful of orders; no order reaches 1 %, and the verdict says so
    small = os_claims.pruning_order(
        "7b",
        score_order=[(0, 0), (1, 0), (0, 1), (1, 1)],
        values=additive_table([0.0, 0.1, 0.0, 0.1], (2, 2)),
        heads=(2, 2),
    )
    assert small.outcome is NS and "not attainable" in small.measured
    # the smallest attainable p is the mass of the orders with the best curve, not the rarest path
    areas, probabilities = random_order_area_distribution(values, heads)
    best = os_claims.smallest_order_p_value(areas, probabilities)
    assert best == pytest.approx(probabilities[areas >= areas.max() - 1e-12].sum()) and best >= probabilities.min()


def test_pruning_order_p_value_is_the_fraction_of_all_orders_that_do_as_well():
    """The exact p-value equals the share of the n! orders (each equally likely) whose curve's mean is at least
    the score order's: counted here by brute force over every permutation of 3 + 3 heads."""
    heads = (3, 3)
    rng = np.random.default_rng(3)
    values = rng.random(2**6)
    pairs = all_heads(heads)
    order = [pairs[i] for i in rng.permutation(6)]
    verdict = os_claims.pruning_order("7b", score_order=order, values=values, heads=heads, level=0.3)
    area = subset_curve(values, pruning_sets(order, heads), heads)[1:].mean()
    means = [subset_curve(values, pruning_sets(p, heads), heads)[1:].mean() for p in itertools.permutations(pairs)]
    assert verdict.p_value == pytest.approx(np.mean(np.array(means) >= area - 1e-12), abs=1e-12)
    with pytest.raises(ValueError, match="order"):
        os_claims.pruning_order("7b", score_order=order[:3], values=values, heads=heads)


def test_pattern_transfer_holds_for_the_same_pattern_and_is_contradicted_when_negated():
    rng = np.random.default_rng(1)
    B = rng.standard_normal((16, 16))
    V = B @ B.T
    assert os_claims.pattern_transfer("8", U_theory=V, U_gd=2 * V, heads=(4, 4)).outcome is HOLDS
    assert os_claims.pattern_transfer("8", U_theory=V, U_gd=-V, heads=(4, 4)).outcome is CONTRADICTED
    # with 2 heads per layer only 4 relabellings exist: p >= 1/4, never significant at 1 %, and the verdict says so
    A = rng.standard_normal((4, 4))
    U = A @ A.T + 0.1 * np.eye(4)
    small = os_claims.pattern_transfer("8", U_theory=U, U_gd=U, heads=(2, 2))
    assert small.outcome is NS and "not attainable with 4 relabellings" in small.measured
    # 4 heads per layer: 576 relabellings, p down to 1/576
    assert os_claims.pattern_transfer("8", U_theory=V, U_gd=V, heads=(4, 4)).p_value == pytest.approx(1 / 576)


# ---------------------------------------------------------------------------------------------------------
# the finite-width claims applied to the one-shot grid


def _sweep(U, converged, temperatures=(0.1, 0.5)):
    """A TheorySweep at the widths (10, 1000) with the given U [2, n_T, n, n] (only what the claims read)."""
    from attnpaths.experiments.sweep import TheorySweep

    U = np.asarray(U, dtype=float)
    shape = U.shape[:2]
    zeros = np.zeros(shape)
    return TheorySweep(
        widths=np.array([10, 1000]),
        temperatures=np.array(temperatures),
        U=U,
        U_layers=(U,),
        U_a=zeros,
        action=zeros,
        gradient_norm=zeros,
        hessian_min_eigenvalue=zeros + 1,
        converged=np.asarray(converged, dtype=bool),
        iterations=zeros,
        warm_started=zeros,
        solve_seconds=zeros,
        means={},
        accuracy={"test": zeros},
        mse={"test": zeros},
        names=("1,1", "1,2"),
        plot_order=(0, 1),
    )


def test_gp_approach_ratios_check_every_certified_temperature():
    from attnpaths.oneshot.temperature_grid import gp_approach_ratios

    far, near = np.array([[1.5, 0.3], [0.3, 0.6]]), np.array([[1.01, 0.0], [0.0, 0.99]])
    approach = gp_approach_ratios(_sweep([[far, far], [near, near]], [[True, True], [True, True]]))
    assert list(approach) == [0.1, 0.5] and max(approach.values()) < 0.05
    # U moving away from I at one temperature: a ratio above 1 there
    away = gp_approach_ratios(_sweep([[far, near], [near, far]], [[True, True], [True, True]]))
    assert away[0.5] > 1 > away[0.1]
    # ... unless that temperature has an uncertified point: it is left out
    partly = gp_approach_ratios(_sweep([[far, near], [near, far]], [[True, True], [True, False]]))
    assert list(partly) == [0.1]
    with pytest.raises(ValueError, match="certified"):
        gp_approach_ratios(_sweep([[far, far], [near, near]], [[True, False], [False, True]]))


def test_sample_agreements_compare_each_sampled_width_with_the_selected_saddle_point():
    from types import SimpleNamespace

    U = np.array([[1.0, 0.2], [0.2, 0.8]])
    grid = _sweep([[U, U], [U, U]], [[True, True], [True, True]])
    selection = {"accuracy": {"test": np.array([0.80, 0.85])}, "U": np.array([U, U])}
    se = np.full((2, 2), 1e-4)

    def point(width, accuracy, U_sampled):
        return SimpleNamespace(width=width, accuracy=accuracy, accuracy_mc_sd=1e-4, U=U_sampled, U_se=se)

    good = {10: point(10, 0.80, U), 1000: point(1000, 0.851, U + 0.001)}
    verdicts = os_claims.sample_agreements(
        "2", good, selection=selection, grid=grid, margin_accuracy=0.02, margin_U=0.1
    )
    assert [v.claim for v in verdicts] == ["2 (N=10)", "2 (N=1000)"]
    assert all(v.outcome is HOLDS for v in verdicts)
    # U scaled by 1.2 at N=1000, and an accuracy 5 points off at N=10: each width's claim is contradicted alone
    bad = {10: point(10, 0.75, U), 1000: point(1000, 0.85, 1.2 * U)}
    verdicts = os_claims.sample_agreements("2", bad, selection=selection, grid=grid, margin_accuracy=0.02, margin_U=0.1)
    assert [v.outcome for v in verdicts] == [CONTRADICTED, CONTRADICTED]
    with pytest.raises(ValueError, match="width"):
        os_claims.sample_agreements(
            "2", {20: point(20, 0.8, U)}, selection=selection, grid=grid, margin_accuracy=0.02, margin_U=0.1
        )
    # the power check per width: ~1 at these small Monte-Carlo errors, ~0 where the accuracy's error matches
    # its margin (the test can then not show agreement even for exact samples)
    powers = os_claims.sample_agreement_powers(good, selection=selection, grid=grid, margin_accuracy=0.02, margin_U=0.1)
    assert list(powers) == [10, 1000] and min(powers.values()) > 0.99
    noisy = {10: SimpleNamespace(width=10, accuracy=0.80, accuracy_mc_sd=0.02, U=U, U_se=se)}
    assert (
        os_claims.sample_agreement_powers(noisy, selection=selection, grid=grid, margin_accuracy=0.02, margin_U=0.1)[10]
        < 0.01
    )


def test_kernel_alignment_over_independent_draws_needs_a_consistent_difference():
    from attnpaths.experiments import finite_width as fw

    rng = np.random.default_rng(2)
    gp = 0.4 + 0.05 * rng.standard_normal(6)
    aligned = gp + 0.08 + 0.01 * rng.standard_normal(6)
    verdict = fw.kernel_alignment("4", fraction_fw=aligned, fraction_gp=gp, k=5, width=10)
    assert verdict.outcome is HOLDS and verdict.level == 0.01 and "6 data sets" in verdict.measured
    # the finite-width and GP fractions swapped: contradicted
    assert fw.kernel_alignment("4", fraction_fw=gp, fraction_gp=aligned, k=5, width=10).outcome is CONTRADICTED
    # a difference of 0.001 on one draw would pass an exact comparison; over draws whose differences scatter
    # by 0.01 it is not significant
    tiny = gp + 0.001 + 0.01 * rng.standard_normal(6)
    assert fw.kernel_alignment("4", fraction_fw=tiny, fraction_gp=gp, k=5, width=10).outcome is NS


def _correctness(n, accuracy, rng):
    """``[n]`` 1/0 correctness with exactly ``round(accuracy n)`` episodes right, in a random order."""
    out = np.zeros(n)
    out[rng.permutation(n)[: round(accuracy * n)]] = 1.0
    return out


def test_little_loss_holds_for_a_small_loss_and_is_contradicted_beyond_the_margin():
    rng = np.random.default_rng(0)
    reference = _correctness(4000, 0.83, rng)
    right = np.flatnonzero(reference == 1)
    # pruned model: the same episodes right except 1 % of them (a loss of 1 point, margin 3 points)
    small = reference.copy()
    small[right[:40]] = 0
    diff, se = oneshot_pruning.paired_difference(small, reference)
    verdict = os_claims.little_loss("7c (k=1)", difference=diff, se=se, margin=0.03, k=1, fine_tuned=False)
    assert verdict.outcome is Outcome.HOLDS and "lowest-score head " in verdict.statement
    # a loss of 8 points, beyond the margin of 3: contradicted (the paper's claim, if made at this k, is wrong)
    large = reference.copy()
    large[right[:320]] = 0
    diff, se = oneshot_pruning.paired_difference(large, reference)
    verdict = os_claims.little_loss("7c (k=2)", difference=diff, se=se, margin=0.03, k=2, fine_tuned=False)
    assert verdict.outcome is Outcome.CONTRADICTED and diff == pytest.approx(-0.08)
    # a loss at the margin cannot be told apart from it
    verdict = os_claims.little_loss("7d (k=2)", difference=-0.03, se=0.01, margin=0.03, k=2, fine_tuned=True)
    assert verdict.outcome is Outcome.NOT_SIGNIFICANT and "fine-tuning" in verdict.statement
    # a gain from pruning holds whatever the margin
    verdict = os_claims.little_loss("7d (k=1)", difference=0.02, se=0.01, margin=0.01, k=1, fine_tuned=True)
    assert verdict.outcome is Outcome.HOLDS
    with pytest.raises(ValueError, match="margin"):
        os_claims.little_loss("7c", difference=0.0, se=0.01, margin=3, k=1, fine_tuned=False)


@pytest.mark.usefixtures("long_computation")
def test_little_loss_power_is_the_chance_of_holding_at_no_loss():
    # margin / se - z_c = 0: a coin flip; far above: certain; and it rises as the standard error shrinks
    zc = 2.3263478740408408  # Phi^{-1}(0.99)
    assert os_claims.little_loss_power(0.01, 0.01 * zc, 0.01) == pytest.approx(0.5)
    assert os_claims.little_loss_power(0.001, 0.03, 0.01) > 0.999999
    assert os_claims.little_loss_power(0.02, 0.03) < os_claims.little_loss_power(0.01, 0.03)
    # the power is what the test does: at a true loss of 0, draws of the estimate hold with that frequency
    rng = np.random.default_rng(1)
    se, margin = 0.015, 0.03
    holds = [
        os_claims.little_loss("7c", difference=d, se=se, margin=margin, k=1, fine_tuned=False).holds
        for d in rng.normal(0.0, se, 4000)
    ]
    assert np.mean(holds) == pytest.approx(os_claims.little_loss_power(se, margin), abs=0.03)


# ------------------------------------------------------------------------- interplay, entropy weight, 1/N approach
def _predictors(right_fraction, labels, rng):
    """A predictor right on the first ``right_fraction`` of the points (nested: a more accurate one is right wherever
    a less accurate one is)."""
    right = np.arange(labels.size) < int(right_fraction * labels.size)
    return np.where(right, labels, -labels) * (0.5 + rng.random(labels.size))


def test_interplay_gains_hold_for_a_real_gain_and_are_contradicted_when_the_ablation_does_better():
    rng = np.random.default_rng(0)
    labels = rng.choice([-1.0, 1.0], size=2000)
    means = {
        "theory": _predictors(0.9, labels, rng),
        "diagonal": _predictors(0.8, labels, rng),
        "gp": _predictors(0.7, labels, rng),
    }
    cross, same = os_claims.interplay_gains("I", means=means, labels=labels, width=10)
    assert (cross.claim, same.claim) == ("I", "Iw") and cross.outcome is HOLDS and same.outcome is HOLDS
    assert cross.value == pytest.approx(0.1) and same.value == pytest.approx(0.1)
    # the cross-path weights costing accuracy (the diagonal alone does better) is contradicted, not hidden
    swapped = dict(means, theory=means["diagonal"], diagonal=means["theory"])
    cross, same = os_claims.interplay_gains("I", means=swapped, labels=labels, width=10)
    assert cross.outcome is CONTRADICTED and same.outcome is HOLDS
    power = os_claims.interplay_power(means, labels)
    assert power.cases == ("I", "Iw") and max(power.detectable) < 0.05
    with pytest.raises(ValueError, match="labels"):
        os_claims.interplay_gains("I", means={k: np.zeros(0) for k in means}, labels=np.zeros(0), width=10)
    with pytest.raises(ValueError, match="diagonal"):
        os_claims.interplay_gains("I", means={"theory": means["theory"], "gp": means["gp"]}, labels=labels, width=10)


def _saddle_family(widths, scales, n=4, seed=0):
    """Saddle points ``U(N, c) = U0 + (1 - c) G / N`` (a smaller entropy weight moves U further from its GP value)."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n))
    U0 = A @ A.T / n + np.eye(n)
    G = np.diag(rng.random(n) + 0.5) + 0.1
    return {w: {float(c): U0 + 20 * (1 - c) * G / w for c in scales} for w in widths}


def _points(U_by_width, se=1e-3, seed=1):
    from types import SimpleNamespace

    rng = np.random.default_rng(seed)
    out = {}
    for w, U in U_by_width.items():
        noise = se * rng.standard_normal(U.shape)
        out[w] = SimpleNamespace(width=w, U=U + (noise + noise.T) / 2, U_se=np.full(U.shape, se))
    return out


def test_entropy_weight_claim_measures_the_weight_of_the_samples_and_contradicts_a_halved_or_doubled_entropy():
    scales = [0.5, 0.9, 1.0, 1.1, 2.0]
    saddle = _saddle_family([50, 100], scales)
    right = _points({w: saddle[w][1.0] for w in saddle})
    verdict = os_claims.entropy_weight_agreement("2w", samples=right, saddle=saddle, widths=[50, 100], margin=0.25)
    assert verdict.outcome is HOLDS
    for c in (0.5, 2.0):  # the two plausible mistakes of the entropy term
        wrong = os_claims.entropy_weight_agreement(
            "2w", samples=right, saddle=saddle, widths=[50, 100], margin=0.25, reference_scale=c
        )
        assert wrong.outcome is CONTRADICTED, c
    # samples of an action whose entropy is weighted by 1.5 (outside the margin 0.25) are contradicted too
    off = _points({w: saddle[w][1.0] + 0.5 * (saddle[w][1.1] - saddle[w][0.9]) / 0.2 for w in saddle})
    assert (
        os_claims.entropy_weight_agreement("2w", samples=off, saddle=saddle, widths=[50, 100], margin=0.25).outcome
        is CONTRADICTED
    )
    with pytest.raises(ValueError, match="widths"):
        os_claims.entropy_weight_agreement("2w", samples=right, saddle=saddle, widths=[20], margin=0.25)
    with pytest.raises(ValueError, match="entropy weight 1"):
        os_claims.entropy_weight_agreement(
            "2w",
            samples=right,
            saddle={w: {0.9: s[0.9], 1.1: s[1.1]} for w, s in saddle.items()},
            widths=[50],
            margin=0.25,
        )


@pytest.mark.parametrize(
    "power, outcome", [(1.0, HOLDS), (0.3, CONTRADICTED), (0.0, CONTRADICTED), (2.0, CONTRADICTED)]
)
def test_deviation_decay_tells_one_over_n_from_other_rates(power, outcome):
    rng = np.random.default_rng(3)
    n = 4
    U = np.eye(n) + 0.3
    direction = rng.standard_normal((n, n))
    direction = (direction + direction.T) / 2
    widths = [10, 20, 50, 100]
    samples = _points({w: U + 2.0 * direction / w**power for w in widths}, se=1e-4)
    deviation = os_claims.saddle_deviation(samples, {w: U for w in widths})
    assert deviation["N"].tolist() == widths and np.all(deviation["se"] > 0)
    verdict = os_claims.deviation_decay("2s", deviation, margin=0.5)
    assert verdict.outcome is outcome, verdict.measured
    if power == 1.0:
        assert os_claims.deviation_decay_power(deviation, margin=0.5) > 0.99


def test_saddle_deviation_removes_the_monte_carlo_part_and_the_slope_needs_three_widths():
    U = np.eye(3)
    # samples exactly at the saddle point up to their noise: the corrected distance is near 0, not the noise's size
    samples = _points({10: U, 20: U}, se=0.01, seed=4)
    deviation = os_claims.saddle_deviation(samples, {10: U, 20: U})
    raw = [np.linalg.norm(samples[w].U - U) / np.linalg.norm(U) for w in (10, 20)]
    assert np.all(deviation["r"] < np.array(raw))
    # distances within their noise cannot give a slope: the claim is not significant, with no power
    verdict = os_claims.deviation_decay("2s", deviation)
    assert verdict.outcome is NS and "not measured" in verdict.measured
    assert os_claims.deviation_decay_power(deviation) == 0.0
    with pytest.raises(ValueError, match="share a width"):
        os_claims.saddle_deviation(samples, {50: U})


def test_outcome_sentences_follow_the_weakest_verdict():
    holds, ns, contradicted = (verdict("7d (k=1)", outcome) for outcome in (HOLDS, NS, CONTRADICTED))
    assert os_claims.little_loss_outcome([holds, holds]).startswith("After brief fine-tuning the loss stays within")
    assert "cannot tell" in os_claims.little_loss_outcome([holds, ns])
    assert os_claims.little_loss_outcome([ns, contradicted]).startswith("Even after brief fine-tuning the loss exceeds")
    assert "add accuracy beyond" in os_claims.interplay_outcome(verdict("I", HOLDS))
    assert "cannot be told from zero" in os_claims.interplay_outcome(verdict("I", NS))
    assert "does better without the cross-path weights" in os_claims.interplay_outcome(verdict("I", CONTRADICTED))


def test_exact_mean_sentence_reads_every_width_and_the_chains_worst_convergence():
    comparison = {
        20: {"samples_distance": 0.0412, "saddle_distance": 0.25, "near_gp_outcome": "contradicted",
             "near_gp_statistic": 3.456},
        50: {"samples_distance": 0.0301, "saddle_distance": 0.125, "near_gp_outcome": "not significant",
             "near_gp_statistic": 0.5},
    }  # fmt: skip
    diagnostics = {20: {"max_rhat": 1.0123, "min_ess": 310.4}, 50: {"max_rhat": 1.0456, "min_ess": 150.6}}
    sentence = os_claims.exact_mean_sentence(comparison, diagnostics, margin_U=0.1, near_gp_width=1000)
    assert "(claim 2's margin: 0.1): at N = 20 the samples 0.041 and the saddle point 0.250; at N = 50" in sentence
    assert "split R-hat of at most 1.046 and an effective sample size of at least 151 per entry" in sentence
    assert sentence.endswith(
        "(N = 1000) in place of the samples, claim 2e's test is contradicted at N = 20 (largest deviation over "
        "margin 3.46), not significant at N = 50 (largest deviation over margin 0.50)."
    )
    assert "claim 2e is not tested" in os_claims.exact_mean_sentence({}, {}, margin_U=0.1, near_gp_width=1000)
    with pytest.raises(ValueError, match="same widths"):
        os_claims.exact_mean_sentence(comparison, {20: diagnostics[20]}, margin_U=0.1, near_gp_width=1000)
