"""Does the head-score pipeline of the pruning chapter catch a wrong theory? Two plausible mistakes, on a small
problem (summed-head models of 2 layers of 3 heads trained for a few steps on the chapter's digits task):

* the heads of every layer mislabelled (each layer's attention read with its head index shifted by one, so every
  theory score lands on another head): the chapter's primary claim (the best theory score against the best practical score,
  both chosen on validation images) must come out contradicted, where the right theory is not contradicted;
* the GP kernel, ``U = I``, in place of the renormalised order parameter (the theory at infinite width): the paper's
  head score then gives every head of a layer the same score and carries no information. The scores that read
  the kernel of a head's paths (removal, leave-one-out) keep part of theirs: on this small problem they lose
  enough for the primary claim to come out contradicted, where the right theory is not. On the chapter's own
  models the removal and leave-one-out scores at ``U = I`` come close to the right theory's, so there the
  pipeline may not tell this mistake from the right theory through them.
"""

import numpy as np
import pytest

from attnpaths.claims import Outcome
from attnpaths.experiments.head_pruning import curve_auc, pruning_sets
from attnpaths.experiments.head_rankings import gradient_head_importance, value_norms
from attnpaths.experiments.head_subsets import best_curve, normalised_area, random_order_curve, subset_curve
from attnpaths.frozen_attention import rank_heads
from attnpaths.head_models import head_model
from attnpaths.head_scoring import pruning_order
from attnpaths.paths import path_features
from attnpaths.pruning import claims as pr_claims
from attnpaths.pruning.digits import digit_patches, held_out_splits, train_test_split
from attnpaths.pruning.exact import subset_outcomes
from attnpaths.pruning.practical import fisher_pruning_sets
from attnpaths.pruning.theory_scores import action_gate_gradients, loo_scores, removal_scores
from attnpaths.pruning.training import ModelTraining, train_model

# models trained and three theories solved per seed: under a minute alone, the slow tier. Sixteen seeds: each seed
# chooses its family's best score on its own validation images, so the primary claim's differences carry that
# choice's noise, and eight seeds leave the GP-kernel mistake undecided (a loss of 0.25 in normalised area, not
# significant at 8 seeds); the images are scikit-learn's digits
pytestmark = [pytest.mark.slow, pytest.mark.needs("tasks")]
NUM_SEEDS = 16
NUM_SPLITS = 3
THEORY = ("theory", "theory_removal", "theory_gate", "theory_loo")
PRACTICAL = ("michel", "fisher", "norm")


class HeadsShifted:
    """A model's heads with every layer's attention read one head index on (the last head's as the first's): the
    mislabelling mistake."""

    def __init__(self, view):
        self.view = view

    def __getattr__(self, name):
        return getattr(self.view, name)

    def attention_weights(self, tokens):
        return [a.roll(1, dims=1) for a in self.view.attention_weights(tokens)]

    def matrices(self, x):
        return [a.roll(1, dims=1) for a in self.view.matrices(x)]


def theory_rankings(view, train, theory_examples: int, *, width: float) -> tuple[dict, np.ndarray]:
    """The theory scores of ``view`` (the model's heads, or a wrong reading of them) as pruning orders, and the
    paper's head score ``[L, H]``."""
    x, y = train.x[:theory_examples], train.y[:theory_examples]
    held = path_features(train.x[theory_examples:], view)
    theory = rank_heads(view, x.transpose(1, 2), y, width=width, temperature=0.3, max_iterations=100)
    scores = {
        "theory": theory.head_scores,
        "theory_removal": removal_scores(theory.solution, held, train.y[theory_examples:]),
        "theory_gate": action_gate_gradients(theory.solution),
        "theory_loo": loo_scores(theory.solution),
    }
    return {name: pruning_order(s) for name, s in scores.items()}, theory.head_scores


