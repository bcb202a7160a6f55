"""The depth chapter's claims (sec-depth-claims): the finite-width claims asked of networks deeper or wider than the
paper's, as tests (any task).

* :func:`exact_mean_agreement`: posterior samples of the finite network agree with the exact finite-width mean
  of ``U`` (eq-exact-density) and with the theory's accuracy, within margins (an equivalence test,
  :func:`attnpaths.experiments.finite_width.sample_agreement`);
* :func:`finite_width_advantage`: at small width the theory's predictor is more accurate than the GP limit, or
  not (a paired z-test, :func:`attnpaths.experiments.finite_width.finite_width_advantage`);
* :func:`saddle_point_agreement`: the theory's ``U`` agrees with the exact finite-width mean where the
  finite-width shift is small (:func:`attnpaths.experiments.finite_width.saddle_point_agreement`);
* :func:`entropy_weight_agreement`: the samples measure the action's entropy weight as 1, within a margin;
* :func:`cross_path_weights`: cross-path weights (off-diagonal ``U``) appear at finite width, in the finite
  network's posterior;
* :func:`cross_weight_decay` (a structural check, not a claim): the theory's cross weights vanish towards the
  GP limit, where ``U`` is diagonal (eq-gp).

The paper asks these questions of two-layer networks; here they are asked of other networks, so every verdict
names this book as its source.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..._validation import as_float64_array, positive_real
from ...claims import Verdict, directional_z, exact
from ...experiments import finite_width as fw

#: Where the claims of the depth chapter come from.
SOURCE = "this book, beyond the paper (a finite-width claim asked of another network)"


def _sourced(verdict: Verdict) -> Verdict:
    return dataclasses.replace(verdict, source=SOURCE)


def _exact_widths(points, exact) -> list[int]:
    if not exact:
        raise ValueError("exact must hold the exact finite-width mean of U at one width at least")
    missing = sorted(set(exact) - set(points))
    if missing:
        raise ValueError(f"points must hold a sampled width for every exact width, missing {missing}")
    return sorted(exact)


def _upper(exact, widths):
    return {w: (exact[w].U_upper, exact[w].U_upper_se) for w in widths}


def exact_mean_agreement_power(
    *, points, exact, reference_accuracy, margin_accuracy: float = 0.02, margin_U: float = 0.1, level: float = 0.01
) -> float:
    """The power check of :func:`exact_mean_agreement` (same arguments): the probability that its test holds if
    the samples matched the exact mean and the theory's accuracy exactly, given the Monte-Carlo errors of both
    (:func:`attnpaths.experiments.finite_width.sample_agreement_power`)."""
    widths = _exact_widths(points, exact)
    return fw.sample_agreement_power(
        points=[points[w] for w in widths],
        reference_accuracy=reference_accuracy,
        reference_U={w: e.U for w, e in exact.items()},
        reference_U_se={w: e.U_se for w, e in exact.items()},
        margin_accuracy=margin_accuracy,
        margin_U=margin_U,
        level=level,
        reference_upper=_upper(exact, widths),
    )


def exact_mean_agreement(
    claim: str,
    *,
    points,
    exact,
    reference_accuracy,
    margin_accuracy: float = 0.02,
    margin_U: float = 0.1,
    level: float = 0.01,
    where: str = "",
) -> Verdict:
    """Claim: at every width with an exact finite-width mean of ``U``, the network's posterior samples agree
    with it (each distinct entry of ``U_1`` and of the order parameters ``U_2, ..., U_L`` of the layers above,
    within ``margin_U`` of ``sqrt(U_ii U_jj)``) and the sampled accuracy agrees with the theory's (within
    ``margin_accuracy``).

    Args:
        points: ``{width: SampledPoint}`` (:func:`attnpaths.experiments.sampling.sample_widths`); only the
            widths in ``exact`` are tested.
        exact: ``{width: ExactOrderParameter}`` (``U``, ``U_se``), at least one width.
        reference_accuracy: ``{width: accuracy}`` of the theory.

    Test: :func:`attnpaths.experiments.finite_width.sample_agreement` (two one-sided tests per number, Bonferroni
    over all of them).
    """
    widths = _exact_widths(points, exact)
    return _sourced(
        fw.sample_agreement(
            claim,
            points=[points[w] for w in widths],
            reference_accuracy=reference_accuracy,
            reference_U={w: e.U for w, e in exact.items()},
            reference_U_se={w: e.U_se for w, e in exact.items()},
            margin_accuracy=margin_accuracy,
            margin_U=margin_U,
            level=level,
            reference_upper=_upper(exact, widths),
            reference="the exact finite-width mean of U_1 .. U_L and the theory's accuracy",
            where=where,
        )
    )


def finite_width_advantage(
    claim: str, *, theory_mean, gp_mean, labels, width: int, level: float = 0.01, where: str = ""
) -> Verdict:
    """Claim: at width ``width`` the theory's mean predictor is more accurate than the GP limit's (paired
    one-sided z-test on the test set, :func:`attnpaths.experiments.finite_width.finite_width_advantage`)."""
    return _sourced(
        fw.finite_width_advantage(
            claim, theory_mean=theory_mean, gp_mean=gp_mean, labels=labels, width=width, level=level, where=where
        )
    )


def saddle_point_agreement(
    claim: str,
    *,
    exact,
    theory_U,
    num_paths: int,
    margin_fw: float = 0.04,
    level: float = 0.01,
    where: str = "",
    theory_upper=None,
) -> Verdict:
    """Claim: the theory's ``U_1 .. U_L`` (the saddle point of the action; ``theory_upper``: ``{width: (U_2, ...,
    U_L)}``) agree with the exact finite-width means within ``margin_fw`` of the finite-width effect, where the
    finite-width scale ``(n + 1) / N`` is small (:func:`attnpaths.experiments.finite_width.saddle_point_agreement`:
    the saddle-point approximation and the solver, not the action)."""
    return _sourced(
        fw.saddle_point_agreement(
            claim,
            exact=exact,
            theory_U=theory_U,
            num_paths=num_paths,
            margin_fw=margin_fw,
            level=level,
            where=where,
            theory_upper=theory_upper,
        )
    )


def entropy_weight_agreement(
    claim: str,
    *,
    points,
    exact,
    margin: float = 0.05,
    reference_scale: float = 1.0,
    level: float = 0.01,
    where: str = "",
) -> Verdict:
    """Claim: the network's posterior samples measure the action's entropy weight as 1 within ``margin``
    (:func:`attnpaths.experiments.finite_width.entropy_weight_agreement`: the test of the action that shares no
    code with it); only the widths of ``exact`` with neighbouring runs enter."""
    scaled = {w: e for w, e in exact.items() if e.scaled}
    if not scaled:
        raise ValueError("exact must hold a width with neighbouring runs (ExactOrderParameter.scaled)")
    return _sourced(
        fw.entropy_weight_agreement(
            claim, points=points, exact=scaled, margin=margin, reference_scale=reference_scale, level=level, where=where
        )
    )


def largest_cross_weight(U) -> tuple[float, tuple[int, int]]:
    """The largest normalised cross-path weight ``max_{i<j} |U_ij| / sqrt(U_ii U_jj)`` of ``U`` ``[n, n]`` (``n >= 2``)
    and its entry ``(i, j)``."""
    U = as_float64_array(U, "U")
    if U.ndim != 2 or U.shape[0] != U.shape[1] or U.shape[0] < 2 or np.any(np.diag(U) <= 0):
        raise ValueError(f"U must be an [n, n] matrix with n >= 2 and a positive diagonal, got shape {U.shape}")
    ratio = np.abs(U) / np.sqrt(np.outer(np.diag(U), np.diag(U)))
    i, j = np.triu_indices(U.shape[0], k=1)
    k = int(np.argmax(ratio[i, j]))
    return float(ratio[i[k], j[k]]), (int(i[k]), int(j[k]))


def _cross_inputs(widths, theory_U):
    widths = as_float64_array(widths, "widths")
    U = as_float64_array(theory_U, "theory_U")
    if widths.ndim != 1 or widths.size < 2 or np.any(np.diff(widths) <= 0):
        raise ValueError(f"widths must be at least two strictly increasing widths, got {widths.tolist()}")
    if U.ndim != 3 or U.shape[0] != widths.size or U.shape[1] != U.shape[2]:
        raise ValueError(f"theory_U must be [{widths.size}, n, n], got {U.shape}")
    return widths, U


def cross_path_weights(
    claim: str,
    *,
    widths,
    theory_U,
    sampled_U,
    sampled_U_se,
    sampled_width: int,
    level: float = 0.01,
    names=None,
    where: str = "",
) -> Verdict:
    """Claim: the finite network's posterior carries cross-path weights (off-diagonal ``U``, absent in the GP
    limit, eq-gp) at a small width, with the theory's sign.

    Args:
        widths: ``[n_w]`` strictly increasing widths of the theory (at least two).
        theory_U: ``[n_w, n, n]`` the theory's ``U`` at these widths.
        sampled_U, sampled_U_se: ``[n, n]`` the sampled ``U`` (eq-sampled-u) at ``sampled_width`` and its
            Monte-Carlo standard errors.
        sampled_width: one of ``widths``.
        names: path names (for the message), default the indices.

    Test: the entry ``(i, j)`` with the theory's largest normalised cross weight ``|U_ij| / sqrt(U_ii U_jj)`` at
    ``sampled_width`` (chosen from the theory, so the samples are not searched for their largest entry) is
    tested in the samples with the theory's sign: one-sided z-test of ``z = sign(U^theory_ij) U^sampled_ij / se``
    (:func:`attnpaths.claims.directional_z`). That the theory's cross weights vanish towards the GP limit follows
    from the form of the action and is a structural check (:func:`cross_weight_decay`).
    """
    widths, U = _cross_inputs(widths, theory_U)
    sampled, se = as_float64_array(sampled_U, "sampled_U"), as_float64_array(sampled_U_se, "sampled_U_se")
    if sampled.shape != U.shape[1:] or se.shape != U.shape[1:]:
        raise ValueError(
            f"sampled_U and sampled_U_se must be [{U.shape[1]}, {U.shape[1]}], got {sampled.shape}, {se.shape}"
        )
    hits = np.flatnonzero(widths == sampled_width)
    if hits.size == 0:
        raise ValueError(f"sampled_width must be one of the widths {widths.tolist()}, got {sampled_width!r}")
    names = [str(k) for k in range(U.shape[1])] if names is None else [str(n) for n in names]
    _, (i, j) = largest_cross_weight(U[hits[0]])
    sign = float(np.sign(U[hits[0], i, j]))
    entry = f"U[{names[i]},{names[j]}]"
    return _sourced(
        directional_z(
            claim,
            f"cross-path weights appear at finite width{where}",
            source=SOURCE,
            statistic=f"theory's sign x sampled {entry} at N={int(sampled_width)}",
            estimate=sign * sampled[i, j],
            se=max(float(se[i, j]), 1e-12),
            level=level,
            measured=(
                f"Sampled {entry} at N={int(sampled_width)}: {sampled[i, j]:+.3f} +- {se[i, j]:.3f} (theory "
                f"{U[hits[0], i, j]:+.3f}, its largest normalised cross weight there){where}."
            ),
        )
    )


def cross_weight_decay(claim: str, *, widths, theory_U, u_gp: float = 1.0, where: str = "") -> Verdict:
    """Structural check: the theory's largest cross weight ``c(N) = max_{i != j} |U_ij| / u_gp`` falls strictly
    with ``N``, and from the smallest to the largest width at least as fast as ``1 / sqrt(N)``,
    ``c(N_max) <= c(N_min) sqrt(N_min / N_max)`` (exact: no sampling error). Any action ``E + N s`` whose
    entropy is smallest at the diagonal ``U_GP`` has it once the solver converges (its minimum tends to
    ``U_GP`` as ``1 / N``), so it checks the solver, not the theory.

    Args:
        widths: ``[n_w]`` strictly increasing widths; theory_U: ``[n_w, n, n]``.
    """
    widths, U = _cross_inputs(widths, theory_U)
    u_gp = positive_real(u_gp, "u_gp")
    off_diagonal = ~np.eye(U.shape[1], dtype=bool)
    ratios = np.array([np.abs(u[off_diagonal]).max() / u_gp for u in U])
    n_min, n_max = int(widths[0]), int(widths[-1])
    bound = ratios[0] * np.sqrt(widths[0] / widths[-1])
    return exact(
        claim,
        f"the theory's cross-path weights vanish towards the GP limit{where}",
        source=SOURCE,
        statistic=f"c(N={n_max}) / (c(N={n_min}) sqrt({n_min}/{n_max}))",
        value=float(ratios[-1] / bound),
        criterion=f"c(N) = max |U_ij| / U_GP, i != j, falls strictly with N and c(N={n_max}) <= "
        f"c(N={n_min}) sqrt({n_min}/{n_max})",
        satisfied=bool(np.all(np.diff(ratios) < 0) and ratios[-1] <= bound),
        measured=(
            "theory c(N) = "
            + ", ".join(f"{r:.3f}" for r in ratios)
            + " at N = "
            + ", ".join(str(int(w)) for w in widths)
            + f" (0 in the GP limit){where}."
        ),
    )
