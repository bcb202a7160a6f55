"""What the chapter's claims share: paired differences and the forms of their tests."""

from __future__ import annotations

import numpy as np

from ..._validation import as_float64_array
from ...claims import LEVEL, Verdict, directional_z, equivalence
from ...statistics import loglog_slope_with_se


def _paired(a, b, name_a: str, name_b: str) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error of ``a - b`` along the last axis (paired per-sequence errors ``[..., n]``)."""
    a, b = as_float64_array(a, name_a), as_float64_array(b, name_b)
    if a.shape != b.shape or a.shape[-1] < 2:
        raise ValueError(f"{name_a} and {name_b} must have the same shape [..., n >= 2], got {a.shape} and {b.shape}")
    d = a - b
    return d.mean(axis=-1), d.std(axis=-1, ddof=1) / np.sqrt(d.shape[-1])


def _vectors(**arrays) -> tuple[np.ndarray, ...]:
    """Each keyword argument as a 1-D float64 array, named by its keyword in the errors."""
    return tuple(as_float64_array(value, name, ndim=1) for name, value in arrays.items())


def all_positive(
    claim: str, statement: str, *, source: str, statistic: str, estimates, ses, labels, level: float = LEVEL
) -> Verdict:
    """The claim "every estimate is > 0" (an intersection of one-sided z-tests, Bonferroni over the entries).

    It is decided on the entry with the smallest ``z = estimate / se``: holds when even that one clears
    ``Phi^{-1}(1 - level / m)``; contradicted when it falls below the negative threshold (some entry is
    significantly negative); not significant otherwise.
    """
    est, se = _vectors(estimates=estimates, ses=ses)
    if est.shape != se.shape or est.size == 0 or len(labels) != est.size:
        raise ValueError("estimates, ses and labels must have the same non-zero length")
    z = est / se
    worst = int(np.argmin(z))
    measured = "; ".join(f"{lab}: {e:+.3g} (s.e. {s:.2g})" for lab, e, s in zip(labels, est, se))
    return directional_z(
        claim,
        statement,
        source=source,
        statistic=f"{statistic} (weakest entry: {labels[worst]})",
        estimate=float(est[worst]),
        se=float(se[worst]),
        level=level,
        num_tests=est.size,
        measured=measured + ".",
    )


def rate_verdict(
    claim: str,
    statement: str,
    *,
    source: str,
    x,
    y,
    cov,
    expected: float,
    margin: float,
    statistic: str,
    level: float = LEVEL,
) -> Verdict:
    """A power law: the least-squares log-log slope of ``y`` in ``x`` equals ``expected`` within ``margin``, with
    the standard error of the slope from the covariance ``cov`` ``[n, n]`` of the estimates ``y``."""
    slope, se = loglog_slope_with_se(x, y, cov)
    if not se > 0:
        raise ValueError("the slope's standard error must be > 0")
    return equivalence(
        claim,
        statement,
        source=source,
        statistic=statistic,
        deviation=slope - expected,
        se=se,
        margin=margin,
        level=level,
        measured=f"slope {slope:+.3f} (s.e. {se:.3f}) against {expected:+.3g}.",
    )


def _mse_difference(mse, mse_cov, i: int, j: int) -> tuple[float, float]:
    """``mse[i] - mse[j]`` and its standard error from the covariance of the estimates (paired sequences)."""
    var = mse_cov[i, i] + mse_cov[j, j] - 2 * mse_cov[i, j]
    return float(mse[i] - mse[j]), float(np.sqrt(max(var, 0.0)))
