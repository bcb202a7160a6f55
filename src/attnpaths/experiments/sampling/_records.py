"""Summaries of sampled widths: a chapter's results records, the comparison of the samples with the saddle point,
and the sampler table."""

from __future__ import annotations

import numpy as np

from ..finite_width import entry_scale
from ._exact import finite_width_epsilon


def sampled_accuracy_record(points: dict) -> dict:
    """``{"N": [n_s], "accuracy": [n_s], "mc_sd": [n_s]}``: the sampled mean predictor's test accuracy and its
    Monte-Carlo standard deviation (:func:`accuracy_mc_sd`) at every sampled width of ``points``
    (``{width: SampledPoint}``, as returned by :func:`sample_widths`)."""
    return {
        "N": list(points),
        "accuracy": [p.accuracy for p in points.values()],
        "mc_sd": [p.accuracy_mc_sd for p in points.values()],
    }


def sampler_record(points: dict) -> dict:
    """Per sampled width (key ``str(N)``): the sampler's diagnostics (:attr:`SampledPoint.diagnostics`) with the
    ESS (``U_ess``) and the Monte-Carlo standard error (``U_mc_se``) of every entry of the sampled ``U``
    (eq-sampled-u), ``[n, n]`` in figure order."""
    return {str(w): dict(p.diagnostics, U_ess=p.U_ess, U_mc_se=p.U_se) for w, p in points.items()}


def exact_record(exacts: dict) -> dict:
    """Per width (key ``str(N)``) of ``exacts`` (``{width: ExactOrderParameter}``): the exact posterior mean of
    ``U`` (eq-exact-density), its Monte-Carlo standard error ``U_mc_se``, the density's ``mode`` (all
    ``[n, n]``, figure order) and the Metropolis run's diagnostics; under ``scaled`` (key ``f"{c:g}"``) the
    same for the runs with the entropy weighted by ``c``."""
    record = {}
    for w, e in exacts.items():
        record[str(w)] = {"U": e.U, "U_mc_se": e.U_se, "mode": e.mode, **e.diagnostics}
        if e.U_upper:
            record[str(w)]["U_upper"] = {
                f"U_{l + 2}": {"U": U, "U_mc_se": se} for l, (U, se) in enumerate(zip(e.U_upper, e.U_upper_se))
            }
        if e.scaled:
            record[str(w)]["scaled"] = {
                f"{c:g}": {"width": s.width, "U": s.U, "U_mc_se": s.U_se, **s.diagnostics} for c, s in e.scaled.items()
            }
    return record


def largest_accuracy_difference(points: dict, reference_accuracy: dict) -> float:
    """``max_N |A_sampled(N) - A_reference(N)|`` over the sampled widths of ``points``.

    Args:
        points: ``{width: SampledPoint}``; reference_accuracy: ``{width: accuracy}`` holding every sampled width
            (e.g. the theory's accuracy, eq-predictor).
    """
    missing = [w for w in points if w not in reference_accuracy]
    if not points or missing:
        raise ValueError(f"reference_accuracy must hold every sampled width {list(points)}, missing {missing}")
    return float(max(abs(p.accuracy - reference_accuracy[w]) for w, p in points.items()))


def saddle_point_z_max(points: dict, theory_U: dict) -> dict:
    """Per sampled width, the largest ``|U_sampled - U_theory| / se`` over the entries of ``U``: how many
    Monte-Carlo standard errors the samples (eq-sampled-u) lie from the saddle point (eq-action).

    Args:
        points: ``{width: SampledPoint}``; theory_U: ``{width: [n, n]}`` the theory's ``U`` in figure order,
            holding every sampled width.
    Returns:
        ``{width: z}``.
    """
    missing = [w for w in points if w not in theory_U]
    if missing:
        raise ValueError(f"theory_U must hold every sampled width {list(points)}, missing {missing}")
    return {w: float(np.abs((p.U - theory_U[w]) / p.U_se).max()) for w, p in points.items()}


