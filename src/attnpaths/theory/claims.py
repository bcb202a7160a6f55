"""The claims of the chapter ``theory`` as verdicts (:mod:`attnpaths.claims`).

The theory is solved at fixed data, so the order parameters carry no sampling error: their claims are exact
comparisons (:func:`attnpaths.claims.exact`). The prior-kernel check compares a Monte-Carlo estimate with the
closed form and is an equivalence test. Each function takes plain arrays, so that the tests can feed it a
deliberately wrong input (a wrong exponent, a wrong closed form, a solution that is not a minimum).

T2 and T3 are structural checks (shown apart from the claims by the book's ``structural_table``): they follow from the form
``S = E + N s`` of the action once the solver has converged, so a wrong energy or entropy weight has them too;
they check the solver, not the theory against the network.
"""

from __future__ import annotations

import numpy as np

from .._validation import as_float64_array, positive_real
from ..claims import Verdict, equivalence, exact

SRC_DERIVED = "derived in this book (expansion of the action around the entropy's minimum)"


def certificate_verdict(
    widths, gradient_norms, hessian_min_eigenvalues, *, gradient_tolerance: float = 1e-8
) -> Verdict:
    """T1: every solution is a strict local minimum of the action: gradient norm below ``gradient_tolerance``
    and smallest eigenvalue of the Hessian (symmetric directions) above 0, at every width."""
    gradient_tolerance = positive_real(gradient_tolerance, "gradient_tolerance")
    w = as_float64_array(widths, "widths", ndim=1, nonempty=True)
    g = as_float64_array(gradient_norms, "gradient_norms", ndim=1, nonempty=True)
    e = as_float64_array(hessian_min_eigenvalues, "hessian_min_eigenvalues", ndim=1, nonempty=True)
    if not (w.shape == g.shape == e.shape):
        raise ValueError("widths, gradient_norms and hessian_min_eigenvalues must have the same length")
    ok = bool(np.all(g < gradient_tolerance) and np.all(e > 0))
    return exact(
        "T1",
        "every solution of the theory is a strict local minimum of the action",
        source="numerical certificate of the solver (this book)",
        statistic="largest gradient norm",
        value=float(g.max()),
        criterion=f"every gradient norm < {gradient_tolerance:g} and every smallest Hessian eigenvalue > 0",
        satisfied=ok,
        measured=f"largest gradient norm {g.max():.2g}, smallest Hessian eigenvalue "
        f"{e.min():.3g} over {w.size} widths.",
    )


def monotone_approach_verdict(widths, distance) -> Verdict:
    """T2: the order parameter approaches its GP value monotonically: ``max |U - U_GP|`` decreases strictly
    along the increasing widths."""
    w = as_float64_array(widths, "widths", ndim=1, nonempty=True)
    d = as_float64_array(distance, "distance", ndim=1, nonempty=True)
    if w.shape != d.shape or w.size < 2:
        raise ValueError("widths and distance must have the same length >= 2")
    order = np.argsort(w)
    steps = np.diff(d[order])
    return exact(
        "T2",
        "the order parameter U approaches its GP value monotonically as the width N grows",
        source="this book: the theory solved on the chapter's task (an observation, not a theorem)",
        statistic="largest step of max|U - U_GP| from one width to the next",
        value=float(steps.max()),
        criterion="max|U - U_GP| decreases strictly with N",
        satisfied=bool(np.all(steps < 0)),
        measured=f"max|U - U_GP| = {d[order][0]:.3g} (N = {w[order][0]:g}) -> {d[order][-1]:.3g} "
        f"(N = {w[order][-1]:g}).",
    )


def local_slopes(widths, distance) -> np.ndarray:
    """Log-log slopes of ``distance`` between consecutive increasing ``widths``: ``[n - 1]``."""
    w = as_float64_array(widths, "widths", ndim=1, nonempty=True)
    d = as_float64_array(distance, "distance", ndim=1, nonempty=True)
    if w.shape != d.shape or w.size < 2 or np.any(np.diff(w) <= 0) or np.any(d <= 0) or np.any(w <= 0):
        raise ValueError("widths must increase strictly, distance be positive, both of the same length >= 2")
    return np.diff(np.log(d)) / np.diff(np.log(w))


