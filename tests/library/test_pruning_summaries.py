"""The numbers and sentences the pruning chapter quotes (attnpaths.pruning.sweep.PruningSweep's summaries,
attnpaths.pruning.claims' sentences), on a hand-built sweep whose areas are known exactly."""

from types import SimpleNamespace

import numpy as np
import pytest

from attnpaths.claims import Outcome
from attnpaths.pruning import claims as pr_claims
from attnpaths.pruning.sweep import PruningSweep

S, R = 3, 2
BEST = np.array([1.0, 0.9, 0.8])  # area (0.95 + 0.85) / 2 = 0.9
RANDOM = np.array([1.0, 0.5, 0.3])  # area (0.75 + 0.4) / 2 = 0.575


def curves_at(fraction):
    """``[K + 1]`` the curve a fraction of the way from the random expectation to the ceiling: normalised area
    ``fraction``."""
    return RANDOM + fraction * (BEST - RANDOM)


def small_sweep(chosen_T=(0.1, 0.1, 0.3), width_converged=(True, True, False)) -> PruningSweep:
    """Two rankings on ``S`` seeds and ``R`` splits: ``"theory"`` half way to the ceiling in split 0 and at the
    ceiling in split 1 (normalised area 0.75 per seed), ``"michel"`` at the random expectation. The scans: the
    paper's score at 0.2 and 0.6 at the two temperatures, the removal score at 0.4; at the one width, 1.0 where
    certified."""
    theory = np.stack([curves_at(0.5), curves_at(1.0)])  # [R, K + 1]
    per_seed = np.stack([theory, np.stack([RANDOM, RANDOM])], axis=1)  # [R, 2, K + 1]
    curves = np.broadcast_to(per_seed, (S, R, 2, 3)).copy()
    references = {name: np.broadcast_to(c, (S, R, 3)).copy() for name, c in (("random", RANDOM), ("best", BEST))}
    scan = np.stack([np.stack([curves_at(0.2), curves_at(0.4)]), np.stack([curves_at(0.6), curves_at(0.4)])])
    width_curves = np.broadcast_to(np.stack([curves_at(1.0)] * 2)[None, None], (S, 1, 2, 3)).copy()
    width_curves[~np.array(width_converged)] = np.nan
    order = [(0, 0), (1, 1)]
    return PruningSweep(
        rankings=("theory", "michel"),
        heads=(2, 2),
        curves={split: curves for split in ("validation", "test")},
        random={split: references["random"] for split in ("validation", "test")},
        best={split: references["best"] for split in ("validation", "test")},
        held_out={"base": np.array([0.9, 0.8, 1.0]), "random": np.tile(RANDOM, (S, 1)), "best": np.tile(BEST, (S, 1))},
        scores={"theory": np.zeros((S, 2, 2))},
        orders={"theory": [order] * S},
        split_orders={"greedy": [[order] * R] * S},
        fisher_sets=[[[], [(1, 0)], [(1, 0), (0, 1)]]] * S,
        train_loss=np.zeros(S),
        attention_error=np.zeros(S),
        theory={"temperature": np.array(chosen_T), "held_out_accuracy": np.array([0.5, 0.6, 0.7])},
        theory_scan={
            "temperatures": np.array([0.1, 0.3]),
            "converged": np.array([[True, True], [True, False], [True, True]]),
            "curves": np.broadcast_to(scan, (S, 2, 2, 3)).copy(),
        },
        width_scan={
            "widths": np.array([64.0]),
            "converged": np.array(width_converged)[:, None],
            "curves": width_curves,
        },
        seconds={"training": np.zeros(S)},
        cost_seconds={"table": np.zeros(S)},
        weights=[None] * S,
    )


def test_the_summary_holds_the_base_accuracy_and_every_rankings_mean_area():
    summary = small_sweep().summary("test")
    assert list(summary)[:3] == ["base", "base_min", "base_max"]
    np.testing.assert_allclose([summary["base"], summary["base_min"], summary["base_max"]], [90.0, 80.0, 100.0])
    np.testing.assert_allclose([summary["best_auc"], summary["random_auc"], summary["michel_auc"]], [90, 57.5, 57.5])
    # split 0 half way, split 1 at the ceiling: the mean over the splits
    np.testing.assert_allclose(summary["theory_auc"], 100 * (0.575 + 0.75 * 0.325))
    np.testing.assert_allclose([summary[f"{n}_nauc"] for n in ("theory", "michel", "random", "best")], [0.75, 0, 0, 1])


def test_the_scans_are_normalised_on_every_held_out_image_and_keep_uncertified_points_out():
    sweep = small_sweep()
    scan = sweep.normalised_scan("theory_scan")
    assert scan.shape == (S, 2, 2)
    np.testing.assert_allclose(scan[0], [[0.2, 0.4], [0.6, 0.4]])
    width = sweep.normalised_scan("width_scan")
    np.testing.assert_allclose(width[:2], 1.0)
    assert np.isnan(width[2]).all()
    with pytest.raises(ValueError, match="scan must be"):
        sweep.normalised_scan("curves")


