"""Minimising the action (eq-action), predictor statistics (eq-predictor), GP limit (eq-gp), head scores.

Public entry point::

    from attnpaths.theory import solve
    sol = solve(features, targets, heads=(H_1, ..., H_L), width=N, temperature=T, variances=1.0)
    mean, var = sol.predict(features_test)

With many more examples than ``D = N0 n_paths`` features the energy takes the Gram route (``attnpaths.gram``):
after one pass over the features every Newton step costs the same whatever ``P``, and the features can be streamed::

    stats = GramStatistics()
    for features, y in chunks:
        stats.update(features, y)
    sol = solve_from_statistics(stats, heads=(H_1, ..., H_L), width=N, temperature=T)

The minimiser works on log-Cholesky coordinates ``U_l = L_l L_l^T`` (``L_l`` lower triangular with a positive,
exponentiated diagonal), so every iterate is positive definite by construction and no step can produce NaN.
It is a trust-region Newton method with the exact Hessian: the derivatives of the energy and of the entropy
with respect to the matrices ``U_l`` are analytic (:class:`attnpaths.action.EnergyEvaluator`,
:func:`attnpaths.action.entropy_terms`) and the chain rule to the Cholesky coordinates is exact.
"""

from ._architecture import architecture, parse_variances, parse_widths
from ._coordinates import CholeskyCoordinates
from ._minimise import (
    CertificateWarning,
    classification_accuracy,
    solve,
    solve_from_statistics,
)
from ._solution import TheorySolution

__all__ = [
    "CertificateWarning",
    "CholeskyCoordinates",
    "TheorySolution",
    "architecture",
    "classification_accuracy",
    "parse_variances",
    "parse_widths",
    "solve",
    "solve_from_statistics",
]
