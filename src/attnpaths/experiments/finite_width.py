"""The paper's claims about finite width against the Gaussian-process limit, as tests (any task).

Each function returns a :class:`attnpaths.claims.Verdict`; the task chapters (hidden Markov chains, one-shot
images) call them on their own numbers. The equivalence tests have power checks with the same arguments (the
functions ending in ``_power``).
"""

from __future__ import annotations

import numpy as np

from .._validation import as_float64_array
from ..claims import (
    Verdict,
    all_of,
    detectable_effect,
    directional_z,
    equivalence,
    equivalence_power,
    positive_difference,
    replicate_t,
)
from ._posterior_claims import (
    SADDLE_MAX_EPSILON,
    SOURCE_SAMPLES,
    SOURCE_VARIANCE,
    SOURCE_VARIANCE_EXACT,
    entropy_weight_agreement,
    entropy_weight_estimate,
    exact_variance_agreement,
    exact_variance_agreement_power,
    predictor_variance_agreement,
    predictor_variance_agreement_power,
    saddle_widths,
)

__all__ = [
    "SADDLE_MAX_EPSILON",
    "SOURCE_ADVANTAGE",
    "SOURCE_ALIGNMENT",
    "SOURCE_GP_LIMIT",
    "SOURCE_SADDLE",
    "SOURCE_SAMPLES",
    "SOURCE_VARIANCE",
    "SOURCE_VARIANCE_EXACT",
    "entropy_weight_agreement",
    "entropy_weight_estimate",
    "entry_scale",
    "exact_variance_agreement",
    "exact_variance_agreement_power",
    "finite_width_advantage",
    "finite_width_advantage_over_data_sets",
    "finite_width_advantage_power",
    "gp_limit_approach",
    "kernel_alignment",
    "paired_accuracy_gain",
    "paired_accuracy_sd",
    "predictor_variance_agreement",
    "predictor_variance_agreement_power",
    "saddle_point_agreement",
    "saddle_point_agreement_power",
    "saddle_widths",
    "sample_agreement",
    "sample_agreement_power",
]

#: The sources of the claims (the paper's body text was not available, so its abstract and captions).
SOURCE_ADVANTAGE = "paper (abstract; captions of Fig. 1d, 2c, 3b)"
SOURCE_GP_LIMIT = "derived in this book (the GP limit of the action)"
SOURCE_ALIGNMENT = "paper (captions of Fig. 1c, 2d, 3d)"
SOURCE_SADDLE = "derived in this book (the saddle point of the action)"


def paired_accuracy_sd(mean_a, mean_b, labels) -> float:
    """Test-set standard deviation of ``A_b - A_a`` for two predictors on the SAME test points.

    Only the test points that one predictor gets right and the other wrong ("discordant", ``n_d`` of them)
    move the difference; if both predictors were equally accurate each would move it by ``+-1/n`` with equal
    probability (McNemar), so ``sd = sqrt(n_d) / n``.

    Args:
        mean_a, mean_b, labels: ``[n]`` predictions (their signs are the predicted labels) and labels ``+-1``.
    """
    labels = as_float64_array(labels, "labels")
    right_a = np.sign(as_float64_array(mean_a, "mean_a")) == labels
    right_b = np.sign(as_float64_array(mean_b, "mean_b")) == labels
    if right_a.shape != labels.shape or right_b.shape != labels.shape:
        raise ValueError("mean_a, mean_b and labels must have the same shape")
    return float(np.sqrt(np.sum(right_a != right_b)) / labels.size)


def _accuracy(mean, labels) -> float:
    return float(np.mean(np.sign(mean) == labels))


def _advantage_se(theory_mean, gp_mean, labels) -> float:
    labels = as_float64_array(labels, "labels")
    return max(paired_accuracy_sd(gp_mean, theory_mean, labels), 1.0 / labels.size)


