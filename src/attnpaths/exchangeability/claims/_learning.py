"""E3 and E4: empirical risk minimisation, and the condition-number proxy of pretraining."""

from __future__ import annotations

import numpy as np

from ..._validation import as_float64_array
from ...claims import LEVEL, Outcome, Verdict, directional_z, equivalence, permutation
from ...statistics import loglog_slope_with_se
from ..rank_test import stratified_rank_test
from ._common import _paired, _vectors, all_positive

# where the claims come from (the labels of the chapters: [SRC] the paper's abstract, [SRC-2] a secondary summary)
SRC_ERM = (
    "derived in this book: our instance of the abstract's claim [SRC] that empirical risk minimisation "
    "learns the desired parameter"
)
SRC_LENGTH_FREE = (
    "one-sided consequence, derived in this book, of the abstract's claim [SRC] that the "
    "generalisation error is independent of input sizes"
)
SRC_PROXY = (
    "derived in this book from (ex-mse); a proxy for the abstract's condition number [SRC], whose "
    "definition could not be checked"
)

# --------------------------------------------------------------------------------------------------------
# E3: empirical risk minimisation


def approximation_verdict(mode: str, lengths, approximation, approximation_cov, *, level: float = LEVEL) -> Verdict:
    """E3.1: the reference minimiser ``W*_L`` approaches the target (``Sigma^{-1}``) as ``L`` grows: the log-log
    slope of ``|W*_L - target|_F`` in ``L`` is < 0 (standard error from the joint sandwich covariance)."""
    slope, se = loglog_slope_with_se(lengths, approximation, approximation_cov)
    return directional_z(
        f"E3.1-{mode}",
        f"{mode}: the large-sample minimiser W*_L approaches the desired parameter Sigma^-1 as L grows",
        source=SRC_ERM,
        statistic="minus the log-log slope of |W*_L - Sigma^-1|_F in L",
        estimate=-slope,
        se=se,
        level=level,
        measured=f"slope {slope:+.3f} (s.e. {se:.3f}).",
    )


#: The axes of ``excess`` ``[J, K, R]``: its symbol, argument name, word and short word.
_AXES = (("L", "lengths", "length", "length"), ("N", "sample_sizes", "sample size", "size"))


def _excess_drop_verdict(claim, statement, *, source, excess, axis, values, cell_values, level) -> Verdict:
    """The claim "the excess risk of the fits at the first entry of ``axis`` of ``excess`` ``[J, K, R]`` (values
    ``values``) exceeds that at the last", by :func:`stratified_rank_test` over the cells, the entries of the other
    axis (values ``cell_values``, only to name them, or ``None``)."""
    ex = as_float64_array(excess, "excess")
    if ex.ndim != 3 or ex.shape[axis] != values.size:
        shape = "[J, {}, R]" if axis else "[{}, K, R]"
        raise ValueError(f"excess must be {shape.format(values.size)}, got {ex.shape}")
    symbol, (cell_symbol, cell_arg, cells, short) = _AXES[axis][0], _AXES[1 - axis]
    if cell_values is None:
        cell_names = [f"{short} {i + 1}" for i in range(ex.shape[1 - axis])]
    else:
        cell_names = [f"{cell_symbol} = {int(v)}" for v in as_float64_array(cell_values, cell_arg, ndim=1)]
    first, last = np.moveaxis(ex, axis, 0)[[0, -1]]
    first_name, last_name = f"{symbol} = {int(values[0])}", f"{symbol} = {int(values[-1])}"
    test = stratified_rank_test(first, last)
    medians = ", ".join(f"{n}: {np.median(f):.3g} -> {np.median(l):.3g}" for n, f, l in zip(cell_names, first, last))
    attainable = (
        ""
        if test["smallest_p"] < level
        else (f" The level is not attainable with these repetitions (smallest p {test['smallest_p']:.2g}).")
    )
    return permutation(
        claim,
        statement,
        source=source,
        statistic=f"fraction of within-cell pairs with excess({first_name}) > excess({last_name})",
        value=test["fraction"],
        p_greater=test["p_greater"],
        p_smaller=test["p_smaller"],
        level=level,
        test=(
            f"exact stratified rank test (Mann-Whitney counts summed over the {len(first)} cells of one {cells}, "
            f"each cell on its own scale), conditional on the test set and the reference minimiser that the fits "
            f"of one length share"
        ),
        measured=(
            f"{test['fraction']:.0%} of {test['pairs']} within-cell pairs; median excess per {cells} "
            f"({first_name} -> {last_name}): {medians}.{attainable}"
        ),
    )