def test_the_sensitivity_summary_ranges_over_the_scans_and_counts_what_it_cannot_use():
    summary = small_sweep().sensitivity_summary()
    assert summary["edge"] == 2  # two seeds chose the lowest temperature of the grid
    np.testing.assert_allclose([summary["theory_scan_min"], summary["theory_scan_max"]], [0.2, 0.6])
    np.testing.assert_allclose([summary["theory_removal_scan_min"], summary["theory_removal_scan_max"]], 0.4)
    np.testing.assert_allclose([summary["theory_width_min"], summary["theory_width_max"]], 1.0)
    assert summary["uncertified"] == 2  # one temperature point and one width point
    np.testing.assert_allclose(summary["theory_acc"], 60.0)


def test_the_results_record_holds_the_areas_and_the_orders_as_labels():
    sweep = small_sweep()
    record = sweep.to_dict()
    assert "weights" not in record and record["heads"] == [2, 2]
    np.testing.assert_allclose(record["normalised_auc"]["theory"], [0.75] * S)
    assert record["normalised_auc_splits"]["theory"].shape == (S, R)
    np.testing.assert_allclose(record["auc"]["best"], [0.9] * S)
    assert record["orders"]["theory"][0] == ["(1)1", "(2)2"] and record["orders"]["greedy"][0][1] == ["(1)1", "(2)2"]
    assert record["fisher_sets"][0] == [[], ["(2)1"], ["(2)1", "(1)2"]]
    np.testing.assert_allclose(record["theory_scan"]["normalised_auc"], sweep.normalised_scan("theory_scan"))
    assert set(record["curves"]) == {"validation", "test"} and set(record["curves"]["test"]) == {
        "theory",
        "michel",
        "random",
        "best",
    }


def test_the_answer_sentence_says_what_the_verdicts_decided_with_the_areas():
    sentence = pr_claims.answer_sentence("summed-head transformer", "loses", [0.2, 0.4], [0.5, 0.7])
    assert sentence == (
        "For the summed-head transformer, the best theory score (chosen on the validation images) loses to the "
        "practical family's: normalised area 0.30 against 0.60, mean difference -0.30."
    )
    for answer in ("beats", "matches", "undecided"):
        assert pr_claims.ANSWER_WORDS[answer] in pr_claims.answer_sentence("m", answer, [0.1, 0.2], [0.1, 0.2])
    with pytest.raises(ValueError, match="answer must be one of"):
        pr_claims.answer_sentence("m", "wins", [0.1, 0.2], [0.1, 0.2])


def test_every_primary_answer_has_its_words():
    for beats in Outcome:
        for matches in Outcome:
            verdicts = (SimpleNamespace(outcome=beats), SimpleNamespace(outcome=matches))
            assert pr_claims.primary_answer(*verdicts) in pr_claims.ANSWER_WORDS


def test_the_why_sentence_places_the_papers_score_against_the_others():
    normalised = {"theory": [0.1, 0.3], "michel": [0.5, 0.5], "theory_trained": [0.4, 0.4]}
    sentence = pr_claims.why_sentence(normalised, {"theory": [0.6, 0.6], "practical": [0.2, 0.2]})
    assert "stands at 0.20, above the random expectation, below the gradient importance" in sentence
    assert "(0.50) and level with the best practical score (0.20); the best theory score reaches 0.60" in sentence
    assert sentence.endswith(
        "reading the trained value weights is not what makes the difference: the paper's score applied to the "
        "trained path weights reaches 0.40."
    )
    trained_best = pr_claims.why_sentence(
        {**normalised, "theory_trained": [0.7, 0.7]}, {"theory": [0.6], "practical": [0.2]}
    )
    assert trained_best.endswith("them; the paper's score applied to the trained path weights reaches 0.70.")
    with pytest.raises(ValueError, match="michel"):
        pr_claims.why_sentence({"theory": [0.1]}, {"theory": [0.6], "practical": [0.2]})


def test_the_near_threshold_sentence_names_each_close_call_or_says_there_is_none():
    assert pr_claims.near_threshold_sentence([]) == (
        "No secondary comparison is decided within a factor 3 of the corrected threshold."
    )
    sentence = pr_claims.near_threshold_sentence([("MHA1", 0.0061, 0.0042), ("SUM2", 0.002, 0.0042)])
    assert sentence.startswith(
        "Decided within a factor 3 of the corrected threshold: MHA1 (p = 0.0061 against 0.0042), "
        "SUM2 (p = 0.002 against 0.0042). These outcomes rest on the trained models"
    )