def finite_width_advantage_power(
    *, theory_mean, gp_mean, labels, level: float = 0.01, power: float = 0.8
) -> tuple[float, float]:
    """The power check of :func:`finite_width_advantage` (same predictions and labels): ``(se, detectable)``,
    its standard error and the smallest accuracy advantage that its test declares to hold with probability
    ``power`` (:func:`attnpaths.claims.detectable_effect`)."""
    se = _advantage_se(theory_mean, gp_mean, labels)
    return se, detectable_effect(se, level, power)


def finite_width_advantage(
    claim: str, *, theory_mean, gp_mean, labels, width: int, level: float = 0.01, where: str = ""
) -> Verdict:
    """Claim: at width ``width`` the theory's mean predictor is more accurate than the GP limit's.

    Args:
        theory_mean, gp_mean, labels: ``[n_test]`` predictions of the two predictors and the labels.

    Test: :func:`paired_accuracy_gain` of the theory over the GP limit.
    """
    return paired_accuracy_gain(
        claim,
        f"finite width beats the GP limit{where}",
        source=SOURCE_ADVANTAGE,
        mean=theory_mean,
        reference_mean=gp_mean,
        labels=labels,
        names=(f"A(N={width})", "A_GP"),
        level=level,
        where=where,
    )


def paired_accuracy_gain(
    claim: str,
    statement: str,
    *,
    source: str,
    mean,
    reference_mean,
    labels,
    names: tuple[str, str],
    level: float = 0.01,
    where: str = "",
) -> Verdict:
    """Claim ``statement``: the predictor ``mean`` is more accurate than ``reference_mean`` on the same test points.

    Args:
        mean, reference_mean, labels: ``[n_test]`` predictions of the two predictors (their signs are the predicted
            labels) and the labels ``+-1``.
        names: how the two accuracies are written, e.g. ``("A(N=10)", "A_GP")``.

    Test: one-sided paired z-test of the accuracy difference on the test set, standard error
    :func:`paired_accuracy_sd` (at least ``1 / n_test``).
    """
    labels = as_float64_array(labels, "labels")
    if labels.ndim != 1 or labels.size < 1:
        raise ValueError(f"labels must be [n_test] with n_test >= 1, got shape {labels.shape}")
    a = _accuracy(as_float64_array(mean, "mean"), labels)
    r = _accuracy(as_float64_array(reference_mean, "reference_mean"), labels)
    first, second = names
    return directional_z(
        claim,
        statement,
        source=source,
        statistic=f"{first} - {second}",
        estimate=a - r,
        se=_advantage_se(mean, reference_mean, labels),
        level=level,
        measured=f"{first} = {a:.3f} vs {second} = {r:.3f} on {labels.size} test points{where}.",
    )


def finite_width_advantage_over_data_sets(
    claim: str,
    *,
    accuracy_small,
    accuracy_large,
    gp_accuracy,
    widths: tuple[int, int],
    level: float = 0.01,
    where: str = "",
) -> Verdict:
    """Claim: over independently drawn data sets, the theory beats the GP limit at the smallest width, and
    the gap shrinks by the largest width.

    Args:
        accuracy_small, accuracy_large, gp_accuracy: ``[n_sets]`` theory accuracy at the smallest and largest
            width and the GP accuracy, per data set.
        widths: ``(N_min, N_max)``.

    Test: two one-sided t-tests over the data sets, Bonferroni over the two: mean ``A(N_min) - A_GP > 0`` and
    mean ``|A(N_min) - A_GP| - |A(N_max) - A_GP| > 0``.
    """
    small = as_float64_array(accuracy_small, "accuracy_small")
    large = as_float64_array(accuracy_large, "accuracy_large")
    gp = as_float64_array(gp_accuracy, "gp_accuracy")
    if not small.shape == large.shape == gp.shape or small.ndim != 1:
        raise ValueError(
            f"accuracy_small, accuracy_large and gp_accuracy must be [n_sets] arrays of one shape, got "
            f"{small.shape}, {large.shape}, {gp.shape}"
        )
    n_min, n_max = (int(w) for w in widths)
    parts = [
        replicate_t(
            claim,
            "advantage",
            source=SOURCE_ADVANTAGE,
            statistic=f"A(N={n_min}) - A_GP",
            differences=small - gp,
            level=level,
            num_tests=2,
        ),
        replicate_t(
            claim,
            "approach",
            source=SOURCE_ADVANTAGE,
            statistic=f"|A(N={n_min}) - A_GP| - |A(N={n_max}) - A_GP|",
            differences=np.abs(small - gp) - np.abs(large - gp),
            level=level,
            num_tests=2,
        ),
    ]
    return all_of(
        claim,
        f"finite width beats the GP limit and approaches it as N grows{where}",
        source=SOURCE_ADVANTAGE,
        parts=parts,
        measured=(
            f"Over {small.size} data sets: mean A(N={n_min}) - A_GP = {np.mean(small - gp):+.3f}, "
            f"mean A(N={n_max}) - A_GP = {np.mean(large - gp):+.3f}{where}."
        ),
    )


