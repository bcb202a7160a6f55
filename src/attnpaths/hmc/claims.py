"""Claims specific to the hidden-Markov-chain task (Fig. 2), as tests.

The GP ordering and the pattern of ``U`` are read off the outputs of the authors' code (the GP lines and the
``U`` panels of Fig. 2c), not quoted from the paper's text; the interplay claims test the abstract's mechanism,
that the finite-width gain comes from combining paths, by ablating ``U``. The tests run over independently drawn
data sets (one replicate per data set), so they speak of the task, not of one draw.
"""

from __future__ import annotations

import numpy as np

from .._validation import as_float64_array
from ..claims import Outcome, PowerCheck, Verdict, all_of, bonferroni_z, by_outcome, power_check, replicate_t
from ..experiments import finite_width as fw
from ..experiments.sampling import saddle_point_z_max

SOURCE_GP_ORDER = "output of the authors' code (the GP lines of Fig. 2c)"
SOURCE_INTERPLAY = "output of the authors' code (the U panels of Fig. 2c, 2e)"
SOURCE_MECHANISM = "paper (abstract: the interplay between attention paths enhances generalization; Fig. 1d caption)"


def gp_ordering(claim: str, *, gp_accuracy: dict, level: float = 0.01) -> Verdict:
    """Claim: GP(all paths) < GP(path g) < GP(paths g+d): the adversarial paths hurt the GP limit and the
    denoising path helps it.

    Args:
        gp_accuracy: ``{"all", "g", "g+d"}``, each ``[n_sets]`` GP accuracies per independently drawn data set.

    Test: two one-sided t-tests over the data sets (Bonferroni over the two): mean ``GP(g) - GP(all) > 0`` and
    mean ``GP(g+d) - GP(g) > 0``.
    """
    missing = [k for k in ("all", "g", "g+d") if k not in gp_accuracy]
    if missing:
        raise ValueError(f"gp_accuracy must hold the keys 'all', 'g', 'g+d', missing {missing}")
    a, g, gd = (as_float64_array(gp_accuracy[k], f"gp_accuracy[{k!r}]") for k in ("all", "g", "g+d"))
    if not a.shape == g.shape == gd.shape or a.ndim != 1:
        raise ValueError(
            f"gp_accuracy values must be [n_sets] arrays of one shape, got {a.shape}, {g.shape}, {gd.shape}"
        )
    tests = (("adversarial paths hurt", "GP(g) - GP(all)", g - a), ("denoising path helps", "GP(g+d) - GP(g)", gd - g))
    parts = [
        replicate_t(claim, what, source=SOURCE_GP_ORDER, statistic=stat, differences=d, level=level, num_tests=2)
        for what, stat, d in tests
    ]
    return all_of(
        claim,
        "GP limit: all paths < path g < paths g+d",
        source=SOURCE_GP_ORDER,
        parts=parts,
        measured=(
            f"Mean over {a.size} data sets: GP(all) = {a.mean():.3f}, GP(g) = {g.mean():.3f}, "
            f"GP(g+d) = {gd.mean():.3f}."
        ),
    )


