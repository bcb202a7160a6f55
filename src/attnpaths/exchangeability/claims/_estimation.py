"""E1 and E2: the posterior as a representation, and attention as an estimator of the conditional mean."""

from __future__ import annotations

import numpy as np

from ..._validation import as_float64_array, numpy_generator, positive_int
from ...claims import LEVEL, Verdict, directional_z, equivalence, replicate_t
from ...statistics import loglog_slope
from ._common import _mse_difference, _paired, _vectors, all_positive, rate_verdict

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

# --------------------------------------------------------------------------------------------------------
# E1: the posterior as a representation


def bayes_risk_verdict(lengths, sq_error, theory, *, margin: float = 0.05, level: float = LEVEL) -> Verdict:
    """E1.1: the posterior mean's test risk equals the Bayes risk (ex-risk-m1) at every ``L``, within ``margin``
    (relative) of the closed form.

    Args:
        lengths: ``[J]``; sq_error: ``[J, n]`` squared test errors; theory: ``[J]`` the closed-form risk.
    """
    lengths, theory = _vectors(lengths=lengths, theory=theory)
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
    return _summed_gap_verdict(
        "E1.2",
        "least squares on all L d raw token coordinates does not predict better than the posterior: "
        "its test risk is higher (summed over L)",
        what="least squares",
        over="L",
        gap=_paired(sq_error_richer, sq_error_posterior, "sq_error_richer", "sq_error_posterior"),
        level=level,
        per_length=True,
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
    return _summed_gap_verdict(
        "E1.3",
        "the first token alone, a statistic that is not sufficient, predicts worse than the posterior "
        "of all tokens (summed over L > 1)",
        what="first token",
        over="L > 1",
        gap=_paired(first[keep], post[keep], "sq_error_first", "sq_error_posterior"),
        level=level,
    )


def _summed_gap_verdict(claim, statement, *, what, over, gap, level, per_length=False) -> Verdict:
    """The claim "``what`` has a higher test risk than the posterior" on the paired risk differences ``gap`` =
    ``(mean [J], standard error [J])`` summed over the lengths ``over`` (independent test sets per ``L``)."""
    diff, se = gap
    total, total_se = float(diff.sum()), float(np.sqrt(np.sum(se**2)))
    per = " (per L: " + ", ".join(f"{d:+.3g}" for d in diff) + ")" if per_length else ""
    return directional_z(
        claim,
        statement,
        source=SRC_SUFFICIENT,
        statistic=f"sum over {over} of the paired risk difference ({what} - posterior)",
        estimate=total,
        se=total_se,
        level=level,
        measured=f"risk difference summed over {over} = {total:+.4g}{per}.",
    )


def calibration_verdict(
    lengths, accuracy, confidence, calibration_se, *, margin: float = 0.02, level: float = LEVEL
) -> Verdict:
    """E1.4: the concept posterior (ex-post-m2), computed as attention, is calibrated: its accuracy equals its mean
    confidence at every ``L``, within ``margin`` (absolute)."""
    acc, conf = _vectors(accuracy=accuracy, confidence=confidence)
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
    lengths, acc, se = _vectors(lengths=lengths, accuracy=accuracy, accuracy_se=accuracy_se)
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
    lengths, rmse, se, pred = _vectors(lengths=lengths, rmse=rmse, rmse_se=rmse_se, predicted=predicted)
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


def attention_rate_verdict(
    lengths, mse, mse_cov, *, min_length: int = 64, expected: float = -0.5, margin: float = 0.05, level: float = LEVEL
) -> Verdict:
    """E2.2: the RMSE of attention with ``W = Sigma^{-1}`` falls as ``L^{-1/2}`` for ``L >= min_length``.

    Args:
        lengths: ``[J]``; mse: ``[J]`` mean squared errors; mse_cov: ``[J, J]`` their covariance (the lengths
            share the sequences). The RMSE's slope is half that of the MSE.
    """
    lengths, mse = _vectors(lengths=lengths, mse=mse)
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
    rmse, se, floors = _vectors(rmse=rmse, rmse_se=rmse_se, floors=floors)
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


def temperature_optimum_verdict(temperatures, mse, mse_cov, *, length: int, level: float = LEVEL) -> Verdict:
    """E2.4: at a large ``L`` the error is smallest at the unbiased temperature ``beta = 1``: both grid neighbours
    of ``beta = 1`` have a larger MSE (paired differences on the same sequences).

    Args:
        temperatures: ``[B]`` grid containing 1.0; mse: ``[B]``; mse_cov: ``[B, B]``.
    """
    betas, mse = _vectors(temperatures=temperatures, mse=mse)
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
    cov = np.array([[var_unit, cov_softer_unit], [cov_softer_unit, var_softer]])
    diff, se = _mse_difference(np.array([mse_unit, mse_softer]), cov, 0, 1)
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
    from ..convergence import grid_minimum

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
    out = []
    for claim, what, measured, resampled, expected in (
        ("E2b.1", "optimal bandwidth h*", h_star, bh, h_exponent),
        ("E2b.2", "tuned error MSE*", mse_star, bm, mse_exponent),
    ):
        slope = loglog_slope(lengths, measured)
        se = float(np.array([loglog_slope(lengths, row) for row in resampled]).std(ddof=1))
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
    return tuple(out)


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
    cme, soft = _vectors(sq_error_cme_last=sq_error_cme_last, sq_error_softmax_last=sq_error_softmax_last)
    return replicate_t(
        "E2c.2",
        f"at L = {length} CME attention has a lower error than fixed-bandwidth softmax attention",
        source=SRC_CME,
        statistic="per-sequence MSE(softmax) - MSE(CME)",
        differences=soft - cme,
        level=level,
        measured=f"MSE {cme.mean():.3g} (CME) against {soft.mean():.3g} (softmax).",
    )