def approach_summary(widths, distance, far_widths, far_distance) -> dict[str, int | float]:
    """The numbers that describe how ``max |U - U_GP|`` falls with the width, by the names the chapter quotes.

    Args:
        widths: ``[n]`` (n >= 2) increasing widths of the chapter's figure; distance: ``[n]`` ``max |U - U_GP|``
            at them.
        far_widths: ``[m]`` (m >= 1) increasing widths beyond ``widths``; far_distance: ``[m]`` the distance there.

    Returns:
        ``num_widths`` (n), ``max_width``, ``dist_small`` and ``dist_large`` (the distance at the smallest and the
        largest of ``widths``), ``slope_figure_min`` and ``slope_figure_max`` (the extreme :func:`local_slopes`
        between successive ``widths``), ``slope_sweep`` (the slope between the two largest ``widths``),
        ``slope_far`` (between the two largest widths of all), ``far_first`` and ``far_last`` (the smallest and
        the largest of ``far_widths``).
    """
    w = as_float64_array(widths, "widths", ndim=1, nonempty=True)
    d = as_float64_array(distance, "distance", ndim=1, nonempty=True)
    far_w = as_float64_array(far_widths, "far_widths", ndim=1, nonempty=True)
    far_d = as_float64_array(far_distance, "far_distance", ndim=1, nonempty=True)
    if w.size < 2 or d.shape != w.shape:
        raise ValueError(f"widths and distance must have the same length >= 2, got {w.size} and {d.size}")
    if far_d.shape != far_w.shape:
        raise ValueError(f"far_widths and far_distance must have the same length, got {far_w.size} and {far_d.size}")
    slopes = local_slopes(np.concatenate([w, far_w]), np.concatenate([d, far_d]))
    figure = slopes[: w.size - 1]
    return {
        "num_widths": w.size,
        "max_width": int(w.max()),
        "dist_small": float(d[0]),
        "dist_large": float(d[-1]),
        "slope_sweep": float(figure[-1]),
        "slope_figure_min": float(figure.min()),
        "slope_figure_max": float(figure.max()),
        "slope_far": float(slopes[-1]),
        "far_first": int(far_w[0]),
        "far_last": int(far_w[-1]),
    }


def width_exponent_verdict(widths, distance, *, expected: float = -1.0, margin: float = 0.01) -> Verdict:
    """T3: ``max |U - U_GP|`` decays as ``N^expected`` at large width: the log-log slope between the two largest
    widths is within ``margin`` of ``expected``.

    The expansion of the action ``S = E + N s`` around the minimum of the entropy ``s`` (at ``U_GP``) gives
    ``U_N - U_GP = -(1/N) (Hess s)^{-1} grad E (U_GP) + O(1/N^2)``: a slope of ``-1`` with a correction of
    relative order ``1/N``.
    """
    slopes = local_slopes(widths, distance)
    w = as_float64_array(widths, "widths", ndim=1, nonempty=True)
    slope = float(slopes[-1])
    return exact(
        "T3",
        f"the order parameter approaches its GP value as N^({expected:g}) at large width",
        source=SRC_DERIVED,
        statistic=f"log-log slope of max|U - U_GP| between N = {w[-2]:g} and {w[-1]:g}",
        value=slope,
        criterion=f"|slope - ({expected:g})| < {margin:g}",
        satisfied=abs(slope - expected) < margin,
        measured="local slopes "
        + ", ".join(f"{s:+.4f}" for s in slopes)
        + " (successive widths "
        + ", ".join(f"{x:g}" for x in w)
        + ").",
    )


def prior_kernel_verdict(
    widths, mc_means, mc_ses, gp_kernel, *, margin_fraction: float = 0.1, level: float = 0.01
) -> Verdict:
    """T4: the prior kernel of finite networks equals ``K_GP`` at every width: every entry of each Monte-Carlo
    estimate (upper triangle with the diagonal) agrees with ``K_GP`` within ``margin_fraction`` of the largest
    prior variance ``max_x K_GP(x, x)`` (equivalence test, Bonferroni over all entries and widths).

    Args:
        widths: ``[m]``; mc_means, mc_ses: ``[m, B, B]`` Monte-Carlo means and standard errors;
        gp_kernel: ``[B, B]``.
    """
    K = as_float64_array(gp_kernel, "gp_kernel")
    means, ses = as_float64_array(mc_means, "mc_means"), as_float64_array(mc_ses, "mc_ses")
    w = as_float64_array(widths, "widths", ndim=1, nonempty=True)
    if K.ndim != 2 or means.shape != (w.size,) + K.shape or ses.shape != means.shape:
        raise ValueError(f"mc_means and mc_ses must be [{w.size}, {K.shape[0]}, {K.shape[0]}]")
    iu = np.triu_indices(K.shape[0])
    dev = (means - K)[:, iu[0], iu[1]]
    scale = float(np.max(np.diag(K)))
    return equivalence(
        "T4",
        f"the prior kernel E[f(x) f(x')] of finite networks equals K_GP at every width (within "
        f"{100 * margin_fraction:g} % of the largest prior variance)",
        source="derived in this book (the network is linear in each layer's weights)",
        statistic="Monte-Carlo kernel - K_GP",
        deviation=dev,
        se=ses[:, iu[0], iu[1]],
        margin=margin_fraction * scale,
        level=level,
        measured=f"largest |deviation| {np.abs(dev).max():.3g} (margin {margin_fraction * scale:.3g}; widths "
        + ", ".join(f"{x:g}" for x in w)
        + ").",
    )