def path_interplay(
    claim: str,
    *,
    U_small,
    U_large,
    names,
    widths: tuple[int, int],
    u_gp: float = 1.0,
    level: float = 0.01,
    where: str = "",
) -> Verdict:
    """Claim: at small ``N`` the theory raises ``U_gg`` and ``U_dd`` above the GP value, suppresses the
    adversarial diagonals below it, and pairs g and d with a negative ``U_gd`` whose magnitude falls as ``N``
    grows.

    Args:
        U_small, U_large: ``[n_sets, n, n]`` the theory's ``U`` (rows in the order of ``names``) at the
            smallest and the largest width, one per independently drawn data set.
        names: path names, including ``"g"`` and ``"d"``; names starting with ``"a"`` are adversarial.
        widths: ``(N_min, N_max)``.

    Test: one one-sided t-test over the data sets per part, Bonferroni over the parts: mean ``U_gg - u_gp``,
    ``U_dd - u_gp``, ``u_gp - U_aa`` (each adversarial path), ``-U_gd`` (all at ``N_min``) and
    ``|U_gd(N_min)| - |U_gd(N_max)|`` all ``> 0``.
    """
    small, large = as_float64_array(U_small, "U_small"), as_float64_array(U_large, "U_large")
    names = tuple(names)
    n = len(names)
    if small.shape != large.shape or small.ndim != 3 or small.shape[1:] != (n, n):
        raise ValueError(
            f"U_small and U_large must be [n_sets, {n}, {n}] of one shape, got {small.shape}, {large.shape}"
        )
    if "g" not in names or "d" not in names:
        raise ValueError(f"names must include 'g' and 'd', got {names}")
    g, d = names.index("g"), names.index("d")
    n_min, n_max = (int(w) for w in widths)
    differences = {
        f"U_gg(N={n_min}) - {u_gp:g}": small[:, g, g] - u_gp,
        f"U_dd(N={n_min}) - {u_gp:g}": small[:, d, d] - u_gp,
        **{f"{u_gp:g} - U_{a}{a}(N={n_min})": u_gp - small[:, i, i] for i, a in enumerate(names) if a.startswith("a")},
        f"-U_gd(N={n_min})": -small[:, g, d],
        f"|U_gd(N={n_min})| - |U_gd(N={n_max})|": np.abs(small[:, g, d]) - np.abs(large[:, g, d]),
    }
    parts = [
        replicate_t(
            claim,
            stat,
            source=SOURCE_INTERPLAY,
            statistic=stat,
            differences=diff,
            level=level,
            num_tests=len(differences),
        )
        for stat, diff in differences.items()
    ]
    means = ", ".join(f"U_{a}{a} = {small[:, i, i].mean():.2f}" for i, a in enumerate(names))
    return all_of(
        claim,
        f"path interplay in U: g, d raised, adversarial suppressed, U_gd < 0 growing as N falls{where}",
        source=SOURCE_INTERPLAY,
        parts=parts,
        measured=(
            f"Mean over {small.shape[0]} data sets at N={n_min}: {means}, U_gd = {small[:, g, d].mean():.2f} "
            f"(N={n_max}: {large[:, g, d].mean():.3f}){where}."
        ),
    )


def interplay_gains(
    claim: str,
    *,
    accuracy,
    diagonal_accuracy,
    gp_accuracy,
    width: int,
    case: str = "",
    level: float = 0.01,
    where: str = "",
) -> tuple[Verdict, Verdict]:
    """Two claims on the mechanism of the finite-width gain, over independently drawn data sets at one width
    (the ablations of sec-hmc-theory):

    * ``claim`` (cross-path weights; ``"<claim> (<case>)"`` with a ``case``): the accuracy with the theory's ``U`` is above that with ``U``'s cross-path
      entries set to zero (its diagonal kept);
    * ``claim + "w"`` (same-path weights, named the same way): the accuracy with ``U``'s diagonal alone is above the
      GP limit's (``U = I``: equal weights, no cross-path kernels). The diagonal differs from ``I`` both in the
      relative weights of the paths and in its overall scale against ``T`` (an effective ridge); the claim does not
      tell the two apart.

    Args:
        accuracy, diagonal_accuracy, gp_accuracy: ``[n_sets]`` test accuracy of the theory, of its diagonal
            ablation and of the GP limit on each data set (the same test set for the three).
        width: the width ``N`` of the first two.

    Test: one-sided t-tests over the data sets of the paired differences
    (:func:`attnpaths.claims.replicate_t`); either may hold, be not significant or be contradicted (the 4-path
    and the 2-path networks need not gain the same way).
    """
    full = as_float64_array(accuracy, "accuracy", ndim=1)
    diagonal = as_float64_array(diagonal_accuracy, "diagonal_accuracy", ndim=1)
    gp = as_float64_array(gp_accuracy, "gp_accuracy", ndim=1)
    if not full.shape == diagonal.shape == gp.shape:
        raise ValueError(
            f"accuracy, diagonal_accuracy and gp_accuracy must be [n_sets] of one shape, got "
            f"{full.shape}, {diagonal.shape}, {gp.shape}"
        )
    n = int(width)

    def gain(base, kind, what, statistic, differences, measured):
        return replicate_t(
            f"{base} ({case})" if case else base,
            f"the {kind} weights of U add accuracy: at N = {n}, {what}{where}",
            source=SOURCE_MECHANISM,
            statistic=f"{statistic} at N = {n}",
            differences=differences,
            level=level,
            measured=f"{measured} (difference {100 * differences.mean():+.2f} points){where}.",
        )

    cross = gain(
        claim,
        "cross-path",
        "U beats U with its cross-path entries set to zero",
        "accuracy(U) - accuracy(diag U)",
        full - diagonal,
        f"mean accuracy over {full.size} data sets at N = {n}: {full.mean():.4f} with U, {diagonal.mean():.4f} "
        "with its diagonal only",
    )
    same = gain(
        f"{claim}w",
        "same-path",
        "U's diagonal alone beats the GP limit",
        "accuracy(diag U) - accuracy(GP)",
        diagonal - gp,
        f"mean accuracy over {full.size} data sets: {diagonal.mean():.4f} with U's diagonal at N = {n}, "
        f"{gp.mean():.4f} in the GP limit",
    )
    return cross, same


