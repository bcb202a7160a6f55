"""The claims of the chapter ``exchangeability`` (E1-E4) as statistical tests.

Each function turns measured numbers into an :class:`attnpaths.claims.Verdict`: the chapters call them on their
experiments' results, and the tests call them on deliberately wrong inputs (a wrong closed form, a wrong
exponent, a worse estimator, reversed labels), which must come out ``contradicted``. The functions take arrays,
not experiment results, so that a wrong input can be built from the package's public functions.

Every test is at the family-wise level ``level`` (default 1 %). Margins of equivalence claims are part of the
claim's statement (the precision it asserts), chosen between the claimed value and the nearest competing
value, never from a calibration run.
"""

from __future__ import annotations

import numpy as np

from .._validation import as_float64_array, numpy_generator, positive_int
from ..claims import LEVEL, Verdict, directional_z, equivalence, permutation, replicate_t
from ..statistics import loglog_slope, loglog_slope_with_se

# where the claims come from (the labels of the chapters: [SRC] the paper's abstract, [SRC-2] a secondary summary)
SRC_SUFFICIENT = (
    "derived in this book (standard statistics): our instance of the abstract's claim [SRC] of a "
    "sufficient and minimal representation"
)
SRC_INFERENCE = (
    "derived in this book (delta method, ex-mse): our instance of the abstract's claim [SRC] that "
    "attention infers the conditional mean; the paper's rate could not be checked"
)
SRC_TILT = "derived in this book (tilted key law, ex-tilt)"
SRC_SMOOTHING = "textbook kernel-smoothing rates for one-dimensional keys, not taken from the paper"
SRC_CME = (
    "derived in this book (kernel ridge regression with a vanishing ridge is consistent): our reading of "
    "'CME attention' in a secondary summary [SRC-2]"
)
SRC_ERM = (
    "derived in this book: our instance of the abstract's claim [SRC] that empirical risk minimisation "
    "learns the desired parameter"
)
SRC_LENGTH_FREE = (
    "one-sided consequence, derived in this book, of the abstract's claim [SRC] that the "
    "generalisation error is independent of input sizes"
)
SRC_PROXY = (
    "derived in this book from (ex-mse); a proxy for the abstract's condition number [SRC], whose "
    "definition could not be checked"
)