def _distance(U, u_gp: float) -> np.ndarray:
    return np.linalg.norm(U - u_gp * np.eye(U.shape[-1]), axis=(-2, -1))


def gp_limit_approach(
    claim: str, *, U_small, U_large, widths: tuple[int, int], u_gp: float = 1.0, level: float = 0.01, where: str = ""
) -> Verdict:
    """Claim: the order parameter moves towards its GP value ``u_gp I`` as ``N`` grows.

    Args:
        U_small, U_large: ``[n_sets, n, n]`` the theory's ``U`` at the smallest and the largest width, one per
            independently drawn data set, or ``[n, n]`` for a single data set.
        widths: ``(N_min, N_max)``.

    Test: with several data sets, a one-sided t-test of the mean of ``||U(N_min) - U_GP||_F -
    ||U(N_max) - U_GP||_F > 0``; with one data set (deterministic numbers), the exact inequality.
    """
    small, large = as_float64_array(U_small, "U_small"), as_float64_array(U_large, "U_large")
    if small.shape != large.shape or small.ndim not in (2, 3) or small.shape[-1] != small.shape[-2]:
        raise ValueError(
            f"U_small and U_large must be [n_sets, n, n] or [n, n] of one shape, got {small.shape}, {large.shape}"
        )
    n_min, n_max = (int(w) for w in widths)
    d_small, d_large = _distance(small, u_gp), _distance(large, u_gp)
    return positive_difference(
        claim,
        f"U tends to its GP value as N grows{where}",
        source=SOURCE_GP_LIMIT,
        statistic=f"||U(N={n_min}) - U_GP|| - ||U(N={n_max}) - U_GP||",
        differences=d_small - d_large,
        level=level,
        measured=(
            f"||U - U_GP||_F = {d_small:.3f} at N={n_min}, {d_large:.3f} at N={n_max}{where}."
            if small.ndim == 2
            else f"Mean ||U - U_GP||_F over {small.shape[0]} data sets: {d_small.mean():.3f} at "
            f"N={n_min}, {d_large.mean():.3f} at N={n_max}{where}."
        ),
    )


def kernel_alignment(
    claim: str,
    *,
    fraction_fw,
    fraction_gp,
    k: int,
    width: int,
    level: float = 0.01,
    where: str = "",
    replicates: str = "data sets",
) -> Verdict:
    """Claim: at width ``width`` the first ``k`` principal components of the training kernel carry a larger
    fraction of ``|y|^2`` than those of the GP kernel.

    Args:
        fraction_fw, fraction_gp: ``[n_sets]`` label fractions (one per data set) or scalars (one data set).
        replicates: what the ``n_sets`` replicates are, in the measured words (e.g. ``"trained models"`` when each
            value is a model's mean over its draws of the data).

    Test: a one-sided t-test over data sets of the mean difference ``> 0``; with one data set, the exact
    inequality.
    """
    fw, gp = as_float64_array(fraction_fw, "fraction_fw"), as_float64_array(fraction_gp, "fraction_gp")
    if fw.shape != gp.shape or fw.ndim > 1:
        raise ValueError(
            f"fraction_fw and fraction_gp must be scalars or [n_sets] arrays of one shape, got {fw.shape}, {gp.shape}"
        )
    return positive_difference(
        claim,
        f"finite width aligns the leading kernel PCs with the labels{where}",
        source=SOURCE_ALIGNMENT,
        statistic=f"label fraction of the first {k} PCs, N={width} minus GP",
        differences=fw - gp,
        level=level,
        measured=(
            f"label fraction {float(fw):.3f} (N={width}) vs {float(gp):.3f} (GP){where}."
            if fw.ndim == 0
            else f"Mean label fraction of the first {k} PCs over {fw.size} {replicates}: {fw.mean():.3f} "
            f"(N={width}) vs {gp.mean():.3f} (GP){where}."
        ),
    )