@pytest.fixture(scope="module")
def pipeline():
    """``{variant: {split: {ranking: [S, R]}}}`` normalised areas, and ``[S]`` paper's scores ``[L, H]`` at ``U = I``."""
    data = digit_patches(2, positive_digits=(5, 6, 7, 8, 9))
    train, held_out = train_test_split(data, 500, np.random.default_rng(0))
    masks = held_out_splits(len(held_out), 200, 0, NUM_SPLITS)
    config = ModelTraining(architecture="sum_heads", width=16, qk_width=4, num_heads=3, steps=120, batch_size=64)
    areas = {}
    paper_scores = []
    # the practical scores from fewer training images: the same rankings, sooner
    practical_images = train.subset(np.arange(400))
    for seed in range(NUM_SEEDS):
        model, _ = train_model(config, train, seed)
        view = head_model(model)
        outcomes = subset_outcomes(view, held_out.x, held_out.y)
        tables = [outcomes.table({"validation": m, "test": ~m}) for m in masks]
        practical = {
            "michel": pruning_order(
                gradient_head_importance(view, practical_images.x.transpose(1, 2), practical_images.y)
            ),
            "norm": pruning_order(value_norms(view)),
        }
        variants = {
            "right": theory_rankings(view, train, 200, width=16)[0],
            "heads shifted": theory_rankings(HeadsShifted(view), train, 200, width=16)[0],
        }
        variants["U = I"], paper = theory_rankings(view, train, 200, width=float("inf"))
        paper_scores.append(paper)
        fisher_sets, _ = fisher_pruning_sets(view, practical_images.x.transpose(1, 2), practical_images.y)
        for variant, orders in variants.items():
            sets = {name: pruning_sets(o, view.heads) for name, o in {**orders, **practical}.items()}
            sets["fisher"] = fisher_sets
            for name, s in sets.items():
                for split in ("validation", "test"):
                    row = []
                    for table in tables:
                        accuracy = table.accuracy[split]
                        row.append(
                            normalised_area(
                                curve_auc(subset_curve(accuracy, s, view.heads)),
                                curve_auc(random_order_curve(accuracy, view.heads)),
                                curve_auc(best_curve(accuracy, view.heads)),
                            )
                        )
                    areas.setdefault(variant, {}).setdefault(split, {}).setdefault(name, []).append(row)
    out = {
        v: {split: {n: np.array(rows) for n, rows in by_name.items()} for split, by_name in by_split.items()}
        for v, by_split in areas.items()
    }
    return out, paper_scores


def family_verdict(areas: dict) -> tuple:
    picks = {
        f: pr_claims.family_choice(areas["validation"], areas["test"], members)
        for f, members in {"theory": THEORY, "practical": PRACTICAL}.items()
    }
    beats, _ = pr_claims.family_verdicts(
        "W",
        theory=np.nanmean(picks["theory"][1], axis=1),
        practical=np.nanmean(picks["practical"][1], axis=1),
        theory_choices=picks["theory"][0],
        practical_choices=picks["practical"][0],
        margin=0.1,
        num_tests=2,  # one model kind here, so its two primary tests (FB, FE); the chapter's two kinds make 4
    )
    return beats, picks


def test_mislabelled_heads_make_the_primary_claim_contradicted_and_the_right_theory_does_not(pipeline):
    areas, _ = pipeline
    right, _ = family_verdict(areas["right"])
    wrong, _ = family_verdict(areas["heads shifted"])
    assert right.outcome is not Outcome.CONTRADICTED, right.measured
    assert wrong.outcome is Outcome.CONTRADICTED, wrong.measured


def test_the_gp_kernel_in_place_of_u_empties_the_papers_score_and_the_primary_claim_catches_it(pipeline):
    areas, paper_scores = pipeline
    for scores in paper_scores:
        # U = I: every head of a layer lies on as many paths, so the paper's score is one number per layer
        assert np.allclose(scores, scores[:, :1]), scores
    right, _ = family_verdict(areas["right"])
    wrong, _ = family_verdict(areas["U = I"])
    assert right.outcome is not Outcome.CONTRADICTED, right.measured
    assert wrong.outcome is Outcome.CONTRADICTED, wrong.measured