def _paired(a, b, name_a: str, name_b: str) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error of ``a - b`` along the last axis (paired per-sequence errors ``[..., n]``)."""
    a, b = as_float64_array(a, name_a), as_float64_array(b, name_b)
    if a.shape != b.shape or a.shape[-1] < 2:
        raise ValueError(f"{name_a} and {name_b} must have the same shape [..., n >= 2], got {a.shape} and {b.shape}")
    d = a - b
    return d.mean(axis=-1), d.std(axis=-1, ddof=1) / np.sqrt(d.shape[-1])


def all_positive(
    claim: str, statement: str, *, source: str, statistic: str, estimates, ses, labels, level: float = LEVEL
) -> Verdict:
    """The claim "every estimate is > 0" (an intersection of one-sided z-tests, Bonferroni over the entries).

    It is decided on the entry with the smallest ``z = estimate / se``: holds when even that one clears
    ``Phi^{-1}(1 - level / m)``; contradicted when it falls below the negative threshold (some entry is
    significantly negative); not significant otherwise.
    """
    est, se = as_float64_array(estimates, "estimates", ndim=1), as_float64_array(ses, "ses", ndim=1)
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


# --------------------------------------------------------------------------------------------------------
# E1: the posterior as a representation


def bayes_risk_verdict(lengths, sq_error, theory, *, margin: float = 0.05, level: float = LEVEL) -> Verdict:
    """E1.1: the posterior mean's test risk equals the Bayes risk (ex-risk-m1) at every ``L``, within ``margin``
    (relative) of the closed form.

    Args:
        lengths: ``[J]``; sq_error: ``[J, n]`` squared test errors; theory: ``[J]`` the closed-form risk.
    """
    lengths, theory = as_float64_array(lengths, "lengths", ndim=1), as_float64_array(theory, "theory", ndim=1)
    sq = as_float64_array(sq_error, "sq_error", ndim=2)
    risk, se = sq.mean(axis=1), sq.std(axis=1, ddof=1) / np.sqrt(sq.shape[1])
    dev = risk / theory - 1
    return equivalence(
        "E1.1",
        f"the posterior mean attains the Bayes risk (ex-risk-m1) at every L, within {100 * margin:g} %",
        source=SRC_SUFFICIENT,
        statistic="test risk / closed form - 1",
        deviation=risk - theory,
        se=se,
        margin=margin * theory,
        level=level,
        measured="relative deviation " + ", ".join(f"{d:+.3f} (L = {int(L)})" for d, L in zip(dev, lengths)) + ".",
    )


def richer_statistic_verdict(sq_error_richer, sq_error_posterior, *, level: float = LEVEL) -> Verdict:
    """E1.2: least squares on all raw coordinates (sufficient, not minimal) predicts worse than the posterior:
    the paired test-risk difference, pooled over ``L`` (independent test sets per ``L``), is > 0.

    Args:
        sq_error_richer, sq_error_posterior: ``[J, n]`` squared errors on the same test sequences.
    """
    diff, se = _paired(sq_error_richer, sq_error_posterior, "sq_error_richer", "sq_error_posterior")
    total, total_se = float(diff.sum()), float(np.sqrt(np.sum(se**2)))
    return directional_z(
        "E1.2",
        "least squares on all L d raw token coordinates does not predict better than the posterior: "
        "its test risk is higher (summed over L)",
        source=SRC_SUFFICIENT,
        statistic="sum over L of the paired risk difference (least squares - posterior)",
        estimate=total,
        se=total_se,
        level=level,
        measured=f"risk difference summed over L = {total:+.4g} (per L: " + ", ".join(f"{d:+.3g}" for d in diff) + ").",
    )


def first_token_verdict(lengths, sq_error_first, sq_error_posterior, *, level: float = LEVEL) -> Verdict:
    """E1.3: the posterior of the first token alone (not sufficient) predicts worse than the full posterior: the
    paired risk difference, summed over the lengths ``L > 1`` (at ``L = 1`` the two coincide), is > 0."""
    lengths = as_float64_array(lengths, "lengths", ndim=1)
    keep = lengths > 1
    if not np.any(keep):
        raise ValueError("lengths must include some L > 1")
    first = as_float64_array(sq_error_first, "sq_error_first")
    post = as_float64_array(sq_error_posterior, "sq_error_posterior")
    diff, se = _paired(first[keep], post[keep], "sq_error_first", "sq_error_posterior")
    total, total_se = float(diff.sum()), float(np.sqrt(np.sum(se**2)))
    return directional_z(
        "E1.3",
        "the first token alone, a statistic that is not sufficient, predicts worse than the posterior "
        "of all tokens (summed over L > 1)",
        source=SRC_SUFFICIENT,
        statistic="sum over L > 1 of the paired risk difference (first token - posterior)",
        estimate=total,
        se=total_se,
        level=level,
        measured=f"risk difference summed over L > 1 = {total:+.4g}.",
    )


def calibration_verdict(
    lengths, accuracy, confidence, calibration_se, *, margin: float = 0.02, level: float = LEVEL
) -> Verdict:
    """E1.4: the concept posterior (ex-post-m2), computed as attention, is calibrated: its accuracy equals its mean
    confidence at every ``L``, within ``margin`` (absolute)."""
    acc, conf = as_float64_array(accuracy, "accuracy", ndim=1), as_float64_array(confidence, "confidence", ndim=1)
    gap = acc - conf
    return equivalence(
        "E1.4",
        f"the concept posterior computed as attention is calibrated: accuracy = mean confidence within "
        f"{margin:g} at every L",
        source="derived in this book (the posterior ex-post-m2 is exact, so calibrated)",
        statistic="accuracy - confidence",
        deviation=gap,
        se=calibration_se,
        margin=margin,
        level=level,
        measured="largest |accuracy - confidence| = " + f"{np.abs(gap).max():.4f}.",
    )


def concept_accuracy_verdict(lengths, accuracy, accuracy_se, *, level: float = LEVEL) -> Verdict:
    """E1.5: the posterior's mode recovers the concept more often at the largest ``L`` than at the smallest
    (independent sequences at each ``L``; binomial standard errors)."""
    lengths = as_float64_array(lengths, "lengths", ndim=1)
    acc, se = as_float64_array(accuracy, "accuracy", ndim=1), as_float64_array(accuracy_se, "accuracy_se", ndim=1)
    gain = float(acc[-1] - acc[0])
    gain_se = float(np.hypot(se[-1], se[0]))
    return directional_z(
        "E1.5",
        f"the posterior's mode recovers the concept more often with more tokens (L = {int(lengths[-1])} "
        f"against L = {int(lengths[0])})",
        source="derived in this book (the posterior concentrates as L grows)",
        statistic="accuracy gain",
        estimate=gain,
        se=gain_se,
        level=level,
        measured=f"accuracy {acc[0]:.3f} -> {acc[-1]:.3f}.",
    )


# --------------------------------------------------------------------------------------------------------
# E2: attention as an estimator of the conditional mean


def mse_agreement_verdict(
    lengths, rmse, rmse_se, predicted, *, min_length: int = 256, margin: float = 0.10, level: float = LEVEL
) -> Verdict:
    """E2.1: for ``L >= min_length`` the RMSE of attention with ``W = Sigma^{-1}`` agrees with the derived
    large-L formula (ex-mse) within ``margin`` (relative).

    (ex-mse) drops terms of relative order ``1/L``; the margin is the precision the claim asserts.
    """
    lengths = as_float64_array(lengths, "lengths", ndim=1)
    rmse, se = as_float64_array(rmse, "rmse", ndim=1), as_float64_array(rmse_se, "rmse_se", ndim=1)
    pred = as_float64_array(predicted, "predicted", ndim=1)
    keep = lengths >= min_length
    if not np.any(keep):
        raise ValueError(f"no length >= min_length={min_length}")
    rel = rmse[keep] / pred[keep] - 1
    return equivalence(
        "E2.1",
        f"for L >= {min_length} the RMSE of attention with W = Sigma^-1 agrees with the derived formula "
        f"(ex-mse) within {100 * margin:g} %",
        source=SRC_INFERENCE,
        statistic="RMSE / (ex-mse) - 1",
        deviation=rmse[keep] - pred[keep],
        se=se[keep],
        margin=margin * pred[keep],
        level=level,
        measured="relative deviation "
        + ", ".join(f"{d:+.3f}" for d in rel)
        + f" (L = {int(lengths[keep][0])} to {int(lengths[keep][-1])}).",
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


def attention_rate_verdict(
    lengths, mse, mse_cov, *, min_length: int = 64, expected: float = -0.5, margin: float = 0.05, level: float = LEVEL
) -> Verdict:
    """E2.2: the RMSE of attention with ``W = Sigma^{-1}`` falls as ``L^{-1/2}`` for ``L >= min_length``.

    Args:
        lengths: ``[J]``; mse: ``[J]`` mean squared errors; mse_cov: ``[J, J]`` their covariance (the lengths
            share the sequences). The RMSE's slope is half that of the MSE.
    """
    lengths, mse = as_float64_array(lengths, "lengths", ndim=1), as_float64_array(mse, "mse", ndim=1)
    cov = as_float64_array(mse_cov, "mse_cov")
    keep = lengths >= min_length
    rmse = np.sqrt(mse[keep])
    rmse_cov = cov[np.ix_(keep, keep)] / (4 * np.outer(rmse, rmse))  # delta method for the square root
    return rate_verdict(
        "E2.2",
        f"the RMSE of attention with W = Sigma^-1 falls as L^-1/2 (log-log slope {expected:+g} within "
        f"{margin:g}, L >= {min_length})",
        source=SRC_INFERENCE,
        x=lengths[keep],
        y=rmse,
        cov=rmse_cov,
        expected=expected,
        margin=margin,
        statistic="log-log slope of the RMSE in L",
        level=level,
    )


def bias_floor_verdict(labels, rmse, rmse_se, floors, *, margin: float = 0.10, level: float = LEVEL) -> Verdict:
    """E2.3: mis-specified parameters are inconsistent: at the largest ``L`` their RMSE equals their derived bias
    floor ``|(Sigma W^T - I) q|`` within ``margin`` (relative).

    Args:
        labels: one name per parameter; rmse, rmse_se: ``[m]`` at the largest ``L``; floors: ``[m]``.
    """
    rmse, se = as_float64_array(rmse, "rmse", ndim=1), as_float64_array(rmse_se, "rmse_se", ndim=1)
    floors = as_float64_array(floors, "floors", ndim=1)
    return equivalence(
        "E2.3",
        f"W = I and W = 0 are not consistent: at the largest L their RMSE sits at the derived bias floor "
        f"|(Sigma W^T - I) q| within {100 * margin:g} %",
        source=SRC_TILT,
        statistic="RMSE / floor - 1",
        deviation=rmse - floors,
        se=se,
        margin=margin * floors,
        level=level,
        measured="; ".join(f"{lab}: RMSE {r:.4f}, floor {f:.4f}" for lab, r, f in zip(labels, rmse, floors)) + ".",
    )


def _mse_difference(mse, mse_cov, i: int, j: int) -> tuple[float, float]:
    """``mse[i] - mse[j]`` and its standard error from the covariance of the estimates (paired sequences)."""
    var = mse_cov[i, i] + mse_cov[j, j] - 2 * mse_cov[i, j]
    return float(mse[i] - mse[j]), float(np.sqrt(max(var, 0.0)))


def temperature_optimum_verdict(temperatures, mse, mse_cov, *, length: int, level: float = LEVEL) -> Verdict:
    """E2.4: at a large ``L`` the error is smallest at the unbiased temperature ``beta = 1``: both grid neighbours
    of ``beta = 1`` have a larger MSE (paired differences on the same sequences).

    Args:
        temperatures: ``[B]`` grid containing 1.0; mse: ``[B]``; mse_cov: ``[B, B]``.
    """
    betas, mse = as_float64_array(temperatures, "temperatures", ndim=1), as_float64_array(mse, "mse", ndim=1)
    cov = as_float64_array(mse_cov, "mse_cov")
    hits = np.flatnonzero(np.isclose(betas, 1.0))
    if hits.size != 1:
        raise ValueError("temperatures must contain 1.0 exactly once")
    i = int(hits[0])
    neighbours = [k for k in (i - 1, i + 1) if 0 <= k < betas.size]
    if not neighbours:
        raise ValueError("temperatures must contain a neighbour of 1.0")
    diffs = [_mse_difference(mse, cov, k, i) for k in neighbours]
    return all_positive(
        "E2.4",
        f"at L = {length} the error is smallest at the unbiased temperature beta = 1 (both grid neighbours are worse)",
        source=SRC_TILT,
        statistic="MSE(neighbour) - MSE(beta = 1)",
        estimates=[d for d, _ in diffs],
        ses=[s for _, s in diffs],
        labels=[f"beta = {betas[k]:g}" for k in neighbours],
        level=level,
    )


def softer_temperature_verdict(
    mse_softer, mse_unit, cov_softer_unit, var_softer, var_unit, *, beta: float, length: int, level: float = LEVEL
) -> Verdict:
    """E2.5: at a small ``L`` the derived optimum ``beta* < 1`` of (ex-mse) has a lower error than ``beta = 1``
    (paired difference on the same sequences)."""
    diff = float(mse_unit - mse_softer)
    se = float(np.sqrt(max(var_unit + var_softer - 2 * cov_softer_unit, 0.0)))
    return directional_z(
        "E2.5",
        f"at L = {length} a softer attention, at the optimum beta* = {beta:.2f} of (ex-mse), has a lower "
        f"error than beta = 1",
        source="derived in this book (minimum of ex-mse at finite L)",
        statistic="MSE(beta = 1) - MSE(beta*)",
        estimate=diff,
        se=se,
        level=level,
        measured=f"MSE(beta = 1) - MSE(beta* = {beta:.2f}) = {diff:+.4g}.",
    )


def bandwidth_rate_verdicts(
    rng,
    lengths,
    bandwidths,
    sq_error,
    *,
    h_exponent: float = -0.2,
    mse_exponent: float = -0.8,
    margin: float = 0.1,
    num_bootstrap: int = 500,
    level: float = LEVEL,
) -> tuple[Verdict, Verdict]:
    """E2b.1 and E2b.2: the bandwidth-tuned Gaussian-kernel attention (ex-nw) follows the textbook rates
    ``h* ~ L^{-1/5}`` and ``MSE* ~ L^{-4/5}`` (log-log slopes within ``margin``; 0.1 is half the distance to the
    nearest competitor, the parametric ``-1`` for ``MSE*``).

    The minimiser and minimum are taken on the bandwidth grid; their standard errors come from a bootstrap over
    the independent sequences (``num_bootstrap`` resamples, drawn with ``rng``).

    Args:
        lengths: ``[J]``; bandwidths: ``[B]``; sq_error: ``[S, J, B]`` per-sequence squared errors.
    """
    from .convergence import grid_minimum

    numpy_generator(rng)
    lengths, hs = as_float64_array(lengths, "lengths", ndim=1), as_float64_array(bandwidths, "bandwidths", ndim=1)
    sq = as_float64_array(sq_error, "sq_error")
    if sq.ndim != 3 or sq.shape[1:] != (lengths.size, hs.size):
        raise ValueError(f"sq_error must be [S, {lengths.size}, {hs.size}], got {sq.shape}")
    S = sq.shape[0]
    B = positive_int(num_bootstrap, "num_bootstrap")
    h_star, mse_star = grid_minimum(sq.mean(axis=0), hs)
    counts = rng.multinomial(S, np.full(S, 1.0 / S), size=B)  # [B, S] bootstrap weights
    boot = np.einsum("bs,sjh->bjh", counts, sq) / S
    bh, bm = grid_minimum(boot, hs)
    h_slopes = np.array([loglog_slope(lengths, row) for row in bh])
    m_slopes = np.array([loglog_slope(lengths, row) for row in bm])
    h_slope, m_slope = loglog_slope(lengths, h_star), loglog_slope(lengths, mse_star)
    out = []
    for claim, what, slope, boot_slopes, expected in (
        ("E2b.1", "optimal bandwidth h*", h_slope, h_slopes, h_exponent),
        ("E2b.2", "tuned error MSE*", m_slope, m_slopes, mse_exponent),
    ):
        se = float(boot_slopes.std(ddof=1))
        if not se > 0:
            se = 1e-12
        out.append(
            equivalence(
                claim,
                f"the {what} of Gaussian-kernel attention falls as L^({expected:g}) (log-log slope within {margin:g})",
                source=SRC_SMOOTHING,
                statistic=f"log-log slope of the {what} in L",
                deviation=slope - expected,
                se=se,
                margin=margin,
                level=level,
                measured=f"slope {slope:+.3f} (bootstrap s.e. {se:.3f}) against {expected:+g}.",
            )
        )
    return out[0], out[1]


def cme_decrease_verdict(lengths, sq_error_cme, *, level: float = LEVEL) -> Verdict:
    """E2c.1: the error of CME attention (ex-cme) with a vanishing ridge falls with ``L``: per sequence, the error at
    the largest ``L`` is below that at the smallest (t-test over independent sequences).

    Args:
        lengths: ``[J]``; sq_error_cme: ``[S, J]`` per-sequence errors (each sequence's prefixes).
    """
    lengths = as_float64_array(lengths, "lengths", ndim=1)
    sq = as_float64_array(sq_error_cme, "sq_error_cme", ndim=2)
    return replicate_t(
        "E2c.1",
        f"the error of CME attention (ex-cme) with ridge ~ L^-1/2 falls with L (L = {int(lengths[-1])} "
        f"against L = {int(lengths[0])})",
        source=SRC_CME,
        statistic="per-sequence MSE(smallest L) - MSE(largest L)",
        differences=sq[:, 0] - sq[:, -1],
        level=level,
        measured=f"MSE {sq[:, 0].mean():.3g} -> {sq[:, -1].mean():.3g} (mean over {sq.shape[0]} sequences).",
    )


def cme_vs_softmax_verdict(length: int, sq_error_cme_last, sq_error_softmax_last, *, level: float = LEVEL) -> Verdict:
    """E2c.2: at the largest ``L``, CME attention beats softmax attention with the same fixed bandwidth (paired
    per-sequence errors, t-test over independent sequences)."""
    cme = as_float64_array(sq_error_cme_last, "sq_error_cme_last", ndim=1)
    soft = as_float64_array(sq_error_softmax_last, "sq_error_softmax_last", ndim=1)
    return replicate_t(
        "E2c.2",
        f"at L = {length} CME attention has a lower error than fixed-bandwidth softmax attention",
        source=SRC_CME,
        statistic="per-sequence MSE(softmax) - MSE(CME)",
        differences=soft - cme,
        level=level,
        measured=f"MSE {cme.mean():.3g} (CME) against {soft.mean():.3g} (softmax).",
    )


# --------------------------------------------------------------------------------------------------------
# E3: empirical risk minimisation


def approximation_verdict(mode: str, lengths, approximation, approximation_cov, *, level: float = LEVEL) -> Verdict:
    """E3.1: the reference minimiser ``W*_L`` approaches the target (``Sigma^{-1}``) as ``L`` grows: the log-log
    slope of ``|W*_L - target|_F`` in ``L`` is < 0 (standard error from the joint sandwich covariance)."""
    slope, se = loglog_slope_with_se(lengths, approximation, approximation_cov)
    return directional_z(
        f"E3.1-{mode}",
        f"{mode}: the large-sample minimiser W*_L approaches the desired parameter Sigma^-1 as L grows",
        source=SRC_ERM,
        statistic="minus the log-log slope of |W*_L - Sigma^-1|_F in L",
        estimate=-slope,
        se=se,
        level=level,
        measured=f"slope {slope:+.3f} (s.e. {se:.3f}).",
    )


def _mann_whitney_null(m: int, n: int) -> np.ndarray:
    """Null distribution of the Mann-Whitney count ``U`` of two groups of sizes ``m`` and ``n`` (every split of
    the ``m + n`` exchangeable values equally likely, no ties): ``[m n + 1]`` probabilities of ``U = 0..mn``."""
    # f[a][b] counts the orderings of a and b values by U: the largest value closes a pair with every one of
    # the other group when it belongs to the first group, with none when it belongs to the second
    f = [[np.ones(1, dtype=object)] * (n + 1) for _ in range(m + 1)]
    for a in range(1, m + 1):
        for b in range(1, n + 1):
            counts = np.zeros(a * b + 1, dtype=object)
            counts[b:] += f[a - 1][b]
            counts[: (a * (b - 1)) + 1] += f[a][b - 1]
            f[a][b] = counts
    counts = f[m][n]
    return np.array([c / sum(counts) for c in counts], dtype=np.float64)


def stratified_rank_test(larger, smaller) -> dict:
    """Exact stratified rank test (Mann-Whitney counts summed over strata) that ``larger`` exceeds ``smaller``
    within each stratum, with a scale of its own per stratum.

    Args:
        larger, smaller: ``[S, m]`` and ``[S, n]`` values of the two groups in each of ``S`` strata (``m, n >= 1``);
            within a stratum the ``m + n`` values are exchangeable under the null hypothesis.

    Returns:
        ``{"U": sum over strata of #{(i, j): larger_i > smaller_j} (ties count 1/2), "pairs": S m n,
        "fraction": U / pairs, "p_greater": P(U_null >= U), "p_smaller": P(U_null <= U),
        "smallest_p": (m! n! / (m + n)!)^S}``, the p-values from the exact null distribution of the sum (the
        strata independent, every within-stratum split equally likely). The test depends on the values only
        through their ranks within a stratum, so it is unchanged by any increasing transformation of each stratum
        (e.g. the log) and a stratum of large values weighs no more than one of small values.
    """
    a, b = as_float64_array(larger, "larger", ndim=2), as_float64_array(smaller, "smaller", ndim=2)
    if a.shape[0] != b.shape[0] or a.shape[0] < 1 or a.shape[1] < 1 or b.shape[1] < 1:
        raise ValueError(f"larger and smaller must be [S, m] and [S, n] with S, m, n >= 1, got {a.shape} and {b.shape}")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("larger and smaller must be finite")
    m, n = a.shape[1], b.shape[1]
    u = float(np.sum((a[:, :, None] > b[:, None, :]) + 0.5 * (a[:, :, None] == b[:, None, :])))
    one = _mann_whitney_null(m, n)
    null = np.ones(1)
    for _ in range(a.shape[0]):
        null = np.convolve(null, one)
    values = np.arange(null.size, dtype=np.float64)
    p_greater = float(min(1.0, null[values >= u - 1e-9].sum()))
    p_smaller = float(min(1.0, null[values <= u + 1e-9].sum()))
    return {
        "U": u,
        "pairs": int(a.shape[0] * m * n),
        "fraction": u / (a.shape[0] * m * n),
        "p_greater": p_greater,
        "p_smaller": p_smaller,
        "smallest_p": float(one[-1] ** a.shape[0]),
    }


def _excess_drop_verdict(
    claim: str,
    statement: str,
    *,
    source: str,
    first,
    last,
    first_name: str,
    last_name: str,
    cells: str,
    cell_names,
    level: float,
) -> Verdict:
    """The claim "the excess risk of the fits at ``first`` exceeds that at ``last``", by
    :func:`stratified_rank_test` over the cells (``first``, ``last``: ``[cells, repetitions]``)."""
    test = stratified_rank_test(first, last)
    medians = ", ".join(
        f"{name}: {np.median(f):.3g} -> {np.median(l):.3g}" for name, f, l in zip(cell_names, first, last)
    )
    attainable = (
        ""
        if test["smallest_p"] < level
        else (f" The level is not attainable with these repetitions (smallest p {test['smallest_p']:.2g}).")
    )
    return permutation(
        claim,
        statement,
        source=source,
        statistic=f"fraction of within-cell pairs with excess({first_name}) > excess({last_name})",
        value=test["fraction"],
        p_greater=test["p_greater"],
        p_smaller=test["p_smaller"],
        level=level,
        test=(
            f"exact stratified rank test (Mann-Whitney counts summed over the {len(first)} cells of one {cells}, "
            f"each cell on its own scale), conditional on the test set and the reference minimiser that the fits "
            f"of one length share"
        ),
        measured=(
            f"{test['fraction']:.0%} of {test['pairs']} within-cell pairs; median excess per {cells} "
            f"({first_name} -> {last_name}): {medians}.{attainable}"
        ),
    )


def sample_size_verdict(mode: str, sample_sizes, excess, *, level: float = LEVEL, lengths=None) -> Verdict:
    """E3.2: ERM generalises: the excess test risk falls with ``N``. Within each length (a cell: the fits share
    its test set and reference minimiser, each fit has its own training set), the excesses of the fits with the
    smallest ``N`` are compared with those with the largest ``N`` by rank; :func:`stratified_rank_test` over the
    lengths, so that lengths whose excess differs in scale by orders of magnitude weigh alike.

    Args:
        sample_sizes: ``[K]``; excess: ``[J, K, R]``; lengths: ``[J]`` (only to name the cells).
    """
    sizes = as_float64_array(sample_sizes, "sample_sizes", ndim=1)
    ex = as_float64_array(excess, "excess")
    if ex.ndim != 3 or ex.shape[1] != sizes.size:
        raise ValueError(f"excess must be [J, {sizes.size}, R], got {ex.shape}")
    names = range(ex.shape[0]) if lengths is None else as_float64_array(lengths, "lengths", ndim=1)
    return _excess_drop_verdict(
        f"E3.2-{mode}",
        f"{mode}: ERM generalises: the excess test risk is lower with N = {int(sizes[-1])} "
        f"training sequences than with N = {int(sizes[0])}",
        source=SRC_ERM,
        first=ex[:, 0, :],
        last=ex[:, -1, :],
        first_name=f"N = {int(sizes[0])}",
        last_name=f"N = {int(sizes[-1])}",
        cells="length",
        cell_names=[f"L = {int(L)}" if lengths is not None else f"length {L + 1}" for L in names],
        level=level,
    )


def length_verdict(mode: str, lengths, excess, *, level: float = LEVEL, sample_sizes=None) -> Verdict:
    """E3.3: the excess test risk does not grow with ``L``; tested as: it is lower at the largest ``L`` than at the
    smallest. Within each sample size (a cell; each fit has its own training set), the excesses at the smallest
    ``L`` are compared with those at the largest by rank; :func:`stratified_rank_test` over the sample sizes.

    Args:
        lengths: ``[J]``; excess: ``[J, K, R]``; sample_sizes: ``[K]`` (only to name the cells).
    """
    lengths = as_float64_array(lengths, "lengths", ndim=1)
    ex = as_float64_array(excess, "excess")
    if ex.ndim != 3 or ex.shape[0] != lengths.size:
        raise ValueError(f"excess must be [{lengths.size}, K, R], got {ex.shape}")
    names = range(ex.shape[1]) if sample_sizes is None else as_float64_array(sample_sizes, "sample_sizes", ndim=1)
    return _excess_drop_verdict(
        f"E3.3-{mode}",
        f"{mode}: the excess test risk does not grow with L (tested as: lower at L = "
        f"{int(lengths[-1])} than at L = {int(lengths[0])})",
        source=SRC_LENGTH_FREE,
        first=ex[0],
        last=ex[-1],
        first_name=f"L = {int(lengths[0])}",
        last_name=f"L = {int(lengths[-1])}",
        cells="sample size",
        cell_names=[f"N = {int(N)}" if sample_sizes is not None else f"size {N + 1}" for N in names],
        level=level,
    )


def softening_verdict(mode: str, lengths, temperature, temperature_se, *, level: float = LEVEL) -> Verdict:
    """E3.4: at every finite ``L`` the large-sample minimiser is a softer attention than ``Sigma^{-1}``:
    ``c_L < 1`` (one-sided z-tests, Bonferroni over the lengths)."""
    lengths, c = as_float64_array(lengths, "lengths", ndim=1), as_float64_array(temperature, "temperature", ndim=1)
    se = as_float64_array(temperature_se, "temperature_se", ndim=1)
    return all_positive(
        f"E3.4-{mode}",
        f"{mode}: at every L the large-sample minimiser is a softened Sigma^-1 (c_L < 1)",
        source="derived in this book (the variance term of ex-mse favours softer attention at finite L)",
        statistic="1 - c_L",
        estimates=1 - c,
        ses=se,
        labels=[f"L = {int(L)}" for L in lengths],
        level=level,
    )


# --------------------------------------------------------------------------------------------------------
# E4: the condition-number proxy


def transfer_ratio_verdict(
    condition_numbers, downstream_sq, predicted, *, margin: float = 0.25, level: float = LEVEL
) -> Verdict:
    """E4.1: the weak-over-strong downstream excess ratio follows the derived prediction at every ``kappa``
    (log-ratio within ``log(1 + margin)``; standard errors by the delta method over the test sequences).

    Args:
        condition_numbers: ``[C]``; downstream_sq: ``[C, n, 2]`` per-sequence squared errors (strong, weak);
        predicted: ``[C]``.
    """
    kappas = as_float64_array(condition_numbers, "condition_numbers", ndim=1)
    pred = as_float64_array(predicted, "predicted", ndim=1)
    sq = as_float64_array(downstream_sq, "downstream_sq")
    if sq.ndim != 3 or sq.shape[0] != kappas.size or sq.shape[2] != 2:
        raise ValueError(f"downstream_sq must be [{kappas.size}, n, 2], got {sq.shape}")
    n = sq.shape[1]
    m = sq.mean(axis=1)  # [C, 2]
    log_ratio = np.log(m[:, 1] / m[:, 0])
    se = []
    for c in range(kappas.size):
        C = np.cov(sq[c].T) / n
        g = np.array([-1 / m[c, 0], 1 / m[c, 1]])
        se.append(np.sqrt(g @ C @ g))
    ratio = np.exp(log_ratio)
    return equivalence(
        "E4.1",
        f"the weak-over-strong downstream excess ratio follows the prediction derived from (ex-mse) at every "
        f"kappa, within {100 * margin:g} %",
        source=SRC_PROXY,
        statistic="log(measured ratio / predicted ratio)",
        deviation=log_ratio - np.log(pred),
        se=np.array(se),
        margin=np.log1p(margin),
        level=level,
        measured="ratio " + ", ".join(f"{r:.2f} (predicted {p:.2f})" for r, p in zip(ratio, pred)) + ".",
    )


def pretraining_verdict(condition_numbers, pretrain_sq, *, level: float = LEVEL) -> Verdict:
    """E4.2: the masked-pretraining excess does not grow with ``kappa``; tested as: it is lower at the largest
    ``kappa`` than at ``kappa = 1`` (paired: the same draws at every ``kappa``)."""
    kappas = as_float64_array(condition_numbers, "condition_numbers", ndim=1)
    sq = as_float64_array(pretrain_sq, "pretrain_sq", ndim=2)
    diff, se = _paired(sq[0], sq[-1], "pretrain_sq[0]", "pretrain_sq[-1]")
    return directional_z(
        "E4.2",
        f"the masked-pretraining excess does not grow with the condition number (tested as: lower at "
        f"kappa = {kappas[-1]:g} than at kappa = {kappas[0]:g})",
        source="derived in this book (masked prediction weighs latent errors by Sigma)",
        statistic="pretraining excess(first kappa) - excess(last kappa)",
        estimate=float(diff),
        se=float(se),
        level=level,
        measured=f"pretraining excess {sq[0].mean():.4f} -> {sq[-1].mean():.4f}.",
    )
