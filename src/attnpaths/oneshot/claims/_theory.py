"""The claims about the theory on the one-shot grid: the samples against the saddle point, the interplay of paths,
the entropy weight and the approach to the saddle point (sec-oneshot-interplay, sec-oneshot-saddle)."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from ..._validation import as_float64_array
from ...claims import LEVEL, Verdict, equivalence, equivalence_power, power_check
from ...experiments import finite_width as fw_claims
from ...experiments.sweep import TheorySweep
from ._sources import INTERPLAY, SOURCE_ENTROPY_WEIGHT


def sample_agreements(
    claim: str,
    samples: dict,
    *,
    selection: dict,
    grid: TheorySweep,
    margin_accuracy: float,
    margin_U: float,
    level: float = 0.01,
) -> list[Verdict]:
    """Claims ``"<claim> (N=...)"``, one per sampled width: the posterior samples at the selected temperature
    agree with the theory's saddle point there, accuracy within ``margin_accuracy`` and every distinct entry
    of ``U`` within ``margin_U`` of ``sqrt(U_ii U_jj)`` (:func:`attnpaths.experiments.finite_width.sample_agreement`).

    Args:
        samples: ``{width: SampledPoint}`` (:func:`attnpaths.oneshot.temperature_grid.sample_widths`).
        selection: :func:`attnpaths.oneshot.temperature_grid.selected` ``(grid, ...)``, the reference.
    """
    return [
        fw_claims.sample_agreement(
            f"{claim} (N={w})", **arguments, reference="the theory's saddle point", where=f" at N={w}"
        )
        for w, arguments in _agreement_arguments(samples, selection, grid, margin_accuracy, margin_U, level).items()
    ]


def sample_agreement_powers(
    samples: dict, *, selection: dict, grid: TheorySweep, margin_accuracy: float, margin_U: float, level: float = 0.01
) -> dict[int, float]:
    """The power checks of :func:`sample_agreements` (same arguments): ``{width: probability}`` that the claim at
    that width holds were the samples exactly the saddle point, at their Monte-Carlo errors
    (:func:`attnpaths.experiments.finite_width.sample_agreement_power`)."""
    return {
        w: fw_claims.sample_agreement_power(**arguments)
        for w, arguments in _agreement_arguments(samples, selection, grid, margin_accuracy, margin_U, level).items()
    }


def _agreement_arguments(samples, selection, grid, margin_accuracy, margin_U, level) -> dict[int, dict]:
    arguments = {}
    for w, point in samples.items():
        k = grid.index(w)
        arguments[w] = dict(
            points=[point],
            reference_accuracy={w: selection["accuracy"]["test"][k]},
            reference_U={w: selection["U"][k]},
            margin_accuracy=margin_accuracy,
            margin_U=margin_U,
            level=level,
        )
    return arguments


# --------------------------------------------------------------------------------------------------------
# the interplay of paths, the entropy weight and the samples' approach to the saddle point (sec-oneshot-interplay,
# sec-oneshot-saddle)


def interplay_gains(
    claim: str, *, means: dict, labels, width: int, level: float = LEVEL, where: str = ""
) -> tuple[Verdict, Verdict]:
    """Two claims on the mechanism of the finite-width gain on the test episodes, at one width and temperature
    (sec-oneshot-interplay; the one-episode-set form of :func:`attnpaths.hmc.claims.interplay_gains`):

    * ``claim`` (cross-path weights): the predictor with the theory's ``U`` is more accurate than with ``U``'s
      cross-path entries set to zero (its diagonal kept);
    * ``claim + "w"`` (same-path weights): the predictor with ``U``'s diagonal alone is more accurate than the GP
      limit's (``U = I``) at the same temperature.

    Args:
        means: ``{"theory", "diagonal", "gp"}`` ``[B]`` mean predictors on the same test episodes
            (:func:`attnpaths.oneshot.temperature_grid.ablation_means`); labels: ``[B]`` ``+-1``.

    Test: one-sided paired z-tests (:func:`attnpaths.experiments.finite_width.paired_accuracy_gain`); either may
    hold, be not significant or be contradicted.
    """
    missing = {"theory", "diagonal", "gp"} - set(means)
    if missing:
        raise ValueError(f"means must hold the predictors 'theory', 'diagonal' and 'gp', missing {sorted(missing)}")
    n = int(width)
    return tuple(
        fw_claims.paired_accuracy_gain(
            claim + suffix,
            f"{statement} at N={n}{where}",
            source=source,
            mean=means[a],
            reference_mean=means[b],
            labels=labels,
            names=tuple(name.format(n=n) for name in names),
            level=level,
            where=where,
        )
        for suffix, a, b, statement, source, names in INTERPLAY
    )


def interplay_power(means: dict, labels, *, level: float = LEVEL, power: float = 0.8):
    """The power check of :func:`interplay_gains`: for claim I and Iw the gain that its test detects with probability
    ``power`` at its paired standard error (:func:`attnpaths.claims.power_check`), beside the measured gain."""
    pairs = {"I" + suffix: (a, b) for suffix, a, b, *_ in INTERPLAY}
    labels = np.asarray(labels, dtype=np.float64)
    se = {
        k: max(fw_claims.paired_accuracy_sd(means[b], means[a], labels), 1.0 / labels.size)
        for k, (a, b) in pairs.items()
    }
    estimate = {
        k: float(np.mean(np.sign(means[a]) == labels) - np.mean(np.sign(means[b]) == labels))
        for k, (a, b) in pairs.items()
    }
    return power_check(
        "I/Iw",
        se=se,
        estimate=estimate,
        level=level,
        power=power,
        condition="on these test episodes (paired standard errors)",
        effect="a gain",
        scale=100,
        unit="accuracy points",
    )


class SaddleReference:
    """The saddle point at one width in the form that
    :func:`attnpaths.experiments.finite_width.entropy_weight_estimate` reads: ``U`` and its standard error (zero: a
    solve, not a Monte-Carlo estimate) and ``scaled``, the saddle point at neighbouring entropy weights."""

    def __init__(self, U, scaled: dict):
        self.U = as_float64_array(U, "U")
        self.U_se = np.zeros_like(self.U)
        self.scaled = {float(c): SaddleReference(u, {}) for c, u in scaled.items()}


def entropy_weight_agreement(
    claim: str,
    *,
    samples: dict,
    saddle: dict,
    widths,
    margin: float,
    reference_scale: float = 1.0,
    level: float = LEVEL,
) -> Verdict:
    """Claim: the network's posterior samples at ``widths`` measure the entropy weight of the action (eq-action) as 1,
    within ``margin``, against the saddle point (sec-oneshot-saddle): the one-shot form of the hidden-Markov-chain
    chapter's claim 2w, whose reference is the exact mean of ``U`` instead.

    Args:
        samples: ``{width: SampledPoint}``.
        saddle: ``{width: {c: [n, n]}}`` the theory's ``U`` at entropy weight ``c``
            (:func:`attnpaths.oneshot.temperature_grid.scaled_saddle_points`), with ``c = 1``, one ``c`` below and
            one above 1.
        widths: the widths that enter (each in ``samples`` and ``saddle``).
        reference_scale: 1 for the theory as written; another ``c`` of ``saddle`` for a wrong theory (an action with
            its entropy weighted by ``c``), which the claim must contradict.

    Test: :func:`attnpaths.experiments.finite_width.entropy_weight_agreement`. The saddle point misses the exact
    finite-width mean by terms of order ``1 / N``; the reduced chi-square widens the interval where they show.
    """
    widths = [int(w) for w in widths]
    missing = [w for w in widths if w not in samples or w not in saddle]
    if not widths or missing:
        raise ValueError(f"widths must be sampled widths with saddle points, got {widths} (missing {missing})")
    references = {}
    for w in widths:
        by_scale = {float(c): u for c, u in saddle[w].items()}
        if 1.0 not in by_scale:
            raise ValueError(f"saddle[{w}] must hold the entropy weight 1, got {sorted(by_scale)}")
        references[w] = SaddleReference(by_scale.pop(1.0), by_scale)
    return fw_claims.entropy_weight_agreement(
        claim,
        points={w: samples[w] for w in widths},
        exact=references,
        margin=margin,
        reference_scale=reference_scale,
        level=level,
        where=" (reference: the saddle point)",
        source=SOURCE_ENTROPY_WEIGHT,
    )


def saddle_deviation(samples: dict, reference_U: dict) -> dict[str, np.ndarray]:
    """How far the samples' ``U`` lies from the saddle point at every sampled width (sec-oneshot-saddle): the
    relative distance ``r(N) = ||U_sampled - U_theory||_F / ||U_theory||_F``, corrected for the Monte-Carlo noise
    (whose expected square ``sum se^2`` is subtracted from the squared distance), and its standard error (delta
    method).

    Args:
        samples: ``{width: SampledPoint}``; reference_U: ``{width: [n, n]}`` the saddle point at that width.

    Returns:
        ``{"N", "r", "se"}``, each ``[n_w]`` in increasing width.
    """
    widths = sorted(w for w in samples if w in reference_U)
    if not widths:
        raise ValueError("samples and reference_U must share a width")
    r, se = [], []
    for w in widths:
        U = as_float64_array(reference_U[w], "reference_U")
        D = as_float64_array(samples[w].U, "U") - U
        S = as_float64_array(samples[w].U_se, "U_se")
        scale = float(np.linalg.norm(U))
        raw = float(np.linalg.norm(D))
        r.append(math.sqrt(max(raw**2 - float(np.sum(S**2)), 0.0)) / scale)
        # d||D|| / dD_ij = D_ij / ||D||; the symmetric pair (i, j), (j, i) is one Monte-Carlo estimate
        iu = np.triu_indices(D.shape[0])
        weight = np.where(iu[0] == iu[1], 1.0, 2.0)
        se.append(float(np.sqrt(np.sum((weight * D[iu] / max(raw, 1e-300) * S[iu]) ** 2))) / scale)
    return {"N": np.array(widths), "r": np.array(r), "se": np.maximum(np.array(se), 1e-12)}


def _resolved(deviation: dict) -> np.ndarray:
    """The widths whose distance from the saddle point is resolved beyond its Monte-Carlo noise (``r > 2 se``)."""
    r, se = np.asarray(deviation["r"], dtype=np.float64), np.asarray(deviation["se"], dtype=np.float64)
    return r > 2 * se


def _decay_slope(deviation: dict) -> tuple[float, float, float, float]:
    """Weighted least-squares slope of ``log r`` against ``log N`` over the resolved widths (weights from the standard
    errors of ``log r``), its standard error inflated by ``sqrt(chi^2 / dof)`` when the points scatter more than
    their errors, that reduced chi-square (``dof``: the resolved widths minus 2) and its p-value."""
    keep = _resolved(deviation)
    N, r, se = (np.asarray(deviation[k], dtype=np.float64)[keep] for k in ("N", "r", "se"))
    if N.size < 3:
        raise ValueError(f"the slope needs at least 3 widths with a resolved deviation, got {N.size}")
    x, y, w = np.log(N), np.log(r), (r / se) ** 2
    X = np.stack([np.ones_like(x), x], axis=1)
    cov = np.linalg.inv(X.T @ (w[:, None] * X))
    beta = cov @ X.T @ (w * y)
    dof = N.size - 2
    chi2_dof = float(np.sum(w * (y - X @ beta) ** 2)) / dof
    p_fit = float(stats.chi2.sf(chi2_dof * dof, dof))
    return float(beta[1]), float(math.sqrt(cov[1, 1] * max(1.0, chi2_dof))), chi2_dof, p_fit


#: The standard error given to a slope that cannot be measured (fewer than 3 resolved widths): the claim is then
#: not significant and has no power, whatever its margin.
_UNMEASURED_SE = 1e6


def deviation_decay(claim: str, deviation: dict, *, margin: float = 0.5, level: float = LEVEL) -> Verdict:
    """Claim: the samples' distance from the saddle point falls like ``1 / N`` (sec-oneshot-saddle): the saddle
    point is the large-``N`` limit of the finite-width mean of ``U``, whose first correction is of order ``1 / N``.

    Args:
        deviation: :func:`saddle_deviation`'s ``{"N", "r", "se"}``. Only widths whose distance is resolved beyond
            its noise (``r > 2 se``) enter; with fewer than 3 of them the slope is not measured and the claim is not
            significant.
        margin: how far the slope of ``log r`` against ``log N`` may lie from -1 (0.5 separates ``1 / N`` from
            ``1 / sqrt(N)`` and from ``1 / N^2``).

    Test: :func:`attnpaths.claims.equivalence` of the weighted least-squares slope to -1, provided that the power law
    fits: where its chi-square rejects it at ``level`` (the points scatter about the line beyond their errors), the
    slope describes no law of the points, and the claim is not significant whatever the slope (it is decided with a
    standard error so large that it can neither hold nor be contradicted).
    """
    keep = _resolved(deviation)
    widths = ", ".join(str(int(w)) for w in np.asarray(deviation["N"])[keep])
    left_out = [int(w) for w in np.asarray(deviation["N"])[~keep]]
    distances = "r = " + ", ".join(f"{v:.3g} (N = {int(N)})" for N, v in zip(deviation["N"], deviation["r"]))
    note = f"; N = {', '.join(map(str, left_out))} within 2 standard errors of 0, left out" if left_out else ""
    if keep.sum() >= 3:
        slope, se, chi2_dof, p_fit = _decay_slope(deviation)
        dof = int(keep.sum()) - 2
        measured = (
            f"Slope {slope:+.2f} +- {se:.2f} over N = {widths} ({distances}{note}; chi-square {chi2_dof * dof:.1f} "
            f"on {dof} degrees of freedom, p = {p_fit:.2g}), margin {margin:g} around -1."
        )
        if p_fit < level:
            se = _UNMEASURED_SE
            measured += (
                f" The power law is rejected by its chi-square (p < {level:g}): the points do not follow N^slope "
                "within their errors, so the slope is no measurement of the decay."
            )
    else:
        slope, se = -1.0, _UNMEASURED_SE
        measured = f"The slope is not measured: fewer than 3 widths resolve their distance ({distances}{note})."
    return equivalence(
        claim,
        "the samples approach the saddle point like 1/N as the width grows",
        source=fw_claims.SOURCE_SADDLE,
        statistic="|slope of log r against log N + 1| / margin",
        deviation=[slope + 1.0],
        se=[se],
        margin=[float(margin)],
        level=level,
        measured=measured,
    )


def deviation_decay_power(deviation: dict, *, margin: float = 0.5, level: float = LEVEL) -> float:
    """The power check of :func:`deviation_decay`: the probability that it holds were the slope exactly -1, at the
    standard error of this run's slope (:func:`attnpaths.claims.equivalence_power`); 0 where the slope is not
    measured (fewer than 3 resolved widths, or a power law that its chi-square rejects at ``level``)."""
    if _resolved(deviation).sum() < 3:
        return 0.0
    _, se, _, p_fit = _decay_slope(deviation)
    return 0.0 if p_fit < level else equivalence_power(se, margin, level)


def exact_mean_sentence(comparison: dict, diagnostics: dict, *, margin_U: float, near_gp_width: int) -> str:
    """The sentence that sets the samples and the saddle point against the exact finite-width mean of ``U``
    (sec-oneshot-exact): their largest entry-wise distance from it at each width, the exact chains' convergence, and
    the outcome of claim 2e's test fed ``U`` near the GP limit in place of the samples; with no width, why claim 2e
    is not tested.

    Args:
        comparison: ``{N: {"samples_distance", "saddle_distance", "near_gp_outcome", "near_gp_statistic"}}``, the
            distances as largest ``|U_ij - U_exact,ij| / sqrt(U_exact,ii U_exact,jj)``; may be empty.
        diagnostics: ``{N: {"max_rhat", "min_ess", ...}}`` of the exact chains at the same widths.
        margin_U: claim 2's margin on the entries of ``U``; near_gp_width: the width of ``U`` near the GP limit.

    Returns:
        Markdown text.
    """
    if set(comparison) != set(diagnostics):
        raise ValueError(
            f"comparison and diagnostics must have the same widths, got {sorted(comparison)} and {sorted(diagnostics)}"
        )
    if not comparison:
        return (
            "This run samples the exact density at no width (the profile's `exact_widths` is empty), so claim 2e is "
            "not tested: in this many dimensions the sampler of `attnpaths.order_parameter_posterior` finds no mode "
            "of the density at the smaller sampled widths, and at the larger ones its Metropolis chains, started "
            "from the Laplace approximation at the mode, do not converge within the chapter's budget."
        )
    distances = "; ".join(
        f"at N = {w} the samples {row['samples_distance']:.3f} and the saddle point {row['saddle_distance']:.3f}"
        for w, row in comparison.items()
    )
    outcomes = ", ".join(
        f"{row['near_gp_outcome']} at N = {w} (largest deviation over margin {row['near_gp_statistic']:.2f})"
        for w, row in comparison.items()
    )
    return (
        f"Largest |U_ij - U_exact,ij| relative to sqrt(U_exact,ii U_exact,jj) (claim 2's margin: {margin_U:g}): "
        f"{distances}. The exact chains reach a split R-hat of at most "
        f"{max(d['max_rhat'] for d in diagnostics.values()):.3f} and an effective sample size of at least "
        f"{min(d['min_ess'] for d in diagnostics.values()):.0f} per entry of U. Fed U near the GP limit "
        f"(N = {near_gp_width}) in place of the samples, claim 2e's test is {outcomes}."
    )
