"""Claims of the one-shot chapter (Fig. 3), as tests; each function returns a :class:`attnpaths.claims.Verdict`
(the ``*_outcome`` and ``*_sentence`` functions: the Markdown text that states an outcome).

About the trained model: the head scores predict the single-head drops, the score order beats random pruning orders
and the theory's pattern transfers to the weights (permutation p-values: a test with ``m`` equally likely arrangements
cannot give a p-value below ``1 / m``, and a verdict says where its level is not attainable); pruning the lowest-score
heads costs little (a one-sided non-inferiority z-test).

About the theory: the samples against the saddle point (the claims of :mod:`attnpaths.experiments.finite_width` on
the one-shot grid), the interplay of paths, the entropy weight and the ``1 / N`` approach to the saddle point.

Over trained models and draws of the theory's training episodes (:mod:`attnpaths.oneshot.replicates`): each
statistic averaged over the draws of its model (:func:`model_means`) and tested over the models with
:func:`attnpaths.claims.replicate_t`. Every claim has its power check beside it.
"""

from ._pruning import (
    attainability,
    head_scores_predict_drops,
    little_loss,
    little_loss_outcome,
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
    interplay_outcome,
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
    exact_mean_sentence,
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
    "exact_mean_sentence",
    "finite_width_against",
    "head_scores_predict_drops",
    "interplay_gains",
    "interplay_outcome",
    "interplay_over_models",
    "interplay_power",
    "little_loss",
    "little_loss_outcome",
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