def interplay_power(runs, *, level: float = 0.01, power: float = 0.8) -> PowerCheck:
    """The power check of claim I of :func:`interplay_gains` for each network of ``runs``
    (:class:`~attnpaths.hmc.bands.NetworkRun`, their bands with ``diagonal_accuracy``): the gain of the cross-path
    weights that its t-test detects with probability ``power`` (normal approximation, standard error
    ``sd / sqrt(n_sets)`` of the paired differences at the smallest width), beside the measured gain."""
    differences = {run.label: run.band.accuracy[:, 0] - run.band.diagonal_accuracy[:, 0] for run in runs}
    return power_check(
        "I",
        se={k: float(np.std(d, ddof=1) / np.sqrt(d.size)) for k, d in differences.items()},
        estimate={k: float(np.mean(d)) for k, d in differences.items()},
        level=level,
        power=power,
        condition="over the data sets (normal approximation of the t-test)",
        effect="a gain of the cross-path weights",
        scale=100,
        unit="points",
    )


# --------------------------------------------------------------------------------------------------------
# every claim of the chapter, and how far the samples lie from the saddle point


def figure_verdicts(
    four,
    two,
    *,
    pc_width: int,
    alignment_pcs: int,
    level: float = 0.01,
    margin_accuracy: float = 0.02,
    margin_U: float = 0.1,
    margin_weight: float = 0.05,
    margin_fw: float = 0.04,
) -> list[Verdict]:
    """The claims of Fig. 2 (sec-hmc-theory, sec-hmc-pcs, sec-hmc-two-paths), each a test, in the chapter's order:
    1 over data sets and on the authors' data, 2 (samples against the exact finite-width mean of ``U``,
    eq-exact-density), 2w (the entropy weight that the samples measure), 2b (saddle point against the exact
    mean), 3, 4, 5, 6, and I and Iw (:func:`interplay_gains`: the cross-path and the same-path weights of ``U``
    against ablations, at the smallest width).

    Args:
        four, two: :class:`~attnpaths.hmc.bands.NetworkRun` of the 4-path network and of the 2-path network
            on the noisier data; their labels name the claims (e.g. ``"1 (4 paths)"``). Claims 4 and 5 use the
            4-path network's band (its PC label fractions and its three GP lines).
        pc_width, alignment_pcs: width and number of leading kernel PCs of claim 4.
        level: family-wise level of every claim.
        margin_accuracy, margin_U: agreement margins of claim 2.
        margin_weight: margin of claim 2w (:func:`~attnpaths.experiments.finite_width.entropy_weight_agreement`).
        margin_fw: margin of claim 2b, a fraction of the finite-width effect
            (:func:`~attnpaths.experiments.finite_width.saddle_point_agreement`).

    Returns:
        The 20 verdicts ``1 (<four>)``, ``1 (<two>)``, ``1 (authors' data, <four>)``, ``1 (authors' data, <two>)``,
        ``2 (...)``, ``2w (...)`` and ``2b (...)`` for both, ``3 (...)`` for both, ``4``, ``5``, ``6 (...)`` for
        both, ``I (...)`` and ``Iw (...)`` for both.
    """
    runs = (four, two)
    _check_runs(runs)
    margins = dict(margin_accuracy=margin_accuracy, margin_U=margin_U, margin_weight=margin_weight, margin_fw=margin_fw)
    finite = [_finite_width_claims(run, level=level, **margins) for run in runs]
    interplay = [_interplay_claims(run, level) for run in runs]
    alignment = fw.kernel_alignment(
        "4",
        fraction_fw=four.band.label_fraction["finite_width"],
        fraction_gp=four.band.label_fraction["gp"],
        k=alignment_pcs,
        width=pc_width,
        level=level,
    )
    return [
        *(claims[k] for k in range(6) for claims in finite),
        alignment,
        gp_ordering("5", gp_accuracy=four.band.gp, level=level),
        *(claims[0] for claims in interplay),
        *(v for claims in interplay for v in claims[1:]),
    ]


