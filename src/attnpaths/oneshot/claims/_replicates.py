"""The one-shot claims over trained models and draws of the training episodes (sec-oneshot-replicates)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import optimize, stats

from ..._validation import as_float64_array, probability
from ...claims import LEVEL, PowerCheck, Verdict, by_outcome, power_check, replicate_t
from ...experiments import finite_width as fw_claims
from ._sources import (
    INTERPLAY,
    SOURCE_BEST_SET,
    SOURCE_FINITE_WIDTH_TRANSFER,
    SOURCE_PATTERN,
    SOURCE_PRUNING,
)


def model_means(models, statistic) -> np.ndarray:
    """``[S]`` (or ``[S, m]``): for each :class:`~attnpaths.oneshot.replicates.ModelReplicates` of ``models`` the mean
    over its draws of ``statistic(model)`` (``[D]`` or ``[D, m]``). The draws of a model share it, so they are not
    independent replicates; the models are, and the spread of these means carries the draws' spread too."""
    models = list(models)
    if len(models) < 2:
        raise ValueError(f"models must hold at least 2 trained models, got {len(models)}")
    return np.array([np.mean(np.asarray(statistic(m), dtype=np.float64), axis=0) for m in models])


def _replicates(models) -> str:
    """What the replicates are, in words: ``"trained models, 5 draws of the training episodes each"``."""
    draws = {m.num_draws for m in models}
    each = f"{draws.pop()} draws" if len(draws) == 1 else "several draws"
    return f"trained models, {each} of the training episodes each"


def _over(models) -> str:
    return f" over {len(models)} {_replicates(models)}"


def _replicate(claim, statement, source, statistic, per_model, level, *, num_tests=1, points=True):
    """:func:`attnpaths.claims.replicate_t` over the models' means ``per_model`` ``[S]``, with every model's mean in
    the measured words (accuracy differences in points, correlations as they are)."""
    per_model = np.asarray(per_model, dtype=np.float64)
    scale, unit, digits = (100.0, " points", 1) if points else (1.0, "", 3)
    listed = ", ".join(f"{scale * v:+.{digits}f}" for v in per_model)
    return replicate_t(
        claim,
        statement,
        source=source,
        statistic=statistic,
        differences=per_model,
        level=level,
        num_tests=num_tests,
        measured=(
            f"Mean {statistic} = {scale * per_model.mean():+.{digits + 1}f}{unit} (per model {listed}; sd across the "
            f"models {scale * per_model.std(ddof=1):.{digits + 1}f})."
        ),
    )


def order_parameter_name(theory: str) -> str:
    """The words for an order parameter of a replicate (:func:`attnpaths.oneshot.replicates.draw_replicate`): the
    theory's (``"theory"``), one near the GP limit, or a mistake's."""
    if theory == "theory":
        return "the theory's U"
    return f"U {theory}" if theory.startswith("near the GP limit") else f"U with a mistake: {theory}"


def advantage_over_models(claim: str, models, *, width: int, rule: str = "validation", level: float = LEVEL):
    """Claim 1 over the replicates: at ``width`` the theory beats the GP limit on the test episodes, each at the
    temperature chosen on the ``rule`` episodes (``"validation"``, or ``"test"``: the authors' rule).

    Test: one-sided t-test over the models of their mean over the draws of ``A(N) - A_GP``
    (:func:`attnpaths.claims.replicate_t`)."""
    if rule not in ("validation", "test"):
        raise ValueError(f"rule must be 'validation' or 'test', got {rule!r}")
    suffix = "" if rule == "validation" else "_test_rule"
    where = "validation episodes" if rule == "validation" else "test episodes (the authors' rule)"
    return _replicate(
        claim,
        f"finite width beats the GP limit, temperatures chosen on the {where}{_over(models)}",
        fw_claims.SOURCE_ADVANTAGE,
        f"A(N={int(width)}) - A_GP",
        model_means(models, lambda m: m.accuracy["theory" + suffix] - m.accuracy["gp" + suffix]),
        level,
    )


