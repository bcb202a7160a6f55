"""Claims about the finite network's sampled posterior beyond its mean order parameter, re-exported by
:mod:`attnpaths.experiments.finite_width`: the entropy weight that the samples measure (the test of the action that
shares no code with it) and the posterior variance of the network's output against the theory's and the exact
density's."""

from __future__ import annotations

import numpy as np

from .._validation import as_float64_array
from ..claims import Verdict, equivalence, equivalence_power

SOURCE_SAMPLES = "paper (captions of Fig. 2c, 2e, 3b, 3c: theory vs samples)"
SOURCE_VARIANCE = "derived in this book (the theory's predictor variance against the samples)"
SOURCE_VARIANCE_EXACT = "derived in this book (the samples' predictor variance against the exact density's)"

#: Largest finite-width scale ``(n + 1) / N`` of a width at which the saddle point is compared with the exact mean.
SADDLE_MAX_EPSILON = 0.05


def saddle_widths(widths, num_paths: int, max_epsilon: float, holder: str) -> list:
    """The widths ``N`` among ``widths`` (sorted) where the saddle point's relative error scale ``(n + 1) / N``,
    ``n = num_paths``, is at most ``max_epsilon``: those at which the theory is compared with the posterior.
    ``ValueError`` saying "``holder`` N with ..." (e.g. ``"points must hold a sampled width"``) when there is none."""
    compared = sorted(w for w in widths if (num_paths + 1) / w <= max_epsilon)
    if not compared:
        raise ValueError(
            f"{holder} N with (n + 1) / N <= max_epsilon = {max_epsilon:g} "
            f"(N >= {(num_paths + 1) / max_epsilon:g}), got {sorted(widths)}"
        )
    return compared


def entropy_weight_estimate(*, points, exact, reference_scale: float = 1.0) -> dict:
    """The entropy weight at which the exact density (eq-exact-density) reproduces the network's posterior samples.

    The exact mean ``U_c(N)`` of the density with its entropy weighted by ``c`` is, near ``c = 1``,
    ``U_1(N) + (c - 1) G(N)`` with ``G = dU_c / dc`` estimated from the neighbouring runs ``e.scaled`` (central
    difference over the two scales nearest 1). Every distinct entry of the sampled ``U`` at every width with an
    exact run gives ``d = U_sampled - U_ref`` with variance ``v = se_sampled^2 + se_ref^2``; the weighted
    least-squares estimate is ``c - 1 = sum G d / v / sum G^2 / v``, with standard error ``(sum G^2 / v)^(-1/2)``
    inflated by ``sqrt(chi^2 / dof)`` when the residuals scatter more than their Monte-Carlo errors (entries of
    one width are correlated, and a misfit that no entropy weight explains must widen the interval).

    Args:
        points: ``{width: SampledPoint}`` (``U``, ``U_se`` ``[n, n]``).
        exact: ``{width: ExactOrderParameter}`` whose ``scaled`` holds two scales, one below and one above 1.
        reference_scale: the reference ``U_ref``: ``1`` the exact mean of the action as written, another planned
            scale ``c`` that of an action with its entropy weighted by ``c`` (a wrong theory, for power checks).

    Returns:
        ``{"estimate", "se", "chi2_dof", "num_entries", "widths"}``: the entropy weight relative to the reference
        (1 when the reference is right), its standard error, the reduced chi-square and what entered.
    """
    widths = sorted(w for w in exact if w in points)
    if not widths:
        raise ValueError("exact and points must share a sampled width")
    G_all, d_all, v_all = [], [], []
    for w in widths:
        e = exact[w]
        scales = sorted(e.scaled)
        below, above = [c for c in scales if c < 1], [c for c in scales if c > 1]
        if not below or not above:
            raise ValueError(f"exact[{w}].scaled must hold a scale below and one above 1, got {scales}")
        lo, hi = max(below), min(above)
        G = (as_float64_array(e.scaled[hi].U, "U") - as_float64_array(e.scaled[lo].U, "U")) / (hi - lo)
        if reference_scale == 1:
            ref, ref_se = e.U, e.U_se
        elif float(reference_scale) in e.scaled:
            ref, ref_se = e.scaled[float(reference_scale)].U, e.scaled[float(reference_scale)].U_se
        else:
            raise ValueError(f"reference_scale must be 1 or a planned scale {scales}, got {reference_scale!r}")
        p = points[w]
        iu = np.triu_indices(G.shape[0])
        G_all.extend(G[iu])
        d_all.extend((as_float64_array(p.U, "U") - as_float64_array(ref, "U"))[iu])
        v_all.extend((as_float64_array(p.U_se, "U_se") ** 2 + as_float64_array(ref_se, "U_se") ** 2)[iu])
    G, d, v = np.array(G_all), np.array(d_all), np.maximum(np.array(v_all), 1e-24)
    information = float(np.sum(G**2 / v))
    if not information > 0:
        raise ValueError("the neighbouring exact runs must differ: the entropy weight is not identifiable")
    shift = float(np.sum(G * d / v)) / information
    dof = max(d.size - 1, 1)
    chi2_dof = float(np.sum((d - shift * G) ** 2 / v)) / dof
    return {
        "estimate": 1.0 + shift,
        "se": float(np.sqrt(max(1.0, chi2_dof) / information)),
        "chi2_dof": chi2_dof,
        "num_entries": int(d.size),
        "widths": widths,
    }