def _finite_width_claims(run, *, level, margin_accuracy, margin_U, margin_weight, margin_fw) -> list[Verdict]:
    """Claims 1 (over data sets), 1 (authors' data), 2, 2w, 2b and 3 of one network."""
    band, where = run.band, f", {run.label}"
    widths = (int(run.curve.widths[0]), int(run.curve.widths[-1]))
    return [
        fw.finite_width_advantage_over_data_sets(
            f"1 ({run.label})",
            accuracy_small=band.accuracy[:, 0],
            accuracy_large=band.accuracy[:, -1],
            gp_accuracy=band.gp["all"],
            widths=widths,
            level=level,
            where=where,
        ),
        fw.finite_width_advantage(
            f"1 (authors' data, {run.label})",
            **_authors_data_predictions(run),
            width=widths[0],
            level=level,
            where=f", authors' data set, {run.label}",
        ),
        fw.sample_agreement(
            f"2 ({run.label})",
            **_sample_agreement_arguments(run, margin_accuracy, margin_U, level),
            reference="the exact finite-width mean of U and the theory's accuracy",
            where=where,
        ),
        fw.entropy_weight_agreement(
            f"2w ({run.label})", points=run.samples, exact=run.exact, margin=margin_weight, level=level, where=where
        ),
        fw.saddle_point_agreement(f"2b ({run.label})", **_saddle_arguments(run, margin_fw, level), where=where),
        fw.gp_limit_approach(
            f"3 ({run.label})", U_small=band.U[:, 0], U_large=band.U[:, -1], widths=widths, level=level, where=where
        ),
    ]


def _interplay_claims(run, level) -> tuple[Verdict, Verdict, Verdict]:
    """Claims 6, I and Iw of one network."""
    band, where = run.band, f", {run.label}"
    widths = (int(run.curve.widths[0]), int(run.curve.widths[-1]))
    if band.diagonal_accuracy is None:
        raise ValueError(f"the band of {run.label} must hold diagonal_accuracy (data_set_band computes it)")
    interplay = path_interplay(
        f"6 ({run.label})",
        U_small=band.U[:, 0],
        U_large=band.U[:, -1],
        names=band.names,
        widths=widths,
        level=level,
        where=where,
    )
    gains = interplay_gains(
        "I",
        case=run.label,
        accuracy=band.accuracy[:, 0],
        diagonal_accuracy=band.diagonal_accuracy[:, 0],
        gp_accuracy=band.gp["all"],
        width=widths[0],
        level=level,
        where=where,
    )
    return interplay, *gains