def entry_scale(U) -> np.ndarray:
    """``sqrt(|U_ii U_jj|)`` for every entry of ``U`` ``[..., n, n]``: the scale of claim 2's agreement margins
    and of the samplers' precision targets (:class:`attnpaths.experiments.sampling.PrecisionTarget`)."""
    diagonal = np.abs(np.diagonal(np.asarray(U), axis1=-2, axis2=-1))
    return np.sqrt(diagonal[..., :, None] * diagonal[..., None, :])


def _upper_entries(deviation, se, margin, label: str, width):
    """``(deviation, se, margin, names)`` lists of the distinct entries (upper triangle) of ``[n, n]`` arrays."""
    iu = np.triu_indices(deviation.shape[0])
    return list(deviation[iu]), list(se[iu]), list(margin[iu]), [f"{label}[{i},{j}] at N={width}" for i, j in zip(*iu)]


def _layers(first, upper, name: str) -> list[tuple]:
    """``first`` (the first layer's arrays, then ``"U"``) and the layers above it, ``zip(*upper)`` named ``U_2,
    U_3, ...``; ``upper[0]`` (called ``name``) must hold as many layers as ``upper[1]``."""
    if upper is None:
        return [first]
    if len(upper[0]) != len(upper[1]):
        raise ValueError(f"{name} must hold {len(upper[1])} layers above the first, got {len(upper[0])}")
    return [first, *((*layer, f"U_{l + 2}") for l, layer in enumerate(zip(*upper)))]


def _agreement_entries(
    *,
    points,
    reference_accuracy,
    reference_U,
    reference_U_se=None,
    margin_accuracy: float = 0.02,
    margin_U: float = 0.1,
    reference_upper=None,
):
    """``(deviation, se, margin, names)`` of the numbers that :func:`sample_agreement` compares (its arguments but
    ``claim``, ``level``, ``reference`` and ``where``); each ``U`` entry's margin is ``margin_U sqrt(ref_ii ref_jj)``."""
    points = list(points)
    if not points:
        raise ValueError("points must hold at least one sampled width")
    entries = [], [], [], []
    for p in points:
        w = int(p.width)
        if w not in reference_accuracy or w not in reference_U:
            raise ValueError(f"reference_accuracy and reference_U must hold the sampled width {w}")
        accuracy = (float(p.accuracy) - float(reference_accuracy[w]), max(float(p.accuracy_mc_sd), 1e-12))
        for entry, value in zip(entries, (*accuracy, float(margin_accuracy), f"accuracy at N={w}")):
            entry.append(value)
        upper = (
            None if reference_upper is None else (reference_upper[w][0], p.U_upper, p.U_upper_se, reference_upper[w][1])
        )
        first = (reference_U[w], p.U, p.U_se, None if reference_U_se is None else reference_U_se[w], "U")
        for ref, U, U_se, ref_se, label in _layers(first, upper, f"reference_upper[{w}]"):
            ref, U, U_se = (as_float64_array(x, label) for x in (ref, U, U_se))
            if ref.shape != U.shape:
                raise ValueError(f"the reference of {label} must have the sampled shape {U.shape}, got {ref.shape}")
            ref_se = np.zeros_like(ref) if ref_se is None else as_float64_array(ref_se, label)
            se = np.maximum(np.sqrt(U_se**2 + ref_se**2), 1e-12)
            for entry, values in zip(entries, _upper_entries(U - ref, se, margin_U * entry_scale(ref), label, w)):
                entry.extend(values)
    return (*map(np.array, entries[:3]), entries[3])