def entropy_weight_agreement(
    claim: str,
    *,
    points,
    exact,
    margin: float = 0.05,
    reference_scale: float = 1.0,
    level: float = 0.01,
    where: str = "",
    source: str = SOURCE_SAMPLES,
) -> Verdict:
    """Claim: the network's posterior samples, drawn by code that shares nothing with the action (eq-action),
    are those of the exact density (eq-exact-density) with the entropy weight the theory gives it (1), within
    ``margin``: a test of the action itself, which an action with its entropy weighted by ``1 +- 2 margin`` fails.

    Args:
        points, exact, reference_scale: see :func:`entropy_weight_estimate`.
        margin: the largest ``|c - 1|`` that counts as agreement.
        source: where the claim comes from (a chapter that reads this test as its own, not the paper's, says so).

    Test: :func:`attnpaths.claims.equivalence` of the one estimate ``c - 1`` with its standard error.
    """
    est = entropy_weight_estimate(points=points, exact=exact, reference_scale=reference_scale)
    shift = est["estimate"] - 1.0
    against = "the action" if reference_scale == 1 else f"an action with its entropy weighted by {reference_scale:g}"
    return equivalence(
        claim,
        f"the network's samples measure the entropy weight of {against} as 1{where}",
        source=source,
        statistic="|entropy weight - 1| / margin",
        deviation=[shift],
        se=[est["se"]],
        margin=[margin],
        level=level,
        measured=(
            f"Entropy weight {est['estimate']:.4f} +- {est['se']:.4f} (margin {margin:g}; {est['num_entries']} "
            f"entries of U at N = {', '.join(map(str, est['widths']))}; reduced chi-square "
            f"{est['chi2_dof']:.2f}){where}."
        ),
    )