def _check_runs(runs):
    for run in runs:
        if not all(hasattr(run, name) for name in ("label", "curve", "band", "samples", "exact", "test_labels")):
            raise ValueError(f"four and two must be NetworkRun objects, got {type(run).__name__}")


def _authors_data_predictions(run) -> dict:
    """Claim 1's predictions on the authors' data set: the theory at the smallest width and the GP limit."""
    curve = run.curve
    return dict(
        theory_mean=curve.means["test"][curve.index(int(curve.widths[0])), 0],
        gp_mean=curve.gp.means["test"][0, 0],
        labels=run.test_labels,
    )


def _sample_agreement_arguments(run, margin_accuracy: float, margin_U: float, level: float) -> dict:
    """Claim 2's comparison of one network: its samples against the exact finite-width mean of ``U``
    (eq-exact-density) and the theory's accuracy at the sampled widths."""
    curve = run.curve
    return dict(
        points=list(run.samples.values()),
        reference_accuracy={w: curve.accuracy["test"][curve.index(w), 0] for w in run.samples},
        reference_U={w: e.U for w, e in run.exact.items()},
        reference_U_se={w: e.U_se for w, e in run.exact.items()},
        margin_accuracy=margin_accuracy,
        margin_U=margin_U,
        level=level,
    )


def _saddle_arguments(run, margin_fw: float, level: float, theory_U=None) -> dict:
    """Claim 2b's comparison of one network: the theory's ``U`` (``theory_U``, default the run's own) against the
    exact finite-width mean."""
    return dict(
        exact=run.exact,
        theory_U=theory_U or {w: run.curve.U_at(w) for w in run.exact},
        num_paths=len(run.curve.names),
        margin_fw=margin_fw,
        level=level,
    )


def wrong_action_checks(
    run, scaled_theory_U: dict, *, level: float = 0.01, margin_weight: float = 0.05, margin_fw: float = 0.04
) -> dict[float, list[Verdict]]:
    """The power checks of claims 2w and 2b against realistic wrong theories, on the run's own data: for each
    entropy weight ``c`` of the run's neighbouring exact runs (e.g. 0.9, 1.1), claim 2w with the exact mean of
    the action weighted by ``c`` as the reference, and claim 2b with the theory solved at width ``c N``
    (``scaled_theory_U[c]``: ``{N: [n, n]}``) against the exact mean at ``N``. Both must come out contradicted
    for the claims to see such an error.

    Returns:
        ``{c: [verdict 2w, verdict 2b]}`` (claims ``"2w (<label>, entropy x c)"``, ``"2b (...)"``).
    """
    _check_runs([run])
    checks = {}
    for c, theory_U in scaled_theory_U.items():
        tag = f" ({run.label}, entropy x {c:g})"
        checks[float(c)] = [
            fw.entropy_weight_agreement(
                f"2w{tag}",
                points=run.samples,
                exact=run.exact,
                margin=margin_weight,
                reference_scale=float(c),
                level=level,
            ),
            fw.saddle_point_agreement(f"2b{tag}", **_saddle_arguments(run, margin_fw, level, theory_U=theory_U)),
        ]
    return checks


def wrong_action_sentence(checks: dict, claim: str) -> str:
    """One sentence stating, for every network and entropy weight of ``checks`` (``{label: {c: [verdicts]}}``
    from :func:`wrong_action_checks`), the outcome of ``claim`` (``"2w"`` or ``"2b"``) and its measured numbers,
    and whether every wrong theory is contradicted."""
    parts, found = [], []
    for label, by_scale in checks.items():
        for c, verdicts in by_scale.items():
            v = next(v for v in verdicts if v.claim.startswith(f"{claim} ("))
            parts.append(f"entropy x {c:g}, {label}: {v.outcome.value} ({v.statistic} = {v.value:.2f})")
            found.append(v.outcome is Outcome.CONTRADICTED)
    if not parts:
        raise ValueError("checks must hold at least one wrong theory")
    verdict = (
        "every such wrong theory is contradicted"
        if all(found)
        else "not every such wrong theory is contradicted: at these run lengths the claim cannot see an error of "
        "this size"
    )
    return "; ".join(parts) + f". So {verdict}."


