"""The depth chapter's claims (sec-depth-claims): the finite-width claims of
:mod:`attnpaths.experiments.finite_width` asked of networks deeper or wider than the paper's, and the cross-path
weights of the theory against the samples, as tests (any task).

The paper asks these questions of two-layer networks; here they are asked of other networks, so every verdict
names this book as its source.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np

from ..._validation import as_float64_array, positive_real
from ...claims import Verdict, by_outcome, equivalence, equivalence_power, exact
from ...experiments import finite_width as fw

#: Where the claims of the depth chapter come from.
SOURCE = "this book, beyond the paper (a finite-width claim asked of another network)"


def _sourced(verdict: Verdict) -> Verdict:
    return dataclasses.replace(verdict, source=SOURCE)


def _agreement_arguments(
    *, points, exact, reference_accuracy, margin_accuracy: float = 0.02, margin_U: float = 0.1, level: float = 0.01
) -> dict:
    """The arguments of :func:`attnpaths.experiments.finite_width.sample_agreement` at the widths of ``exact``
    (from those of :func:`exact_mean_agreement` but ``claim`` and ``where``)."""
    if not exact:
        raise ValueError("exact must hold the exact finite-width mean of U at one width at least")
    missing = sorted(set(exact) - set(points))
    if missing:
        raise ValueError(f"points must hold a sampled width for every exact width, missing {missing}")
    widths = sorted(exact)
    return dict(
        points=[points[w] for w in widths],
        reference_accuracy=reference_accuracy,
        reference_U={w: e.U for w, e in exact.items()},
        reference_U_se={w: e.U_se for w, e in exact.items()},
        margin_accuracy=margin_accuracy,
        margin_U=margin_U,
        level=level,
        reference_upper={w: (exact[w].U_upper, exact[w].U_upper_se) for w in widths},
    )


def exact_mean_agreement_power(**arguments) -> float:
    """The power check of :func:`exact_mean_agreement` (same arguments): the probability that its test holds if
    the samples matched the exact mean and the theory's accuracy exactly, given the Monte-Carlo errors of both
    (:func:`attnpaths.experiments.finite_width.sample_agreement_power`)."""
    return fw.sample_agreement_power(**_agreement_arguments(**arguments))


def exact_mean_agreement(claim: str, *, where: str = "", **arguments) -> Verdict:
    """Claim: at every width with an exact finite-width mean of ``U``, the network's posterior samples agree
    with it (each distinct entry of ``U_1`` and of the order parameters ``U_2, ..., U_L`` of the layers above,
    within ``margin_U`` of ``sqrt(U_ii U_jj)``) and the sampled accuracy agrees with the theory's (within
    ``margin_accuracy``).

    Args:
        points: ``{width: SampledPoint}`` (:func:`attnpaths.experiments.sampling.sample_widths`); only the
            widths in ``exact`` are tested.
        exact: ``{width: ExactOrderParameter}`` (``U``, ``U_se``), at least one width.
        reference_accuracy: ``{width: accuracy}`` of the theory.
        margin_accuracy, margin_U, level: as in :func:`attnpaths.experiments.finite_width.sample_agreement`
            (defaults 0.02, 0.1, 0.01).

    Test: :func:`attnpaths.experiments.finite_width.sample_agreement` (two one-sided tests per number, Bonferroni
    over all of them).
    """
    reference = "the exact finite-width mean of U_1 .. U_L and the theory's accuracy"
    return _sourced(fw.sample_agreement(claim, **_agreement_arguments(**arguments), reference=reference, where=where))


def finite_width_advantage(claim: str, **arguments) -> Verdict:
    """Claim: at width ``width`` the theory's mean predictor is more accurate than the GP limit's (paired
    one-sided z-test on the test set; the arguments of
    :func:`attnpaths.experiments.finite_width.finite_width_advantage`)."""
    return _sourced(fw.finite_width_advantage(claim, **arguments))


def saddle_point_agreement(claim: str, **arguments) -> Verdict:
    """Claim: the theory's ``U_1 .. U_L`` (the saddle point of the action; ``theory_upper``: ``{width: (U_2, ...,
    U_L)}``) agree with the exact finite-width means within ``margin_fw`` of the finite-width effect, where the
    finite-width scale ``(n + 1) / N`` is small (the arguments and test of
    :func:`attnpaths.experiments.finite_width.saddle_point_agreement`: the saddle-point approximation and the
    solver, not the action)."""
    return _sourced(fw.saddle_point_agreement(claim, **arguments))


def entropy_weight_agreement(claim: str, *, exact, **arguments) -> Verdict:
    """Claim: the network's posterior samples measure the action's entropy weight as 1 within ``margin``
    (the arguments and test of :func:`attnpaths.experiments.finite_width.entropy_weight_agreement`: the test of
    the action that shares no code with it); only the widths of ``exact`` with neighbouring runs enter."""
    scaled = {w: e for w, e in exact.items() if e.scaled}
    if not scaled:
        raise ValueError("exact must hold a width with neighbouring runs (ExactOrderParameter.scaled)")
    return _sourced(fw.entropy_weight_agreement(claim, exact=scaled, **arguments))


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


class _CrossEntries(NamedTuple):
    compared: list  # the sampled widths with (n + 1) / N <= max_epsilon
    deviation: np.ndarray  # sampled minus theory, at the theory's largest normalised cross weight
    se: np.ndarray
    margin: np.ndarray
    theory: np.ndarray  # the theory's value of that entry
    measured: str
    level: float


def _cross_entries(
    *,
    widths,
    theory_U,
    sampled_U,
    sampled_U_se,
    margin_fw: float = 0.04,
    max_epsilon: float = fw.SADDLE_MAX_EPSILON,
    u_gp: float = 1.0,
    level: float = 0.01,
    names=None,
) -> _CrossEntries:
    """The compared entries of :func:`cross_path_weights` (its arguments, but ``claim`` and ``where``): per sampled
    width with ``(n + 1) / N <= max_epsilon``, the theory's largest normalised cross weight, sampled minus theory,
    and the theory's value of that entry."""
    widths, U = _cross_inputs(widths, theory_U)
    n = U.shape[1]
    names = [str(k) for k in range(n)] if names is None else [str(name) for name in names]
    if len(names) != n:
        raise ValueError(f"names must name the {n} paths, got {len(names)}")
    sampled_U, sampled_U_se = dict(sampled_U), dict(sampled_U_se)
    if sorted(sampled_U) != sorted(sampled_U_se):
        raise ValueError(
            f"sampled_U and sampled_U_se must name the same widths, got {sorted(sampled_U)}, {sorted(sampled_U_se)}"
        )
    unknown = sorted(w for w in sampled_U if w not in widths)
    if unknown:
        raise ValueError(f"sampled_U must hold widths among the theory's widths {widths.tolist()}, got {unknown}")
    compared = fw.saddle_widths(sampled_U, n, max_epsilon, "sampled_U must hold a width")
    deviation, se, margin, texts, values = [], [], [], [], []
    for w in compared:
        theory = U[int(np.flatnonzero(widths == w)[0])]
        sampled = as_float64_array(sampled_U[w], f"sampled_U[{w}]")
        sampled_se = as_float64_array(sampled_U_se[w], f"sampled_U_se[{w}]")
        if sampled.shape != (n, n) or sampled_se.shape != (n, n):
            raise ValueError(
                f"sampled_U[{w}] and sampled_U_se[{w}] must be [{n}, {n}], got {sampled.shape}, {sampled_se.shape}"
            )
        _, (i, j) = largest_cross_weight(theory)
        m = margin_fw * float(np.abs(theory - u_gp * np.eye(n)).max())
        deviation.append(sampled[i, j] - theory[i, j])
        se.append(max(float(sampled_se[i, j]), 1e-12))
        margin.append(m)
        values.append(float(theory[i, j]))
        texts.append(
            f"U[{names[i]},{names[j]}] at N={int(w)}: sampled {sampled[i, j]:+.4f} +- {sampled_se[i, j]:.4f}, theory "
            f"{theory[i, j]:+.4f} ({abs(theory[i, j]) / m:.1f} margins from 0), margin {m:.4f}"
        )
    measured = f"{'; '.join(texts)} (margin {margin_fw:g} of max|U_theory - U_GP|)"
    return _CrossEntries(
        compared, np.array(deviation), np.array(se), np.array(margin), np.array(values), measured, level
    )