def sample_size_verdict(mode: str, sample_sizes, excess, *, level: float = LEVEL, lengths=None) -> Verdict:
    """E3.2: ERM generalises: the excess test risk falls with ``N``. Within each length (a cell: the fits share
    its test set and reference minimiser, each fit has its own training set), the excesses of the fits with the
    smallest ``N`` are compared with those with the largest ``N`` by rank; :func:`stratified_rank_test` over the
    lengths, so that lengths whose excess differs in scale by orders of magnitude weigh alike.

    Args:
        sample_sizes: ``[K]``; excess: ``[J, K, R]``; lengths: ``[J]`` (only to name the cells).
    """
    sizes = as_float64_array(sample_sizes, "sample_sizes", ndim=1)
    return _excess_drop_verdict(
        f"E3.2-{mode}",
        f"{mode}: ERM generalises: the excess test risk is lower with N = {int(sizes[-1])} training sequences "
        f"than with N = {int(sizes[0])}",
        source=SRC_ERM,
        excess=excess,
        axis=1,
        values=sizes,
        cell_values=lengths,
        level=level,
    )


def length_verdict(mode: str, lengths, excess, *, level: float = LEVEL, sample_sizes=None) -> Verdict:
    """E3.3: the excess test risk does not grow with ``L``; tested as: it is lower at the largest ``L`` than at the
    smallest. Within each sample size (a cell; each fit has its own training set), the excesses at the smallest
    ``L`` are compared with those at the largest by rank; :func:`stratified_rank_test` over the sample sizes.

    Args:
        lengths: ``[J]``; excess: ``[J, K, R]``; sample_sizes: ``[K]`` (only to name the cells).
    """
    lengths = as_float64_array(lengths, "lengths", ndim=1)
    return _excess_drop_verdict(
        f"E3.3-{mode}",
        f"{mode}: the excess test risk does not grow with L (tested as: lower at L = {int(lengths[-1])} than at "
        f"L = {int(lengths[0])})",
        source=SRC_LENGTH_FREE,
        excess=excess,
        axis=0,
        values=lengths,
        cell_values=sample_sizes,
        level=level,
    )


def softening_verdict(mode: str, lengths, temperature, temperature_se, *, level: float = LEVEL) -> Verdict:
    """E3.4: at every finite ``L`` the large-sample minimiser is a softer attention than ``Sigma^{-1}``:
    ``c_L < 1`` (one-sided z-tests, Bonferroni over the lengths)."""
    lengths, c, se = _vectors(lengths=lengths, temperature=temperature, temperature_se=temperature_se)
    return all_positive(
        f"E3.4-{mode}",
        f"{mode}: at every L the large-sample minimiser is a softened Sigma^-1 (c_L < 1)",
        source="derived in this book (the variance term of ex-mse favours softer attention at finite L)",
        statistic="1 - c_L",
        estimates=1 - c,
        ses=se,
        labels=[f"L = {int(L)}" for L in lengths],
        level=level,
    )


# --------------------------------------------------------------------------------------------------------
# E4: the condition-number proxy