def power_checks(
    four,
    two,
    *,
    level: float = 0.01,
    margin_accuracy: float = 0.02,
    margin_U: float = 0.1,
    margin_fw: float = 0.04,
    power: float = 0.8,
) -> dict[str, dict[str, float]]:
    """The power checks of :func:`figure_verdicts`' tests whose outcome rests on one Monte-Carlo run or one test
    set, per network (same arguments as there):

    * ``"1 (authors' data, <label>)"``: ``{"se", "detectable"}``, the paired standard error of the test and the
      smallest accuracy advantage it declares to hold with probability ``power``
      (:func:`attnpaths.experiments.finite_width.finite_width_advantage_power`);
    * ``"2 (<label>)"``: ``{"power"}``, the probability that claim 2 holds were the samples exactly the exact
      finite-width mean and the theory's accuracy, at this run's Monte-Carlo errors
      (:func:`attnpaths.experiments.finite_width.sample_agreement_power`);
    * ``"2b (<label>)"``: ``{"power"}``, the same for claim 2b were the theory's ``U`` exactly the exact mean
      (:func:`attnpaths.experiments.finite_width.saddle_point_agreement_power`).
    """
    runs = (four, two)
    _check_runs(runs)
    checks = {}
    for run in runs:
        se, detectable = fw.finite_width_advantage_power(**_authors_data_predictions(run), level=level, power=power)
        checks[f"1 (authors' data, {run.label})"] = {"se": se, "detectable": detectable}
    for run in runs:
        arguments = _sample_agreement_arguments(run, margin_accuracy, margin_U, level)
        checks[f"2 ({run.label})"] = {"power": fw.sample_agreement_power(**arguments)}
    for run in runs:
        checks[f"2b ({run.label})"] = {
            "power": fw.saddle_point_agreement_power(**_saddle_arguments(run, margin_fw, level))
        }
    return checks