def sample_agreement_power(*, level: float = 0.01, **arguments) -> float:
    """The power check of :func:`sample_agreement` with the same arguments (but ``claim``, ``reference`` and
    ``where``): the probability that its test declares agreement if the samples matched the reference exactly,
    given the Monte-Carlo errors (:func:`attnpaths.claims.equivalence_power`)."""
    _, se, margin, _ = _agreement_entries(**arguments)
    return equivalence_power(se, margin, level)


def sample_agreement(
    claim: str, *, level: float = 0.01, reference: str = "the theory", where: str = "", **arguments
) -> Verdict:
    """Claim: posterior samples of the finite network agree with a reference at every sampled width.

    Args:
        points: sampled widths, each with ``width``, ``accuracy`` and ``accuracy_mc_sd`` (the sampled mean
            predictor's test accuracy and its Monte-Carlo standard deviation), ``U`` ``[n, n]`` and ``U_se``
            ``[n, n]`` (sampled order parameter and its Monte-Carlo standard error), e.g.
            :class:`attnpaths.experiments.sampling.SampledPoint`.
        reference_accuracy: ``{width: accuracy}`` of the reference predictor.
        reference_U: ``{width: [n, n]}`` reference order parameters (the theory's saddle point or the exact
            finite-width posterior mean).
        reference_U_se: ``{width: [n, n]}`` Monte-Carlo errors of ``reference_U`` (``None``: exact numbers).
        margin_accuracy: agreement margin of the accuracy (absolute; default 0.02).
        margin_U: agreement margin of ``U_ij`` relative to ``sqrt(U_ii U_jj)`` of the reference (default 0.1).
        reference_upper: ``{width: ((U_2, ..., U_L), (se_2, ..., se_L))}``: the order parameters of the layers
            above the first (eq-exact-density), compared with the points' ``U_upper`` in the same way; ``None``: the
            first layer only.

    Test: :func:`attnpaths.claims.equivalence` over every sampled width's accuracy and distinct ``U``
    entries together (Bonferroni over all of them): holds when each lies within its margin beyond
    Monte-Carlo doubt, contradicted when one lies outside it beyond Monte-Carlo doubt.
    """
    deviation, se, margin, names = _agreement_entries(**arguments)
    worst = int(np.argmax(np.abs(deviation) / margin))
    acc_dev = deviation[[n.startswith("accuracy") for n in names]]
    measured = (
        f"Largest |deviation| / margin {abs(deviation[worst]) / margin[worst]:.2f} ({names[worst]}: "
        f"deviation {deviation[worst]:+.4f}, margin {margin[worst]:.4f}, Monte-Carlo se {se[worst]:.4f}); "
        f"largest accuracy difference {np.abs(acc_dev).max():.4f}{where}."
    )
    return equivalence(
        claim,
        f"posterior samples agree with {reference}{where}",
        source=SOURCE_SAMPLES,
        statistic="largest |sampled - reference| / margin",
        deviation=deviation,
        se=se,
        margin=margin,
        level=level,
        measured=measured,
    )


