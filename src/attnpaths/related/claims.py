"""The claims of the chapter ``related`` (R1-R5, results of other papers) as statistical tests
(:class:`attnpaths.claims.Verdict`), at the family-wise level ``level`` (default 1 %); the margins of
equivalence claims are part of the claim's statement.
"""

from __future__ import annotations

import numpy as np

from .._validation import as_float64_array, numpy_generator, positive_int
from ..claims import LEVEL, Verdict, exact, permutation, permutation_p_values, replicate_equivalence, replicate_t
from ..statistics import loglog_slope


def collapse_exponent_verdict(
    per_network_ratios, *, exponent: float = 3.0, margin: float = 1.0, level: float = LEVEL
) -> Verdict:
    """R1a: pure self-attention collapses doubly exponentially with the bound's exponent: the mean (over
    independent networks) of each network's mean log-residual ratio equals ``exponent`` within ``margin``
    (1: an exponential collapse gives ratios near 1, a collapse with exponent 3 near 3).

    Args:
        per_network_ratios: list of 1-D arrays, the ratios of each network (empty arrays are skipped).
    """
    means = np.array([np.mean(r) for r in per_network_ratios if np.size(r) > 0])
    if means.size < 2:
        raise ValueError("need log-residual ratios from at least 2 networks")
    return replicate_equivalence(
        "R1a",
        f"pure self-attention loses rank doubly exponentially: successive log-residual ratios equal the "
        f"bound's exponent {exponent:g} within {margin:g}",
        source="[SRC] Dong et al. 2021 (doubly exponential collapse); exponent from the bound (rel-rank-bound), "
        "[SRC-2], read asymptotically in this book",
        statistic="per-network mean of log r_{l+1} / log r_l",
        replicates=means,
        reference=exponent,
        margin=margin,
        level=level,
    )


def skip_verdict(final_residuals, *, floor: float = 1e-2, level: float = LEVEL) -> Verdict:
    """R1b: with skip connections the output does not degenerate: the mean over independent networks of
    ``log10`` of the final relative residual is above ``log10(floor)``."""
    r = as_float64_array(final_residuals, "final_residuals", ndim=1)
    logs = np.log10(np.maximum(r, 1e-300))
    return replicate_t(
        "R1b",
        f"with skip connections the output stays away from rank one: the final relative residual is above "
        f"{floor:g} (log10, mean over networks)",
        source="[SRC] Dong et al. 2021 (skip connections stop the degeneration)",
        statistic=f"log10 final residual - log10 {floor:g}",
        differences=logs - np.log10(floor),
        level=level,
        measured=f"final residuals {r.min():.3g} to {r.max():.3g}.",
    )


def scale_slopes(scales, norms) -> np.ndarray:
    """Per-draw log-log slope of the Jacobian norm between the two largest input scales: ``[draws]``."""
    t = as_float64_array(scales, "scales", ndim=1)
    J = as_float64_array(norms, "norms", ndim=2)
    return np.log(J[:, -1] / J[:, -2]) / np.log(t[-1] / t[-2])


def _growth_verdict(claim, statement, source, exponent, scales, norms, margin, level) -> Verdict:
    """The per-draw slopes of :func:`scale_slopes` have mean ``exponent`` within ``margin``."""
    return replicate_equivalence(
        claim,
        f"{statement} (slope {exponent:g} within {margin:g})",
        source=source,
        statistic="log-log slope of the Jacobian norm between the two largest scales",
        replicates=scale_slopes(scales, norms),
        reference=exponent,
        margin=margin,
        level=level,
    )


def dot_product_growth_verdict(scales, norms, *, margin: float = 1.0, level: float = LEVEL) -> Verdict:
    """R2a: dot-product self-attention (sec-r2) is not Lipschitz: its Jacobian norm grows like ``t^2`` with the
    input scale ``t``: the per-draw slopes between the two largest scales (independent draws) have mean 2 within
    ``margin`` (1 is half the distance from 2 to a bounded norm).

    Args:
        scales: ``[S]`` increasing input scales; norms: ``[draws, S]`` Jacobian norms per independent draw.
    """
    statement = "dot-product self-attention is not Lipschitz: its Jacobian norm grows like t^2 with the input scale t"
    source = "[SRC] Kim et al. 2021 (not Lipschitz on an unbounded domain); the exponent 2 is derived in this book"
    return _growth_verdict("R2a", statement, source, 2.0, scales, norms, margin, level)


def l2_growth_verdict(scales, norms, *, margin: float = 0.5, level: float = LEVEL) -> Verdict:
    """R2b: L2 self-attention (rel-l2) is Lipschitz: its Jacobian norm does not grow with the input scale: the
    per-draw slopes between the two largest scales have mean 0 within ``margin`` (0.5 is half the distance from 0
    to a linear growth).

    Args:
        scales: ``[S]`` increasing input scales; norms: ``[draws, S]`` Jacobian norms per independent draw.
    """
    statement = "L2 self-attention is Lipschitz: its Jacobian norm does not grow with the input scale"
    source = "[SRC] Kim et al. 2021 (L2 self-attention is Lipschitz)"
    return _growth_verdict("R2b", statement, source, 0.0, scales, norms, margin, level)


