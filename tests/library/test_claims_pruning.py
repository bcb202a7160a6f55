"""Power tests of the pruning chapter's claims (attnpaths.pruning.claims): each comparison must hold when the
theory's ranking is the better pruning guide and say "contradicted" when it is deliberately reversed."""

import numpy as np
import pytest
from helpers import verdict

from attnpaths.claims import Outcome
from attnpaths.experiments.head_pruning import all_heads, curve_auc, pruning_sets, random_orders
from attnpaths.head_scoring import pruning_order
from attnpaths.pruning import claims as pr_claims

HOLDS, NS, CONTRADICTED = Outcome.HOLDS, Outcome.NOT_SIGNIFICANT, Outcome.CONTRADICTED
HEADS = (4, 4)
SHAPE = (2, 4)  # [L, H]


def simulated_auc(seed: int, num_seeds: int = 8, num_random: int = 20):
    """Areas under pruning curves of simulated models whose heads have known importances: a model's accuracy
    falls by the importance of every head it loses (plus seed-to-seed noise in the importances). Rankings:
    the true order (least important first), the reversed true order, a noisy estimate, random orders."""
    rng = np.random.default_rng(seed)
    out = {"true": [], "reversed": [], "noisy": [], "random": []}
    for _ in range(num_seeds):
        importance = np.abs(rng.normal(0.04, 0.03, size=SHAPE))

        def curve(order):
            return np.array([0.95 - sum(importance[lh] for lh in pruned) for pruned in pruning_sets(order, HEADS)])

        truth = pruning_order(importance)
        out["true"].append(curve_auc(curve(truth)))
        out["reversed"].append(curve_auc(curve(pruning_order(importance, prune_first="highest"))))
        out["noisy"].append(curve_auc(curve(pruning_order(importance + rng.normal(0, 0.01, size=SHAPE)))))
        out["random"].append(np.mean([curve_auc(curve(o)) for o in random_orders(HEADS, num_random, rng)]))
    return {k: np.array(v) for k, v in out.items()}


def test_a_ranking_by_true_importance_holds_against_random_orders_and_a_reversed_one_is_contradicted():
    auc = simulated_auc(0)
    good = pr_claims.ranking_comparison(
        "P4", theory_auc=auc["true"], other_auc=auc["random"], other="random", num_tests=4
    )
    assert good.outcome is HOLDS and good.value > 0 and good.p_value < 0.05 / 4
    # the interval stated with the verdict is the one that decides it: above 0 when the claim holds
    low = float(good.measured.split("97.5 % interval ")[1].split(" to ")[0])
    assert low > 0
    bad = pr_claims.ranking_comparison(
        "P4", theory_auc=auc["reversed"], other_auc=auc["random"], other="random", num_tests=4
    )
    assert bad.outcome is CONTRADICTED and bad.value < 0
    # against a good baseline (a noisy estimate of the importances), the reversed ranking is contradicted too
    versus = pr_claims.ranking_comparison(
        "P1", theory_auc=auc["reversed"], other_auc=auc["noisy"], other="michel", num_tests=4
    )
    assert versus.outcome is CONTRADICTED
    assert "on 0 of 8 seeds" in versus.measured


def test_equal_rankings_are_not_significant_and_bonferroni_costs_power():
    rng = np.random.default_rng(3)
    base = rng.uniform(0.7, 0.8, size=6)
    noise = pr_claims.ranking_comparison(
        "P2", theory_auc=base + rng.normal(0, 0.01, 6), other_auc=base, other="entropy"
    )
    assert noise.outcome is NS
    # a small consistent advantage: significant alone, not after a correction over many comparisons
    small = base + 0.01 + rng.normal(0, 0.008, 6)
    alone = pr_claims.ranking_comparison("P3", theory_auc=small, other_auc=base, other="norm", level=0.05)
    corrected = pr_claims.ranking_comparison(
        "P3", theory_auc=small, other_auc=base, other="norm", level=0.05, num_tests=200
    )
    assert alone.outcome is HOLDS and corrected.outcome is NS
    assert corrected.correction == "Bonferroni over 200 tests"


def test_ranking_verdicts_names_each_comparison_and_checks_its_input():
    auc = simulated_auc(1, num_seeds=6)
    verdicts = pr_claims.ranking_verdicts(
        {
            "theory": auc["reversed"],
            "michel": auc["true"],
            "entropy": auc["noisy"],
            "norm": auc["noisy"],
            "random": auc["random"],
            "michel_iterative": auc["true"],
            "fisher": auc["noisy"],
        },
        prefix="M",
        num_tests=8,
        where=" (simulated)",
    )
    # the claim ids of the first four comparisons stay those of the earlier chapter; the later ones follow
    assert [v.claim for v in verdicts] == ["M1", "M2", "M3", "M4", "M5", "M6"]
    assert "re-estimated" in verdicts[4].statement and "Fisher" in verdicts[5].statement
    assert all(v.outcome is CONTRADICTED for v in verdicts)
    assert "gradient importance" in verdicts[0].statement and verdicts[0].statement.endswith("(simulated)")
    assert all(v.correction == "Bonferroni over 8 tests" for v in verdicts)
    with pytest.raises(ValueError, match="auc must hold"):
        pr_claims.ranking_verdicts({"theory": auc["true"]})
    with pytest.raises(ValueError, match="other must be"):
        pr_claims.ranking_comparison("P1", theory_auc=auc["true"], other_auc=auc["true"], other="theory")
    with pytest.raises(ValueError, match="same number"):
        pr_claims.ranking_comparison("P1", theory_auc=auc["true"], other_auc=auc["true"][:3], other="norm")