def saddle_point_ratios(runs, level: float = 0.01) -> dict[str, float]:
    """How far the network's samples lie from the saddle point, per network: the largest z-score of a sampled
    entry of ``U`` against the theory's ``U`` (:func:`~attnpaths.experiments.sampling.saddle_point_z_max`, over
    the distinct entries and the sampled widths) divided by the two-sided Bonferroni threshold over those
    entries and widths at ``level``. Above 1, the samples resolve the ``O(1/N)`` difference between the saddle
    point and the posterior mean (eq-exact-density).

    Args:
        runs: :class:`~attnpaths.hmc.bands.NetworkRun` objects (their ``label``, ``curve`` and ``samples``).
    Returns:
        ``{label: ratio}``.
    """
    ratios = {}
    for run in runs:
        z_max = saddle_point_z_max(run.samples, {w: run.curve.U_at(w) for w in run.samples})
        n = run.curve.U.shape[-1]
        threshold = bonferroni_z(len(run.samples) * n * (n + 1) // 2, level)
        ratios[run.label] = max(z_max.values()) / threshold
    return ratios


def saddle_point_reading(ratio: float) -> str:
    """What a :func:`saddle_point_ratios` ratio says about the comparison of the samples with the exact mean."""
    if ratio > 1:
        return (
            "these runs resolve the O(1/N) difference between the saddle point and the posterior mean, which is "
            "why U is compared with the exact mean."
        )
    return "at these run lengths the Monte-Carlo error would also hide the finite-width difference."


def readings(verdicts, runs) -> dict[str, str]:
    """The sentences of the HMC chapter that follow the outcomes of claims 1, 2 and 2w (sec-hmc-theory).

    Args:
        verdicts: the chapter's verdicts (:func:`figure_verdicts`), holding ``"1 (<label>)"``, ``"2 (<label>)"``
            and ``"2w (<label>)"`` for the label of every run.
        runs: the networks' runs (:class:`~attnpaths.hmc.bands.NetworkRun`), for their labels.

    Returns:
        ``{"band_reading"}``: what claim 1 says of the gap over the data sets; ``{"samples_reading",
        "shift_reading"}``: what claims 2 and 2w say of the samples against the exact finite-width mean and the
        theory's entropy weight, each stated by the weakest outcome (Markdown).
    """
    by_id = {v.claim: v for v in verdicts}
    wanted = [f"{c} ({run.label})" for c in ("1", "2", "2w") for run in runs]
    missing = [claim for claim in wanted if claim not in by_id]
    if missing:
        raise ValueError(f"verdicts must hold claims 1, 2 and 2w of every run, missing {missing}")
    sampled = [by_id[f"{c} ({run.label})"] for c in ("2", "2w") for run in runs]
    return {
        "band_reading": by_outcome(
            [by_id[f"1 ({run.label})"] for run in runs],
            holds="over the data sets the gap is significant (claim 1), not an accident of one data set.",
            not_significant="over these data sets the gap is not significant (claim 1).",
            contradicted="over these data sets the GP limit does better (claim 1 is contradicted).",
        ),
        "samples_reading": by_outcome(
            sampled,
            holds="claims 2 and 2w below find the samples in agreement with the exact finite-width mean and with the "
            "theory's entropy weight.",
            not_significant="claims 2 and 2w below cannot decide the agreement at these run lengths.",
            contradicted="claims 2 and 2w below find a disagreement between the samples and the theory.",
        ),
        "shift_reading": by_outcome(
            sampled,
            holds="with the samples on the predicted lines within their Monte-Carlo errors (claims 2 and 2w).",
            not_significant="the samples' errors are too large here to place them on the predicted lines (claims 2 "
            "and 2w are not significant).",
            contradicted="but some samples lie off the predicted lines (claims 2 or 2w are contradicted).",
        ),
    }


def variance_readings(runs, diagnostics) -> dict[str, str]:
    """The sentences of the HMC chapter on claim 2v, the predictor variance of the theory against the samples.

    Args:
        runs: the networks' runs (:class:`~attnpaths.hmc.bands.NetworkRun`) with their sampled widths.
        diagnostics: the verdicts reported as diagnostics for want of power (e.g. the first items of
            ``ChapterRecorder.diagnostics``).

    Returns:
        ``{"variance_range_small"}``: whether the smallest sampled width lies inside claim 2v's range, the
        finite-width scale ``(n + 1) / N`` at most ``SADDLE_MAX_EPSILON`` of :mod:`attnpaths.experiments.finite_width`
        for every network; ``{"variance_power_reading"}``: which of the 2v tests are diagnostics (Markdown).
    """
    runs = list(runs)
    if not runs or any(not run.samples for run in runs):
        raise ValueError("runs must be at least one run, each with sampled widths")
    epsilon = min((len(run.curve.names) + 1) / min(run.samples) for run in runs)
    unpowered = [v.claim for v in diagnostics if v.claim.startswith("2v ")]
    readings = {"variance_range_small": "inside the claim's range"}
    if epsilon > fw.SADDLE_MAX_EPSILON:
        readings["variance_range_small"] = f"outside the claim's range ((n + 1)/N above {fw.SADDLE_MAX_EPSILON:g})"
    readings["variance_power_reading"] = (
        f"At this run's lengths the test of {' and '.join(unpowered)} has less than the power a claim needs, so it "
        "is reported as a diagnostic, not counted among the claims."
        if unpowered
        else "The test has the power a claim needs for both networks, so both count among the claims."
    )
    return readings