def transfer_ratio_verdict(
    condition_numbers, downstream_sq, predicted, *, margin: float = 0.25, level: float = LEVEL
) -> Verdict:
    """E4.1: the weak-over-strong downstream excess ratio follows the derived prediction at every ``kappa``
    (log-ratio within ``log(1 + margin)``; standard errors by the delta method over the test sequences).

    Args:
        condition_numbers: ``[C]``; downstream_sq: ``[C, n, 2]`` per-sequence squared errors (strong, weak);
        predicted: ``[C]``.
    """
    kappas, pred = _vectors(condition_numbers=condition_numbers, predicted=predicted)
    sq = as_float64_array(downstream_sq, "downstream_sq")
    if sq.ndim != 3 or sq.shape[0] != kappas.size or sq.shape[2] != 2:
        raise ValueError(f"downstream_sq must be [{kappas.size}, n, 2], got {sq.shape}")
    n = sq.shape[1]
    m = sq.mean(axis=1)  # [C, 2]
    log_ratio = np.log(m[:, 1] / m[:, 0])
    se = []
    for c in range(kappas.size):
        C = np.cov(sq[c].T) / n
        g = np.array([-1 / m[c, 0], 1 / m[c, 1]])
        se.append(np.sqrt(g @ C @ g))
    ratio = np.exp(log_ratio)
    return equivalence(
        "E4.1",
        f"the weak-over-strong downstream excess ratio follows the prediction derived from (ex-mse) at every "
        f"kappa, within {100 * margin:g} %",
        source=SRC_PROXY,
        statistic="log(measured ratio / predicted ratio)",
        deviation=log_ratio - np.log(pred),
        se=np.array(se),
        margin=np.log1p(margin),
        level=level,
        measured="ratio " + ", ".join(f"{r:.2f} (predicted {p:.2f})" for r, p in zip(ratio, pred)) + ".",
    )


def pretraining_verdict(condition_numbers, pretrain_sq, *, level: float = LEVEL) -> Verdict:
    """E4.2: the masked-pretraining excess does not grow with ``kappa``; tested as: it is lower at the largest
    ``kappa`` than at ``kappa = 1`` (paired: the same draws at every ``kappa``)."""
    kappas = as_float64_array(condition_numbers, "condition_numbers", ndim=1)
    sq = as_float64_array(pretrain_sq, "pretrain_sq", ndim=2)
    diff, se = _paired(sq[0], sq[-1], "pretrain_sq[0]", "pretrain_sq[-1]")
    return directional_z(
        "E4.2",
        f"the masked-pretraining excess does not grow with the condition number (tested as: lower at "
        f"kappa = {kappas[-1]:g} than at kappa = {kappas[0]:g})",
        source="derived in this book (masked prediction weighs latent errors by Sigma)",
        statistic="pretraining excess(first kappa) - excess(last kappa)",
        estimate=float(diff),
        se=float(se),
        level=level,
        measured=f"pretraining excess {sq[0].mean():.4f} -> {sq[-1].mean():.4f}.",
    )


def length_reading(verdicts: dict) -> str:
    """What the E3.3 verdicts (:func:`length_verdict`) of the objectives say, as sentences: for the objectives
    where it holds, is not significant or is contradicted (in that order), what that does and does not show.

    Args:
        verdicts: ``{objective: Verdict}``, e.g. ``{"supervised": ..., "masked": ...}``.
    """
    by_outcome = {o: [mode for mode, v in verdicts.items() if v.outcome is o] for o in Outcome}
    reading = {
        Outcome.HOLDS: (
            "holds here for",
            "the excess is lower at the largest L in this instance, which does not show that the paper's bound "
            "holds, or how it depends on N.",
        ),
        Outcome.NOT_SIGNIFICANT: (
            "is not significant for",
            "the data do not show a difference either way, and cannot show that the paper's bound holds, or how "
            "it depends on N.",
        ),
        Outcome.CONTRADICTED: (
            "is contradicted for",
            "the excess grows with L in this instance, against this consequence of the claim.",
        ),
    }
    return " ".join(
        f"It {reading[o][0]} the {' and the '.join(modes)} objective: {reading[o][1]}"
        for o, modes in by_outcome.items()
        if modes
    )


def transfer_reading(ratio: Verdict, pretraining: Verdict) -> str:
    """What the two E4 verdicts (``ratio``: :func:`transfer_ratio_verdict`, ``pretraining``:
    :func:`pretraining_verdict`) say together, as a sentence: whether a good pretraining loss hides a poorly
    conditioned downstream problem in this instance."""
    if ratio.outcome is Outcome.HOLDS and pretraining.outcome is Outcome.HOLDS:
        return "Both hold: a good pretraining loss hides a poorly conditioned downstream problem in this instance."
    outcomes = ", ".join(f"{v.claim} {v.outcome.value}" for v in (ratio, pretraining))
    return (
        f"Not both hold in this run ({outcomes}), so it does not show that a good pretraining loss hides a poorly "
        "conditioned downstream problem."
    )