def _variance_entries(*, points, theory_variance, num_paths: int, max_epsilon: float = SADDLE_MAX_EPSILON):
    """``(widths, deviation, se, sampled, theory)`` of :func:`predictor_variance_agreement` (its arguments but
    ``claim``, ``margin``, ``level`` and ``where``): per width with
    ``(n + 1) / N <= max_epsilon``, the test-set average of the sampled posterior variance of ``f`` relative to
    the theory's, minus 1, and its relative Monte-Carlo standard error."""
    points = dict(points)
    num_paths = int(num_paths)
    if num_paths < 1:
        raise ValueError(f"num_paths must be an integer >= 1, got {num_paths!r}")
    widths = saddle_widths(points, num_paths, max_epsilon, "points must hold a sampled width")
    missing = [w for w in widths if w not in theory_variance]
    if missing:
        raise ValueError(f"theory_variance must hold every compared width {widths}, missing {missing}")
    reference = {}
    for w in widths:
        v = as_float64_array(theory_variance[w], f"theory_variance[{w}]", ndim=1)
        if v.shape != np.shape(points[w].mean) or np.any(v <= 0):
            raise ValueError(
                f"theory_variance[{w}] must hold one positive variance per test point ({np.size(points[w].mean)}), "
                f"got shape {v.shape}"
            )
        reference[w] = (float(v.mean()), 0.0)  # the theory's variance carries no Monte-Carlo error
    return (widths, *_relative_variances(points, reference))


def _exact_variance_entries(points, exact):
    """As :func:`_variance_entries`, against the exact density's variance at every width of both ``points`` and
    ``exact`` (:class:`attnpaths.experiments.sampling.ExactOrderParameter`), its Monte-Carlo error added in
    quadrature."""
    points, exact = dict(points), dict(exact)
    widths = sorted(set(points) & {w for w, e in exact.items() if e.mean_variance is not None})
    if not widths:
        raise ValueError(
            f"points and exact must share a width with the exact variance computed, got {sorted(points)} and "
            f"{sorted(exact)}"
        )
    return (widths, *_relative_variances(points, {w: (exact[w].mean_variance, exact[w].mean_variance_se)
                                                  for w in widths}))  # fmt: skip


def _relative_variances(points, reference: dict):
    """``(deviation, se, sampled, reference)`` arrays over the widths of ``reference`` ``{width: (value, se)}``:
    the samples' test-set average variance relative to the reference, minus 1, and its relative standard error."""
    deviation, se, sampled, values = [], [], [], []
    for w, (value, value_se) in reference.items():
        p = points[w]
        if p.mean_variance is None or p.mean_variance_se is None:
            raise ValueError(f"points[{w}] must carry mean_variance and mean_variance_se (sample_posterior keeps them)")
        deviation.append(p.mean_variance / value - 1)
        # the ratio's error: the samples' and the reference's, independent, in quadrature
        se.append(max(float(np.hypot(p.mean_variance_se, value_se * p.mean_variance / value)) / value, 1e-12))
        sampled.append(p.mean_variance)
        values.append(value)
    return np.array(deviation), np.array(se), np.array(sampled), np.array(values)


def predictor_variance_agreement_power(*, margin: float = 0.1, level: float = 0.01, **arguments) -> float:
    """The power check of :func:`predictor_variance_agreement` with the same arguments (but ``claim`` and
    ``where``): the probability that its test declares agreement if the theory's variance were exactly the
    posterior's, at the samples' Monte-Carlo errors (:func:`attnpaths.claims.equivalence_power`)."""
    _, _, se, _, _ = _variance_entries(**arguments)
    return equivalence_power(se, margin, level)