def _saddle_entries(
    *,
    exact,
    theory_U,
    num_paths: int,
    margin_fw: float = 0.04,
    max_epsilon: float = SADDLE_MAX_EPSILON,
    u_gp: float = 1.0,
    theory_upper=None,
):
    """``(scope, deviation, se, margin, names)`` of :func:`saddle_point_agreement` (its arguments but ``claim``,
    ``level`` and ``where``) at the widths where ``(n + 1) / N <= max_epsilon``; each entry's margin is
    ``margin_fw max_ij |U_exact - u_gp I|`` of its layer, and ``scope`` words the widths and the margin."""
    widths = saddle_widths(exact, num_paths, max_epsilon, "exact must hold a width")
    entries = [], [], [], []
    for w in widths:
        e = exact[w]
        upper = None if theory_upper is None else (theory_upper[w], e.U_upper, e.U_upper_se)
        for U, ref, ref_se, label in _layers((theory_U[w], e.U, e.U_se, "U"), upper, f"theory_upper[{w}]"):
            ref = as_float64_array(ref, f"exact[{w}].{label}")
            U = as_float64_array(U, f"theory {label} at N={w}")
            se = np.maximum(as_float64_array(ref_se, f"exact[{w}].{label} se"), 1e-12)
            margin = np.full(ref.shape, margin_fw * float(np.abs(ref - u_gp * np.eye(ref.shape[-1])).max()))
            for entry, values in zip(entries, _upper_entries(U - ref, se, margin, label, w)):
                entry.extend(values)
    scope = f"At N = {', '.join(map(str, widths))} (margin {margin_fw:g} of max|U_exact - U_GP| per width)"
    return scope, *map(np.array, entries[:3]), entries[3]


def saddle_point_agreement_power(*, level: float = 0.01, **arguments) -> float:
    """The power check of :func:`saddle_point_agreement` with the same arguments (but ``claim`` and ``where``): the
    probability that its test declares agreement if the theory's ``U`` were exactly the exact finite-width mean,
    given that mean's Monte-Carlo errors (:func:`attnpaths.claims.equivalence_power`)."""
    _, _, se, margin, _ = _saddle_entries(**arguments)
    return equivalence_power(se, margin, level)


def saddle_point_agreement(claim: str, *, level: float = 0.01, where: str = "", **arguments) -> Verdict:
    """Claim: the theory's ``U`` (the saddle point of the action, eq-action) agrees with the exact finite-width
    posterior mean of ``U`` (eq-exact-density) to a small fraction of the finite-width effect.

    Both come from the same action, so a wrong energy or entropy moves both: this tests the saddle-point
    approximation and the solver, not the action (:func:`entropy_weight_agreement` tests that against the
    network's samples).

    Args:
        exact: ``{width: e}`` with ``e.U`` and ``e.U_se`` ``[n, n]``, the exact finite-width posterior mean and
            its Monte-Carlo error (:func:`attnpaths.experiments.sampling.exact_order_parameter`).
        theory_U: ``{width: [n, n]}`` the theory's ``U`` at the same widths.
        num_paths: ``n``; only the widths with ``(n + 1) / N <= max_epsilon`` are compared
            (:func:`attnpaths.experiments.sampling.finite_width_epsilon`: the saddle point's relative error scale).
        margin_fw: the margin of every entry at width ``N``, as a fraction of that width's finite-width effect
            ``max_ij |U_exact - u_gp I|`` (of the same layer; default 0.04); max_epsilon: default
            ``SADDLE_MAX_EPSILON``; u_gp: the GP limit's diagonal of ``U`` (default 1).
        theory_upper: ``{width: (U_2, ..., U_L)}``, the theory's order parameters of the layers above the first,
            compared with ``exact[width].U_upper`` in the same way (their GP value is also ``u_gp I``: unit weight
            variances); ``None``: the first layer only.

    Test: :func:`attnpaths.claims.equivalence` of ``U_theory - U_exact`` against those margins; raises
    ``ValueError`` when no width qualifies.
    """
    scope, deviation, se, margin, names = _saddle_entries(**arguments)
    worst = int(np.argmax(np.abs(deviation) / margin))
    return equivalence(
        claim,
        f"the saddle point agrees with the exact finite-width mean of U (saddle-point approximation and solver){where}",
        source=SOURCE_SADDLE,
        statistic="largest |U_theory - U_exact| / margin",
        deviation=deviation,
        se=se,
        margin=margin,
        level=level,
        measured=(
            f"{scope}: largest |U_theory - U_exact| / margin {abs(deviation[worst]) / margin[worst]:.2f} "
            f"({names[worst]}: deviation {deviation[worst]:+.4f}, margin {margin[worst]:.4f}, Monte-Carlo se "
            f"{se[worst]:.4f}){where}."
        ),
    )