def adversarial_rate_verdict(
    num_tokens, norms, *, min_tokens: int = 64, exponent: float = 0.5, margin: float = 0.125
) -> Verdict:
    """R3a: on the adversarial construction (deterministic, no sampling error) the Jacobian norm grows like
    ``n^exponent``: the log-log slope over ``n >= min_tokens`` is within ``margin`` (0.125: closer to 1/2 than to
    the exponent 1/4 reported on real data)."""
    n, J = as_float64_array(num_tokens, "num_tokens", ndim=1), as_float64_array(norms, "norms", ndim=1)
    keep = n >= min_tokens
    slope = loglog_slope(n[keep], J[keep])
    return exact(
        "R3a",
        f"on a compact set the Jacobian norm of self-attention can grow like sqrt(n): on the adversarial "
        f"tokens the log-log slope is {exponent:g} within {margin:g}",
        source="[SRC] Castin et al. 2024 (the sqrt(n) bound is attained); the construction is derived in this book",
        statistic=f"log-log slope of the Jacobian norm for n >= {min_tokens}",
        value=slope,
        criterion=f"|slope - {exponent:g}| < {margin:g}",
        satisfied=abs(slope - exponent) < margin,
        measured=f"slope {slope:+.3f}.",
    )


def random_input_verdict(num_tokens, draws, *, n_from: int, n_to: int, level: float = LEVEL) -> Verdict:
    """R3b: on random tokens in the disk the Jacobian norm levels off: per independent draw,
    ``log J(n_to) - log J(n_from)`` has mean 0 within ``log(n_to / n_from) / 4``, half the change of a
    ``sqrt(n)`` growth."""
    n = list(as_float64_array(num_tokens, "num_tokens", ndim=1).astype(int))
    J = as_float64_array(draws, "draws", ndim=2)
    d = np.log(J[:, n.index(n_to)]) - np.log(J[:, n.index(n_from)])
    margin = np.log(n_to / n_from) / 4
    return replicate_equivalence(
        "R3b",
        f"on random tokens the Jacobian norm does not grow with n (n = {n_from} to {n_to}: log-change 0 "
        f"within {margin:.3f}, half that of sqrt(n))",
        source="[SRC] Castin et al. 2024 (mean-field bounds independent of n); our random-token instance",
        statistic=f"log J(n = {n_to}) - log J(n = {n_from})",
        replicates=d,
        reference=0.0,
        margin=margin,
        level=level,
    )


def w1_lipschitz_verdict(
    rng, num_atoms, delta, distance, *, num_permutations: int = 10_000, level: float = LEVEL
) -> Verdict:
    """R4a: attention is Lipschitz in ``W1`` on a compact domain: the ratio of output change to ``W1`` distance
    does not grow with ``n``; tested as: its mean over independent trials is larger at the smallest ``n`` than
    at the largest (permutation test of the difference of means).

    Args:
        num_atoms: ``[J]``; delta, distance: ``[J, T]`` output changes and distances per trial.
    """
    numpy_generator(rng)
    ns = as_float64_array(num_atoms, "num_atoms", ndim=1)
    ratio = as_float64_array(delta, "delta") / as_float64_array(distance, "distance")
    first, last = ratio[0], ratio[-1]
    observed = float(first.mean() - last.mean())
    pooled = np.concatenate([first, last])
    null = np.empty(positive_int(num_permutations, "num_permutations"))
    for b in range(null.size):
        perm = rng.permutation(pooled)
        null[b] = perm[: first.size].mean() - perm[first.size :].mean()
    p_greater, p_smaller = permutation_p_values(observed, null, level=level)
    return permutation(
        "R4a",
        f"attention is Lipschitz in W1 on a compact domain: the ratio |Delta Gamma| / W1 does not grow "
        f"with n (tested as: larger at n = {int(ns[0])} than at n = {int(ns[-1])})",
        source="[SRC] Vuckovic et al. 2020, 2021 (Lipschitz on compact domains); [SRC-2] the metric W1",
        statistic="mean ratio (smallest n) - mean ratio (largest n)",
        value=observed,
        p_greater=p_greater,
        p_smaller=p_smaller,
        test=f"permutation test of the difference of means over trials ({null.size} permutations)",
        level=level,
        measured=f"mean ratio {first.mean():.3f} (n = {int(ns[0])}) -> {last.mean():.3f} (n = {int(ns[-1])}).",
    )


def window_verdict(rates, window_trials, *, level: float = LEVEL) -> Verdict:
    """R5a: a geometric prior over positions narrows the effective context window as its rate grows: per trial,
    ``window(smallest rate) - window(largest rate) > 0`` (t-test over independent trials)."""
    rates = as_float64_array(rates, "rates", ndim=1)
    w = as_float64_array(window_trials, "window_trials", ndim=2)
    return replicate_t(
        "R5a",
        f"a geometric prior over positions narrows the effective window exp H as its rate grows (rate "
        f"{rates[0]:g} against {rates[-1]:g})",
        source="[SRC] Singh and Buckley 2023 (a geometric prior scales the context window); instance derived in "
        "this book",
        statistic="window(smallest rate) - window(largest rate)",
        differences=w[:, 0] - w[:, -1],
        level=level,
        measured=f"mean window {w[:, 0].mean():.2f} -> {w[:, -1].mean():.2f} tokens.",
    )