def interplay_over_models(claim: str, models, *, width: int, level: float = LEVEL) -> tuple[Verdict, Verdict]:
    """Claims I and Iw over the replicates (sec-oneshot-interplay): ``claim``, the cross-path weights of ``U`` add
    accuracy (``U`` against its diagonal, both at the theory's temperature); ``claim + "w"``, the diagonal alone beats
    the GP limit at the GP limit's own temperature, chosen on the validation episodes.

    Test: one-sided t-tests over the models of the mean accuracy differences over the draws."""
    n = int(width)
    return tuple(
        _replicate(
            claim + suffix,
            f"{statement}{' at its own temperature' if suffix else ''} at N={n}{_over(models)}",
            source,
            " - ".join(names).format(n=n),
            model_means(models, lambda m, a=a, b=b: m.accuracy[a] - m.accuracy[b]),
            level,
        )
        for suffix, a, b, statement, source, names in INTERPLAY
    )


def alignment_over_models(claim: str, models, *, k: int, width: int, level: float = LEVEL) -> Verdict:
    """Claim 4 over the replicates: :func:`attnpaths.experiments.finite_width.kernel_alignment` of each model's mean
    label fractions over its draws (a t-test over the models)."""
    return fw_claims.kernel_alignment(
        claim,
        fraction_fw=model_means(models, lambda m: m.label_fraction["finite_width"]),
        fraction_gp=model_means(models, lambda m: m.label_fraction["gp"]),
        k=k,
        width=width,
        level=level,
        replicates=_replicates(models),
    )


def transfer_over_models(claim: str, models, *, theory: str = "theory", level: float = LEVEL) -> Verdict:
    """Claim 8 over the replicates: the pattern of ``U`` (of ``theory``: the theory as written, or a key of
    :func:`attnpaths.experiments.wrong_theories.wrong_order_parameters`) is found in each model's gradient-descent
    weights beyond chance: its correlation with them exceeds the mean correlation over every relabelling of the
    heads within their layers (the null of :func:`pattern_transfer`).

    Test: one-sided t-test over the models of their mean excess over the draws."""
    return _replicate(
        claim,
        f"the pattern of {order_parameter_name(theory)} transfers to the gradient-descent weights{_over(models)}",
        SOURCE_PATTERN,
        "pattern correlation minus its mean over the relabellings of the heads",
        model_means(models, lambda m: m.transfer_excess[theory]),
        level,
        points=False,
    )


def finite_width_against(
    claim: str, models, *, reference: str, width: int, statistic: str = "transfer", level: float = LEVEL
) -> Verdict:
    """What transfers is that of finite width: the theory's ``U`` at ``width`` does better than the ``U`` of
    ``reference`` (e.g. near the GP limit) by claim 8's statistic (``statistic="transfer"``: the correlation of its
    pattern with the gradient-descent weights) or by claim 7b's (``"order"``: pruning in ascending head score,
    accuracy averaged over the pruned heads). The two order parameters are scored on the same draws and the same
    model, so the difference is paired.

    Test: one-sided t-test over the models of their mean paired difference over the draws."""
    finite, other = f"U(N={int(width)})", order_parameter_name(reference)
    if statistic == "transfer":
        field, points = "transfer", False
        statement = f"the pattern of the theory's U at finite width (N={int(width)}) transfers to the gradient-descent "
        statement += f"weights better than that of {other}"
        words = f"pattern correlation, {finite} minus {other}"
    elif statistic == "order":
        field, points = "order_gain", True
        statement = f"pruning in ascending head score of the theory's U at finite width (N={int(width)}) keeps more "
        statement += f"accuracy than in that of {other}"
        words = f"accuracy averaged over the pruned heads, score order of {finite} minus {other}"
    else:
        raise ValueError(f"statistic must be 'transfer' (claim 8) or 'order' (claim 7b), got {statistic!r}")
    return _replicate(
        claim,
        statement + _over(models),
        SOURCE_FINITE_WIDTH_TRANSFER,
        words,
        model_means(models, lambda m: getattr(m, field)["theory"] - getattr(m, field)[reference]),
        level,
        points=points,
    )