def finite_width_shift(points: dict, exacts: dict, theory_U: dict) -> dict:
    """The diagonal of ``U`` at every sampled width relative to the saddle point, for the network's samples
    (eq-sampled-u) and for the exact posterior mean (eq-exact-density): ``U_ii / U_theory,ii - 1``, an
    ``O(1/N)`` shift (:func:`finite_width_epsilon`).

    Args:
        points: ``{width: SampledPoint}``; exacts: ``{width: ExactOrderParameter}`` and theory_U:
            ``{width: [n, n]}`` (figure order), both holding every sampled width.
    Returns:
        a dict with ``"N": [n_s]``, ``"relative_diagonal_shift": [n_s, n]``, ``"relative_mc_se": [n_s, n]``,
        ``"exact_relative_diagonal_shift": [n_s, n]``, ``"exact_relative_mc_se": [n_s, n]`` and
        ``"epsilon": [n_s]``, the
        standard errors relative to the theory's diagonal and ``epsilon = (n + 1) / N``.
    """
    widths = list(points)
    missing = [w for w in widths if w not in exacts or w not in theory_U]
    if not widths or missing:
        raise ValueError(f"exacts and theory_U must hold every sampled width {widths}, missing {missing}")
    theory_diag = np.array([np.diag(theory_U[w]) for w in widths])

    def diagonal(matrices):
        return np.array([np.diag(m) for m in matrices])

    return {
        "N": widths,
        "relative_diagonal_shift": diagonal(points[w].U for w in widths) / theory_diag - 1,
        "relative_mc_se": diagonal(points[w].U_se for w in widths) / theory_diag,
        "exact_relative_diagonal_shift": diagonal(exacts[w].U for w in widths) / theory_diag - 1,
        "exact_relative_mc_se": diagonal(exacts[w].U_se for w in widths) / theory_diag,
        "epsilon": [finite_width_epsilon(w, theory_diag.shape[1]) for w in widths],
    }


def kept_draws(diagnostics: dict) -> str:
    """``"S"``, or ``"S of M"`` when a run stopped on its :class:`PrecisionTarget` after ``S`` of its most ``M``
    draws per chain (``diagnostics``: a run's ``num_samples`` and ``max_samples``)."""
    kept = diagnostics["num_samples"]
    most = diagnostics.get("max_samples", kept)
    return str(kept) if most == kept else f"{kept} of {most}"


def diagnostics_table(runs: dict) -> str:
    """Markdown table of the sampler diagnostics (sec-hmc-sampler): per network and sampled width, the network
    sampler's chains, draws kept (and the most it could keep, when it stopped on a :class:`PrecisionTarget`) and
    warm-up, the min / median ESS and max split R-hat of the test predictions, the min ESS of ``U`` and the largest
    relative standard error of its entries (``se / sqrt(|U_ii U_jj|)``, what the target bounds) and the wall time,
    and the exact-density run's chains, draws, min ESS, max R-hat and time.

    Args:
        runs: ``{network label: (points, exacts)}`` with ``points`` ``{width: SampledPoint}`` and ``exacts``
            ``{width: ExactOrderParameter}`` holding every sampled width.
    """
    lines = [
        "| network | N | chains x draws (warm-up) | min / median ESS of f | max R-hat of f | min ESS of U "
        "| max relative se of U | wall time (s) | exact mean: chains x draws, min ESS, max R-hat, time (s) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, (points, exacts) in runs.items():
        missing = [w for w in points if w not in exacts]
        if missing:
            raise ValueError(f"runs[{name!r}] must have an exact run at every sampled width, missing {missing}")
        for w, p in points.items():
            d, e = p.diagnostics, exacts[w].diagnostics
            draws = kept_draws(d)
            relative_se = np.max(p.U_se / entry_scale(p.U))
            lines.append(
                f"| {name} | {w} | {d['num_chains']} x {draws} ({d['num_warmup']}) | "
                f"{d['min_predictor_ess']:.0f} / {d['median_predictor_ess']:.0f} | "
                f"{d['max_predictor_rhat']:.3f} | "
                f"{d['min_U_ess']:.0f} | {relative_se:.4f} | {d['wall_time_s']:.1f} | "
                f"{e['num_chains']} x {kept_draws(e)}, "
                f"{e['min_ess']:.0f}, {e['max_rhat']:.3f}, {e['wall_time_s']:.1f} |"
            )
    return "\n".join(lines)