def test_the_simulation_orders_every_head():
    assert sorted(pruning_order(np.arange(8.0).reshape(SHAPE))) == all_heads(HEADS)


def test_near_threshold_names_the_comparisons_decided_close_to_the_corrected_level():
    from attnpaths.pruning.claims import near_threshold

    family = dict(statistic="stat", level=0.05, correction="Bonferroni over 8 tests", value=0.0, z=0.0)
    found = near_threshold(
        [verdict(c, NS, p_value=p, **family) for c, p in zip("ABCD", [0.9974, 0.5, 0.003, 1e-6])],
        level=0.05,
        num_tests=8,
    )
    assert [c for c, _, _ in found] == ["A", "C"] and found[0][2] == pytest.approx(0.05 / 8)
    assert found[0][1] == pytest.approx(0.0026)
    with pytest.raises(ValueError, match="factor"):
        near_threshold([], level=0.05, num_tests=8, factor=1.0)


def simulated_families(seed: int, *, theory_shift: float, num_seeds: int = 12, num_splits: int = 5):
    """Normalised areas ``[S, R]`` on the validation and the test images of ``R`` splits for two families of two
    scores each: in every family one good score and one poor one; the theory family's good score is better than
    the practical family's by ``theory_shift``. A seed's quality is shared by its splits (the splits of one seed
    share a model); validation and test differ by independent noise."""
    rng = np.random.default_rng(seed)
    seed_effect = rng.normal(0, 0.05, size=(num_seeds, 1))
    truth = {"theory_loo": 0.6 + theory_shift, "theory": 0.1, "fisher": 0.6, "norm": 0.2}
    validation, test = {}, {}
    for name, mean in truth.items():
        common = mean + seed_effect + rng.normal(0, 0.05, size=(num_seeds, 1))
        validation[name] = common + rng.normal(0, 0.03, size=(num_seeds, num_splits))
        test[name] = common + rng.normal(0, 0.03, size=(num_seeds, num_splits))
    return validation, test


@pytest.mark.parametrize("shift, outcome", [(0.15, HOLDS), (0.0, NS), (-0.15, CONTRADICTED)])
def test_the_family_comparison_finds_the_better_family_and_is_fair_when_they_are_equal(shift, outcome):
    validation, test = simulated_families(4, theory_shift=shift)
    picks = {
        f: pr_claims.family_choice(validation, test, members)
        for f, members in {"theory": ("theory", "theory_loo"), "practical": ("norm", "fisher")}.items()
    }
    # each family picks its good score for every seed in every split
    assert picks["theory"][0] == [["theory_loo"] * 12] * 5 and picks["practical"][0] == [["fisher"] * 12] * 5
    np.testing.assert_array_equal(picks["theory"][1], test["theory_loo"])
    beats, _ = pr_claims.family_verdicts(
        "F",
        theory=picks["theory"][1].mean(axis=1),
        practical=picks["practical"][1].mean(axis=1),
        theory_choices=picks["theory"][0],
        practical_choices=picks["practical"][0],
        margin=0.1,
        num_tests=4,
    )
    assert beats.outcome is outcome


def test_the_family_choice_reads_only_the_validation_images():
    validation, test = simulated_families(5, theory_shift=0.0)
    choices, areas = pr_claims.family_choice(validation, test, ("theory", "theory_loo"))
    # a test set on which the poor score looks best changes nothing in the choice, only what is judged
    flipped = {**test, "theory": test["theory"] + 10.0}
    again, judged = pr_claims.family_choice(validation, flipped, ("theory", "theory_loo"))
    assert again == choices and np.array_equal(judged, areas)
    # a split whose validation images favour the other score chooses it there, and only there
    tilted = {**validation, "theory": validation["theory"].copy()}
    tilted["theory"][:, 2] += 10.0
    split_choices, split_areas = pr_claims.family_choice(tilted, test, ("theory", "theory_loo"))
    assert [set(c) for c in split_choices] == [
        {"theory_loo"},
        {"theory_loo"},
        {"theory"},
        {"theory_loo"},
        {"theory_loo"},
    ]
    np.testing.assert_array_equal(split_areas[:, 2], test["theory"][:, 2])
    assert pr_claims.choice_counts(split_choices).startswith("theory's leave-one-out change in 48 of 60 choices")
    assert pr_claims.most_chosen(split_choices) == "theory_loo"
    # one seed whose validation images favour the other score chooses it for itself alone: no seed's choice reads
    # another seed's images
    one_seed = {**validation, "theory": validation["theory"].copy()}
    one_seed["theory"][3, :] += 10.0
    seed_choices, seed_areas = pr_claims.family_choice(one_seed, test, ("theory", "theory_loo"))
    assert all(c[3] == "theory" and c[:3] + c[4:] == ["theory_loo"] * 11 for c in seed_choices)
    np.testing.assert_array_equal(seed_areas[3], test["theory"][3])
    np.testing.assert_array_equal(np.delete(seed_areas, 3, axis=0), np.delete(test["theory_loo"], 3, axis=0))
    with pytest.raises(ValueError, match="candidates"):
        pr_claims.family_choice(validation, test, ("michel",))
    with pytest.raises(ValueError, match=r"\[S, R\]"):
        pr_claims.family_choice({"a": np.zeros(3)}, {"a": np.zeros(3)}, ("a",))
