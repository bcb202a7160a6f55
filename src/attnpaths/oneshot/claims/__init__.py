"""Claims about the trained one-shot model (Fig. 3c, e, f), as tests.

Each function returns a :class:`attnpaths.claims.Verdict` decided by permutation p-values:

* :func:`head_scores_predict_drops`: heads with low theory scores cost little accuracy when pruned singly
  (Spearman correlation of score and drop, exact permutation test over all pairings);
* :func:`pruning_order`: pruning heads in ascending score order keeps more accuracy than random orders
  (exact p-value over every random order, from the table of every set of pruned heads);
* :func:`pattern_transfer`: the theory's order-parameter pattern is found in the gradient-descent weights
  (correlation of the patterns against every relabelling of the heads within their layers).

:func:`little_loss` (with its power check :func:`little_loss_power`) is decided by a one-sided z-test instead: pruning
the lowest-score heads costs at most a stated margin of accuracy (non-inferiority to the unpruned model).

A permutation test with ``m`` equally likely arrangements cannot give a p-value below ``1 / m``; where the
level lies below it, the verdict says that the level is not attainable (and cannot hold).

The chapter's claims about the theory are those of :mod:`attnpaths.experiments.finite_width`, applied to the
one-shot grid by :func:`sample_agreements` (with its power check :func:`sample_agreement_powers`), and:

* :func:`interplay_gains`: the cross-path weights of ``U`` add accuracy, and its same-path weights alone beat the
  GP limit (paired z-tests on the test episodes, power check :func:`interplay_power`);
* :func:`entropy_weight_agreement`: the samples measure the action's entropy weight as 1 against the saddle point;
* :func:`deviation_decay`: the samples approach the saddle point like ``1 / N`` (:func:`saddle_deviation`, power
  check :func:`deviation_decay_power`).

Over trained models and draws of the theory's training episodes (:mod:`attnpaths.oneshot.replicates`), each
statistic averaged over the draws of its model (:func:`model_means`) and tested over the models with
:func:`attnpaths.claims.replicate_t`: :func:`advantage_over_models` (claim 1), :func:`interplay_over_models` (I, Iw),
:func:`alignment_over_models` (4), :func:`order_over_models` (7b), :func:`best_set_over_models` (7c, against the best
set of heads of the same size), :func:`transfer_over_models` (8) and :func:`finite_width_against` (the transfer and the
pruning order of finite width against another ``U``), with the power check :func:`replicate_power`.
"""

from ._pruning import (
    attainability,
    head_scores_predict_drops,
    little_loss,
    little_loss_power,
    pattern_transfer,
    pruning_order,
    smallest_order_p_value,
)
from ._replicates import (
    advantage_over_models,
    alignment_over_models,
    best_set_over_models,
    finite_width_against,
    interplay_over_models,
    model_means,
    order_over_models,
    order_parameter_name,
    replicate_power,
    transfer_over_models,
)
from ._theory import (
    SaddleReference,
    deviation_decay,
    deviation_decay_power,
    entropy_weight_agreement,
    interplay_gains,
    interplay_power,
    saddle_deviation,
    sample_agreement_powers,
    sample_agreements,
)

__all__ = [
    "SaddleReference",
    "advantage_over_models",
    "alignment_over_models",
    "attainability",
    "best_set_over_models",
    "deviation_decay",
    "deviation_decay_power",
    "entropy_weight_agreement",
    "finite_width_against",
    "head_scores_predict_drops",
    "interplay_gains",
    "interplay_over_models",
    "interplay_power",
    "little_loss",
    "little_loss_power",
    "model_means",
    "order_over_models",
    "order_parameter_name",
    "pattern_transfer",
    "pruning_order",
    "replicate_power",
    "saddle_deviation",
    "sample_agreement_powers",
    "sample_agreements",
    "smallest_order_p_value",
    "transfer_over_models",
]