def cross_path_weights_power(**arguments) -> float:
    """The power check of :func:`cross_path_weights` with the same arguments (but ``claim``): the probability that
    its test holds were the theory's cross weights exactly the posterior's, at the samples' Monte-Carlo errors
    (:func:`attnpaths.claims.equivalence_power`)."""
    entries = _cross_entries(**arguments)
    return equivalence_power(entries.se, entries.margin, entries.level)


def cross_weight_margins(**arguments) -> dict[int, float]:
    """How many of its margins the theory's tested cross weight lies from 0 at each width that
    :func:`cross_path_weights` compares (its arguments, but ``claim``): ``{N: |U_ij| / margin}``. Where it is
    several, agreement within the margin means a weight of the theory's sign and size in the samples; near 1 or
    below, agreement would not tell the theory's weight from none."""
    entries = _cross_entries(**arguments)
    return {int(w): float(abs(v) / m) for w, v, m in zip(entries.compared, entries.theory, entries.margin)}


def cross_path_weights(claim: str, *, where: str = "", **arguments) -> Verdict:
    """Claim: the finite network's posterior carries the theory's cross-path weights (off-diagonal ``U``, absent
    in the GP limit, eq-gp), with the theory's value within a margin, where the saddle point applies.

    Args:
        widths: ``[n_w]`` strictly increasing widths of the theory (at least two).
        theory_U: ``[n_w, n, n]`` the theory's ``U`` at these widths.
        sampled_U, sampled_U_se: ``{width: [n, n]}`` the sampled ``U`` (eq-sampled-u) and its Monte-Carlo
            standard errors at sampled widths among ``widths``; only those with ``(n + 1) / N <= max_epsilon``
            are compared (the saddle point's relative error scale, as in
            :func:`attnpaths.experiments.finite_width.saddle_point_agreement`).
        margin_fw: the margin at width ``N`` as a fraction of the theory's finite-width effect
            ``max_ij |U_theory - u_gp I|`` there (claim d's margin; default 0.04).
        max_epsilon: default ``SADDLE_MAX_EPSILON`` of :mod:`attnpaths.experiments.finite_width`; u_gp: the GP limit's
            diagonal of ``U`` (default 1); level: the test's level (default 0.01).
        names: path names (for the message), default the indices.

    Test: at each compared width, the entry ``(i, j)`` with the theory's largest normalised cross weight
    ``|U_ij| / sqrt(U_ii U_jj)`` (chosen from the theory, so the samples are not searched for their largest
    entry): ``U^sampled_ij - U^theory_ij`` against the margin with the sampled entry's Monte-Carlo error,
    :func:`attnpaths.claims.equivalence` (Bonferroni over the compared widths). Where the theory's cross weight
    exceeds its margin (the measured text says by how many margins), agreement implies a weight of the theory's
    sign in the samples, and a posterior without cross weights (the GP limit's) is contradicted. That the
    theory's cross weights vanish towards the GP limit follows from the form of the action and is a structural
    check (:func:`cross_weight_decay`).
    """
    entries = _cross_entries(**arguments)
    return _sourced(
        equivalence(
            claim,
            f"the finite network carries the theory's cross-path weights{where}",
            source=SOURCE,
            statistic="largest |sampled - theory| / margin of the theory's largest normalised cross weight",
            deviation=entries.deviation,
            se=entries.se,
            margin=entries.margin,
            level=entries.level,
            measured=f"{entries.measured}{where}.",
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


def readings(verdicts, networks) -> dict[str, str]:
    """The chapter's sentences on its tested claims (sec-depth-claims), each following the outcomes of the run.

    Args:
        verdicts: the tested verdicts, holding ``"<c> (<network>)"`` for every claim ``c`` of a, aw, b, c, d and
            every network.
        networks: the network labels, e.g. ``["3 layers", "4 + 2 heads"]``.

    Returns:
        ``{"samples_reading", "summary_reading"}``: what claims a and aw (the samples against the exact
        finite-width mean and the entropy weight) find, stated by their weakest outcome; ``{"outcomes"}``: every
        claim's outcome per network, ``"claim a: holds (3 layers), ...; claim aw: ..."`` (all Markdown).
    """
    by_claim = {v.claim: v for v in verdicts}
    missing = [f"{c} ({n})" for c in ("a", "aw", "b", "c", "d") for n in networks if f"{c} ({n})" not in by_claim]
    if missing:
        raise ValueError(f"verdicts must hold claims a, aw, b, c and d of every network, missing {missing}")
    sampled = [by_claim[f"{c} ({n})"] for c in ("a", "aw") for n in networks]
    return {
        "samples_reading": by_outcome(
            sampled,
            holds="Claims a and aw below find the samples in agreement with the exact finite-width mean and with "
            "the theory's entropy weight.",
            not_significant="Claims a and aw below cannot decide, at these run lengths, whether the samples agree "
            "with the exact finite-width mean.",
            contradicted="Claims a or aw below find a disagreement between the samples and the theory.",
        ),
        "summary_reading": by_outcome(
            sampled,
            holds="Deeper or wider, the theory's action describes the finite networks' posteriors: the samples meet "
            "the exact finite-width mean (a) and measure its entropy weight as 1 (aw).",
            not_significant="Whether the theory's action describes the deeper and wider networks' posteriors is not "
            "decided at these run lengths (claims a and aw are not significant).",
            contradicted="For at least one of the deeper or wider networks the samples contradict the theory's "
            "action (claim a or aw).",
        ),
        "outcomes": "; ".join(
            f"claim {c}: " + ", ".join(f"{by_claim[f'{c} ({n})'].outcome.value} ({n})" for n in networks)
            for c in ("a", "aw", "b", "c", "d")
        ),
    }


def saddle_range_reading(epsilon: float) -> str:
    """The sentence that says whether claim c tests the value of the cross weight at a width whose finite-width
    scale is ``epsilon`` ``= (n + 1) / N``: outside the saddle point's range (``epsilon`` above
    ``SADDLE_MAX_EPSILON`` of :mod:`attnpaths.experiments.finite_width`) it does not. Returns the sentence
    (Markdown)."""
    epsilon = positive_real(epsilon, "epsilon")
    if epsilon > fw.SADDLE_MAX_EPSILON:
        return (
            f"a width outside the saddle point's range ((n + 1)/N above {fw.SADDLE_MAX_EPSILON:g}), where claim c "
            "does not test the value."
        )
    return "a width inside the saddle point's range, where claim c tests the value."


def cross_margins_reading(fewest: float) -> str:
    """The sentence that says what agreement within claim c's margin means when the theory's cross weight lies
    ``fewest`` margins from 0 at the compared widths (at least 3: a posterior without cross weights is
    contradicted). Returns the clause (Markdown)."""
    if not isinstance(fewest, (int, float, np.floating)) or not np.isfinite(fewest) or fewest < 0:
        raise ValueError(f"fewest must be a finite number of margins >= 0, got {fewest!r}")
    if fewest >= 3:
        return (
            "so agreement within the margin means a cross weight of the theory's sign and size in the samples, and "
            "a posterior without cross weights, the GP limit's, is contradicted"
        )
    return "too few for agreement within the margin to tell the theory's cross weight from none at every compared width"
