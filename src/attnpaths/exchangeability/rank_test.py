"""An exact stratified rank test: Mann-Whitney counts summed over strata, each stratum on its own scale.

The chapter's claims about excess risks (E3.2, E3.3) compare fits whose excesses differ in scale by orders of
magnitude between cells; a test on ranks within each cell weighs the cells alike.
"""

from __future__ import annotations

import numpy as np

from .._validation import as_float64_array


def _mann_whitney_null(m: int, n: int) -> np.ndarray:
    """Null distribution of the Mann-Whitney count ``U`` of two groups of sizes ``m`` and ``n`` (every split of
    the ``m + n`` exchangeable values equally likely, no ties): ``[m n + 1]`` probabilities of ``U = 0..mn``."""
    # f[a][b] counts the orderings of a and b values by U: the largest value closes a pair with every one of
    # the other group when it belongs to the first group, with none when it belongs to the second
    f = [[np.ones(1, dtype=object)] * (n + 1) for _ in range(m + 1)]
    for a in range(1, m + 1):
        for b in range(1, n + 1):
            counts = np.zeros(a * b + 1, dtype=object)
            counts[b:] += f[a - 1][b]
            counts[: (a * (b - 1)) + 1] += f[a][b - 1]
            f[a][b] = counts
    counts = f[m][n]
    return np.array([c / sum(counts) for c in counts], dtype=np.float64)


def stratified_rank_test(larger, smaller) -> dict:
    """Exact stratified rank test (Mann-Whitney counts summed over strata) that ``larger`` exceeds ``smaller``
    within each stratum, with a scale of its own per stratum.

    Args:
        larger, smaller: ``[S, m]`` and ``[S, n]`` values of the two groups in each of ``S`` strata (``m, n >= 1``);
            within a stratum the ``m + n`` values are exchangeable under the null hypothesis.

    Returns:
        The test's result,
        ``{"U": sum over strata of #{(i, j): larger_i > smaller_j} (ties count 1/2), "pairs": S m n,
        "fraction": U / pairs, "p_greater": P(U_null >= U), "p_smaller": P(U_null <= U),
        "smallest_p": (m! n! / (m + n)!)^S}``, the p-values from the exact null distribution of the sum (the
        strata independent, every within-stratum split equally likely). The test depends on the values only
        through their ranks within a stratum, so it is unchanged by any increasing transformation of each stratum
        (e.g. the log) and a stratum of large values weighs no more than one of small values.
    """
    a, b = as_float64_array(larger, "larger", ndim=2), as_float64_array(smaller, "smaller", ndim=2)
    if a.shape[0] != b.shape[0] or a.shape[0] < 1 or a.shape[1] < 1 or b.shape[1] < 1:
        raise ValueError(f"larger and smaller must be [S, m] and [S, n] with S, m, n >= 1, got {a.shape} and {b.shape}")
    m, n = a.shape[1], b.shape[1]
    u = float(np.sum((a[:, :, None] > b[:, None, :]) + 0.5 * (a[:, :, None] == b[:, None, :])))
    one = _mann_whitney_null(m, n)
    null = np.ones(1)
    for _ in range(a.shape[0]):
        null = np.convolve(null, one)
    values = np.arange(null.size, dtype=np.float64)
    p_greater = float(min(1.0, null[values >= u - 1e-9].sum()))
    p_smaller = float(min(1.0, null[values <= u + 1e-9].sum()))
    return {
        "U": u,
        "pairs": int(a.shape[0] * m * n),
        "fraction": u / (a.shape[0] * m * n),
        "p_greater": p_greater,
        "p_smaller": p_smaller,
        "smallest_p": float(one[-1] ** a.shape[0]),
    }