def predictor_variance_agreement(
    claim: str, *, margin: float = 0.1, level: float = 0.01, where: str = "", **arguments
) -> Verdict:
    """Claim: the theory's predictor variance (eq-predictor) is the posterior variance of the finite network's
    output, on average over the test points, at the widths where the saddle point applies. Point by point the two
    are compared in the chapter's figure, not tested: the points share the draws, so their errors are correlated.

    The statistic per width ``N`` is the test-set average of the sampled posterior variance of ``f``
    (``SampledPoint.mean_variance``) relative to the average of the theory's variance at the same points, minus 1;
    its Monte-Carlo standard error comes from the ESS of the per-draw average of the squared deviations
    (:func:`attnpaths.experiments.sampling.variance_and_se`), which accounts for the test points sharing draws.

    Args:
        points: ``{width: SampledPoint}`` with ``mean_variance`` and ``mean_variance_se``
            (:func:`attnpaths.experiments.sampling.sample_posterior`).
        theory_variance: ``{width: [P_test]}`` the theory's variance ``kappa - k^T (K + T I)^{-1} k`` at the
            sampled widths, on the samples' test points
            (:func:`attnpaths.experiments.kernel_pcs.predictor_variance` at the theory's ``U``).
        num_paths: ``n``; only the widths with ``(n + 1) / N <= max_epsilon`` are compared (the saddle point's
            relative error scale, :func:`attnpaths.experiments.sampling.finite_width_epsilon`, as in
            :func:`saddle_point_agreement`); max_epsilon: default ``SADDLE_MAX_EPSILON``.
        margin: the largest relative deviation that counts as agreement.

    Test: :func:`attnpaths.claims.equivalence` of the relative deviations against ``margin`` (Bonferroni over the
    compared widths); raises ``ValueError`` when no width qualifies.
    """
    return _variance_verdict(
        claim,
        f"the theory's predictor variance is the posterior variance of the network's output, on average over the test "
        f"points{where}",
        SOURCE_VARIANCE,
        "theory",
        _variance_entries(**arguments),
        lambda w, s, t, d, e: f"N = {w}: sampled {s:.4f} +- {e * t:.4f}, theory {t:.4f} ({d:+.1%})",
        margin,
        level,
        where,
    )


def _variance_verdict(claim, statement, source, name, entries, part, margin, level, where) -> Verdict:
    """The equivalence test of the test-set average variance against a reference called ``name`` (``entries`` from
    :func:`_variance_entries` or :func:`_exact_variance_entries`; ``part(w, sampled, reference, deviation, se)``
    words one width)."""
    widths, deviation, se, sampled, reference = entries
    parts = ", ".join(part(*row) for row in zip(widths, sampled, reference, deviation, se))
    return equivalence(
        claim,
        statement,
        source=source,
        statistic=f"largest |sampled / {name} - 1| / margin of the test-set average variance",
        deviation=deviation,
        se=se,
        margin=margin,
        level=level,
        measured=f"Test-set average of Var f (margin {margin:g} relative): {parts}{where}.",
    )


def exact_variance_agreement(claim: str, *, points, exact, margin: float = 0.1, level: float = 0.01, where: str = ""):
    """Claim: the finite network's posterior variance of its output, on average over the test points, is that of
    the exact density of its order parameters (:func:`attnpaths.experiments.sampling.exact_predictive_variance`),
    at every width where both were computed, the smallest included: both are exact, so unlike
    :func:`predictor_variance_agreement` no saddle-point range applies.

    Args:
        points: ``{width: SampledPoint}`` with ``mean_variance`` and ``mean_variance_se``; exact:
            ``{width: ExactOrderParameter}`` with ``mean_variance`` and ``mean_variance_se``.

    Test: :func:`attnpaths.claims.equivalence` of the relative deviations against ``margin`` (Bonferroni over the
    compared widths), the two Monte-Carlo errors in quadrature; raises ``ValueError`` when no width is shared.
    """
    return _variance_verdict(
        claim,
        f"the posterior variance of the network's output is that of the exact density of its order parameters, on "
        f"average over the test points, at every sampled width{where}",
        SOURCE_VARIANCE_EXACT,
        "exact",
        _exact_variance_entries(points, exact),
        lambda w, s, r, d, e: f"N = {w}: sampled {s:.4f}, exact density {r:.4f} ({d:+.1%} +- {e:.1%})",
        margin,
        level,
        where,
    )


def exact_variance_agreement_power(*, points, exact, margin: float = 0.1, level: float = 0.01) -> float:
    """The power check of :func:`exact_variance_agreement`: the probability that it declares agreement were the two
    variances equal, at this run's Monte-Carlo errors (:func:`attnpaths.claims.equivalence_power`)."""
    return equivalence_power(_exact_variance_entries(points, exact)[2], margin, level)
