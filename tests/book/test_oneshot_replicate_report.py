"""Tests of the one-shot chapter's tables and sentences of the replicates (attnpaths_book.oneshot_report): each row
carries the numbers it is given, and the sentence on the best sets of heads says whether any ranking could keep the
loss within the margin; and the replicates of the smoke and paper profiles are models that ship."""

import numpy as np
import pytest
from book_helpers import oneshot_dataset, oneshot_training
from helpers import ROOT

from attnpaths.claims import replicate_t
from attnpaths.oneshot.claims import pruning_order
from attnpaths.oneshot.replicates import ModelReplicates
from attnpaths_book import oneshot_report as report


def _model(seed, *, value, best_accuracy=(0.79, 0.75)):
    draws = np.array([value, value + 0.01])
    return ModelReplicates(
        index=seed - 42,
        seed=seed,
        temperature=np.array([0.5, 0.25]),
        gp_temperature=np.array([0.1, 0.1]),
        accuracy={"theory": 0.8 + draws, "diagonal": 0.7 + draws, "gp": np.full(2, 0.75)},
        label_fraction={"finite_width": 0.2 + draws, "gp": np.full(2, 0.05)},
        transfer={"theory": 0.5 + draws, "near the GP limit": np.full(2, 0.4)},
        transfer_excess={"theory": draws, "near the GP limit": np.zeros(2)},
        order_gain={"theory": draws, "near the GP limit": np.zeros(2)},
        best_gap={"theory": np.zeros((2, 2))},
        ks=(1, 2),
        base_accuracy=0.8,
        best_accuracy=np.array(best_accuracy),
        seconds={},
    )


def test_replicate_table_has_one_row_per_model_with_its_means_over_the_draws():
    table = report.replicate_table([_model(42, value=0.02), _model(43, value=0.04)]).splitlines()
    assert len(table) == 4 and table[0].startswith("| training seed | draws | T (theory) | T (GP) |")
    # seed 42: theory 0.825 on average, its temperatures 0.25 and 0.5, the pattern correlation 0.525
    assert table[2].startswith("| 42 | 2 | 0.25, 0.5 | 0.1 | 82.5 % | 72.5 % | 75.0 % | 0.225 / 0.050 | +0.525 |")
    assert table[3].endswith("| +4.5 |")


def test_order_parameter_table_names_each_order_parameter_with_its_outcomes():
    models = [_model(42, value=0.02), _model(43, value=0.04)]
    verdicts = {
        name: tuple(
            replicate_t(claim, "s", source="x", statistic="d", differences=[0.01, 0.02]) for claim in ("8", "7b")
        )
        for name in models[0].theories
    }
    rows = report.order_parameter_table(models, verdicts).splitlines()[2:]
    assert rows[0].startswith("| the theory's U | +0.535 | +0.015 (not significant) | +1.5 (not significant) |")
    assert rows[1].startswith("| U near the GP limit | +0.400 |")


def test_order_width_table_lists_each_width_with_its_exact_p_value():
    heads = (2, 2)
    values = np.zeros(16)
    values[[0, 1, 2, 4, 5, 6, 8, 9, 10]] = np.linspace(0.9, 0.5, 9)  # the sets that keep a head per layer
    verdicts = [
        pruning_order(f"7b (N={w})", score_order=[(0, 0), (0, 1), (1, 0), (1, 1)], values=values, heads=heads)
        for w in (10, 100)
    ]
    rows = report.order_width_table([10, 100], [0.5, 0.25], verdicts).splitlines()[2:]
    assert rows[0].startswith(f"| 10 | 0.5 | {100 * verdicts[0].value:.1f} % | {verdicts[0].p_value:.3g} |")
    assert rows[1].startswith("| 100 | 0.25 |")


def test_best_set_sentence_says_when_no_ranking_could_keep_the_loss_within_the_margin():
    within = report.best_set_sentence([_model(42, value=0.0), _model(43, value=0.0)], 0.03)
    assert "k = 1: 1.0 points" in within and "k = 2: 5.0 points" in within
    assert "At k = 2 that is more than the margin of 3 points: no ranking" in within
    cheap = report.best_set_sentence([_model(42, value=0.0, best_accuracy=(0.79, 0.78))], 0.03)
    assert "Every best set stays within the margin of 3 points." in cheap


@pytest.mark.parametrize("profile", ["smoke", "paper"])
def test_the_replicates_of_the_smoke_and_paper_profiles_are_shipped_models(profile):
    """The replicates start with the chapter's model, and every model of them ships, so that neither profile trains
    a model (python -m attnpaths_book ship-weights oneshot --profile P ships the seeds of retrain_seeds)."""
    from attnpaths_book import trained as shipped
    from attnpaths_book.chapters import book_chapters, find_chapter, resolve_parameters
    from attnpaths_book.layout import BookLayout

    p = resolve_parameters(find_chapter(book_chapters(BookLayout(ROOT)), "oneshot"), profile)
    assert p["replicate_seeds"][0] == p["train_seed"] and len(p["replicate_seeds"]) >= (5 if profile == "paper" else 2)
    assert set(p["replicate_seeds"]) <= {p["train_seed"], *p["retrain_seeds"]}
    if profile == "paper":
        assert p["replicate_draws"] >= 5
    dataset = oneshot_dataset(p)
    config = oneshot_training(p)
    assert shipped.shipped_oneshot_models(config, dataset, p["replicate_seeds"]) is not None
