"""The claims of the chapter ``exchangeability`` (E1-E4) as statistical tests (:class:`attnpaths.claims.Verdict`).

The functions take arrays, not experiment results, so that the tests can feed them deliberately wrong inputs
(a wrong closed form, a wrong exponent, a worse estimator, reversed labels), which must come out
``contradicted``. Every test is at the family-wise level ``level`` (default 1 %); the margins of equivalence
claims are part of the claim's statement, never calibrated on a run.
"""

from ..rank_test import stratified_rank_test
from ._common import all_positive, rate_verdict
from ._estimation import (
    attention_rate_verdict,
    bandwidth_rate_verdicts,
    bayes_risk_verdict,
    bias_floor_verdict,
    calibration_verdict,
    cme_decrease_verdict,
    cme_vs_softmax_verdict,
    concept_accuracy_verdict,
    first_token_verdict,
    mse_agreement_verdict,
    richer_statistic_verdict,
    softer_temperature_verdict,
    temperature_optimum_verdict,
)
from ._learning import (
    approximation_verdict,
    length_reading,
    length_verdict,
    pretraining_verdict,
    sample_size_verdict,
    softening_verdict,
    transfer_ratio_verdict,
    transfer_reading,
)

__all__ = [
    "all_positive",
    "approximation_verdict",
    "attention_rate_verdict",
    "bandwidth_rate_verdicts",
    "bayes_risk_verdict",
    "bias_floor_verdict",
    "calibration_verdict",
    "cme_decrease_verdict",
    "cme_vs_softmax_verdict",
    "concept_accuracy_verdict",
    "first_token_verdict",
    "length_reading",
    "length_verdict",
    "mse_agreement_verdict",
    "pretraining_verdict",
    "rate_verdict",
    "richer_statistic_verdict",
    "sample_size_verdict",
    "softening_verdict",
    "softer_temperature_verdict",
    "stratified_rank_test",
    "temperature_optimum_verdict",
    "transfer_ratio_verdict",
    "transfer_reading",
]