def order_over_models(claim: str, models, *, theory: str = "theory", level: float = LEVEL) -> Verdict:
    """Claim 7b over the replicates: pruning each model's heads in ascending head score of ``U`` (of ``theory``, as
    :func:`transfer_over_models`) keeps more accuracy, averaged over ``k = 1..K`` pruned heads, than the exact
    expectation over random orders (eq-pruning-random).

    Test: one-sided t-test over the models of their mean gain over the draws."""
    return _replicate(
        claim,
        f"pruning in ascending head score of {order_parameter_name(theory)} beats random pruning orders{_over(models)}",
        SOURCE_PRUNING,
        "accuracy averaged over the pruned heads, score order minus random orders",
        model_means(models, lambda m: m.order_gain[theory]),
        level,
    )


def best_set_over_models(claim: str, models, *, margin: float, level: float = LEVEL) -> list[Verdict]:
    """Claim 7c over the replicates, one verdict ``"<claim> (k=...)"`` per number of pruned heads ``k`` of the models'
    ``ks``: pruning the ``k`` lowest-score heads (no fine-tuning) costs at most ``margin`` more than the best set of
    ``k`` heads, the best that any ranking could do (picked on the pruning episodes themselves, so the test is
    conservative).

    Test: one-sided non-inferiority t-tests over the models of their mean ``A(score set) - A(best set) + margin``
    over the draws, Bonferroni over the ``k``; contradicted when the score order costs more than the margin beyond
    doubt.
    """
    margin = probability(margin, "margin (an accuracy fraction)", open_interval=True)
    ks = models[0].ks
    gaps = model_means(models, lambda m: m.best_gap["theory"])
    return [
        _replicate(
            f"{claim} (k={k})",
            f"pruning {'the lowest-score head' if k == 1 else f'the {k} lowest-score heads'} (no fine-tuning) costs at "
            f"most {100 * margin:g} accuracy points more than the best "
            f"{'single head' if k == 1 else f'set of {k} heads'}{_over(models)}",
            SOURCE_BEST_SET,
            f"A(score order, k={k}) - A(best set of {k}) + {margin:g}",
            gaps[:, i] + margin,
            level,
            num_tests=len(ks),
        )
        for i, k in enumerate(ks)
    ]


def replicate_power(
    claim: str, differences: dict, *, level: float = LEVEL, power: float = 0.8, num_tests: int = 1, **words
) -> PowerCheck:
    """The power check of a one-sided t-test over replicates (:func:`attnpaths.claims.replicate_t`), per case: the
    smallest true mean that it declares to hold with probability ``power`` at the replicates' spread, from the
    noncentral t law with ``n - 1`` degrees of freedom (not the normal law, which with a handful of replicates
    promises effects well below those the test can see).

    Args:
        differences: ``{case: [n]}`` the replicates of each case (``n >= 2``).
        words: ``condition``, ``effect``, ``scale``, ``unit`` of :class:`attnpaths.claims.PowerCheck`.
    """
    se, detectable, estimate = {}, {}, {}
    alpha = level / num_tests
    for case, d in differences.items():
        d = as_float64_array(d, f"differences[{case!r}]").ravel()
        if d.size < 2:
            raise ValueError(f"differences[{case!r}] must hold at least 2 replicates, got {d.size}")
        n, s = d.size, max(float(d.std(ddof=1)) / math.sqrt(d.size), 1e-12)
        critical = stats.t.isf(alpha, n - 1)
        shift = optimize.brentq(lambda x: stats.nct.sf(critical, n - 1, x) - power, 0.0, 100.0)
        se[case], detectable[case], estimate[case] = s, shift * s, float(d.mean())
    check = power_check(claim, se=se, estimate=estimate, level=level, num_tests=num_tests, power=power, **words)
    return dataclasses.replace(check, detectable=tuple(detectable.values()))


def interplay_outcome(verdict: Verdict) -> str:
    """The sentence that states the outcome of claim I, whether the cross-path weights of ``U`` add accuracy
    beyond its diagonal (the first verdict of :func:`interplay_over_models`, sec-oneshot-interplay).

    Returns:
        Markdown text.
    """
    return by_outcome(
        verdict,
        holds="On this task the cross-path weights add accuracy beyond the re-weighting of the paths.",
        not_significant="Over these models the cross-path weights' share of the gain cannot be told from zero.",
        contradicted="On this task the predictor does better without the cross-path weights: the gain over the GP "
        "limit comes from the re-weighting of the paths.",
    )
