"""Every subset of a model's heads at once: the exact pruning optimum and the yardsticks built on it
(sec-pruning-exact: eq-pruning-ceiling, eq-pruning-random, eq-pruning-shapley, eq-pruning-normalised).

A model with ``n = sum_l H_l`` heads has ``2^n`` sets of pruned heads. A *subset table* holds one number per set,
indexed by the bitmask whose bit ``i`` marks head ``i`` of :func:`~.head_pruning.all_heads` as pruned (e.g. the
accuracy or the loss of the model with those heads pruned); every function here reads one table.

Sets that prune every head of a layer are in the table (the Shapley game needs them) but never on a curve:
pruning keeps one head per layer, as :func:`~.head_pruning.pruning_sets` does.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .._validation import as_float64_array, heads_tuple
from .head_pruning import all_heads, prune_in_turn


def subset_index(pruned, heads) -> int:
    """The table index of the set of pruned ``(layer, head)`` pairs ``pruned`` (bit ``i``: head ``i`` of
    :func:`~.head_pruning.all_heads` ``(heads)``)."""
    position = {lh: i for i, lh in enumerate(all_heads(heads_tuple(heads)))}
    index = 0
    for pair in pruned:
        key = tuple(int(v) for v in pair)
        if key not in position:
            raise ValueError(f"pruned must hold 0-based (layer, head) pairs within heads={tuple(heads)}, got {pair!r}")
        index |= 1 << position[key]
    return index


def subset_masks(heads) -> np.ndarray:
    """``[2^n, n]`` bool: row ``m`` marks the heads pruned in set ``m`` (columns in
    :func:`~.head_pruning.all_heads` order)."""
    n = len(all_heads(heads_tuple(heads)))
    return (np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1 == 1


def allowed_subsets(heads) -> np.ndarray:
    """``[2^n]`` bool: the sets that leave at least one head in every layer."""
    heads = heads_tuple(heads)
    masks = subset_masks(heads)
    starts = np.cumsum((0,) + heads)
    return np.all([~masks[:, a:b].all(axis=1) for a, b in zip(starts[:-1], starts[1:])], axis=0)


def _table(values, heads) -> np.ndarray:
    heads = heads_tuple(heads)
    values = as_float64_array(values, "values", ndim=1)
    n = sum(heads)
    if values.shape != (2**n,):
        raise ValueError(f"values must hold one number per subset of the {n} heads, shape [{2**n}], got {values.shape}")
    return values


def curve_table(evaluator) -> np.ndarray:
    """A subset table of ``evaluator`` over the sets a pruning curve can reach.

    Args:
        evaluator: a callable taking a tuple of pruned ``(layer, head)`` pairs and returning a number, with an
            attribute ``heads`` (e.g. :class:`attnpaths.head_masks.HeadMaskEvaluator`).

    Returns:
        float64 ``[2^n]``: the evaluator at every set that keeps a head in every layer; a set that empties a
        layer is not a model and holds 0 (no pruning curve, random expectation or order distribution reads it;
        :func:`shapley_values` needs a table of every set and must not be given this one).
    """
    heads = heads_tuple(evaluator.heads)
    pairs = all_heads(heads)
    table = np.zeros(2 ** len(pairs))
    for m in np.flatnonzero(allowed_subsets(heads)):
        table[m] = float(evaluator(tuple(pairs[i] for i in range(len(pairs)) if m >> i & 1)))
    return table


def subset_curve(values, sets, heads) -> np.ndarray:
    """``[len(sets)]`` the table entries of the sets of pruned heads ``sets`` (e.g. :func:`~.head_pruning.pruning_sets`
    of an order)."""
    values = _table(values, heads)
    return np.array([values[subset_index(s, heads)] for s in sets])


def best_curve(values, heads, *, maximize: bool = True) -> np.ndarray:
    """The best table entry over the sets of ``k`` pruned heads that keep a head in every layer (eq-pruning-ceiling)::

        A*_k = max_{|S| = k, S allowed} A(S),      k = 0..K,  K = sum_l (H_l - 1).

    Args:
        values: ``[2^n]`` subset table.
        maximize: ``False`` for a table of losses (the smallest is best).

    Returns:
        float64 ``[K + 1]``.
    """
    heads = heads_tuple(heads)
    values = _table(values, heads)
    sizes = subset_masks(heads).sum(axis=1)
    allowed = allowed_subsets(heads)
    pick = np.max if maximize else np.min
    return np.array([pick(values[allowed & (sizes == k)]) for k in range(sum(heads) - len(heads) + 1)])


@functools.lru_cache(maxsize=16)
def _random_order_weights(heads: tuple[int, ...]) -> np.ndarray:
    n = sum(heads)
    weights = np.zeros((n - len(heads) + 1, 2**n))
    weights[0, 0] = 1.0
    for k in range(n - len(heads)):
        masks = np.flatnonzero(weights[k])
        options = _prunable(masks, heads)
        path, head = np.nonzero(options)
        # in the order of the sets and heads: the sums of each entry in a fixed order
        np.add.at(weights[k + 1], masks[path] | (1 << head), weights[k, masks[path]] / options.sum(axis=1)[path])
    return weights


def _prunable(masks, heads: tuple[int, ...]) -> np.ndarray:
    """``[len(masks), n]`` bool: the heads each set of pruned heads ``masks`` can prune next (not pruned yet, and
    not the last of their layer)."""
    layer_of = np.array([l for l, _ in all_heads(heads)])
    pruned = (masks[:, None] >> np.arange(len(layer_of))[None, :]) & 1 == 1
    left = np.stack([heads[l] - pruned[:, layer_of == l].sum(axis=1) for l in range(len(heads))], axis=1)
    return ~pruned & (left[:, layer_of] > 1)


def random_order_weights(heads) -> np.ndarray:
    """``[K + 1, 2^n]``: the probability that a uniformly random order of the heads has pruned set ``m`` after
    ``k`` steps (:func:`~.head_pruning.pruning_sets`: a layer's last head is skipped).

    A skipped head is the last of its layer, so every head that can still be pruned is one the order has not
    reached yet, and the next one pruned is uniform among them: a Markov chain over the pruned sets,
    ``P(S + i | S) = 1 / #{prunable heads outside S}``.
    """
    heads = heads_tuple(heads)
    if sum(heads) > 16:
        raise ValueError(f"heads must hold at most 16 heads in all for the exact random expectation, got {sum(heads)}")
    return _random_order_weights(heads).copy()


def random_order_curve(values, heads) -> np.ndarray:
    """The exact expected curve of a uniformly random pruning order (eq-pruning-random):
    ``E_order[A(S_k(order))]``, ``k = 0..K``.

    Returns:
        float64 ``[K + 1]``.
    """
    heads = heads_tuple(heads)
    return random_order_weights(heads) @ _table(values, heads)


MAX_ORDER_PATHS = 2_000_000
"""The most sequences of pruned sets that :func:`random_order_area_distribution` enumerates (two layers of
four have 11 520; a third layer of four makes it 23 224 320)."""


def random_order_area_distribution(values, heads) -> tuple[np.ndarray, np.ndarray]:
    """The exact distribution, over uniformly random pruning orders, of a curve's mean over ``k = 1..K``::

        a(order) = (1/K) sum_{k=1..K} A(S_k(order)),

    the statistic of a pruning curve against random orders, without Monte-Carlo error. The chain of pruned sets
    of :func:`random_order_weights` is followed along every path: an order is a path, and its probability the
    product of the chain's steps (orders that differ only in the heads they skip share a path).

    Args:
        values: ``[2^n]`` subset table (only the sets on some pruning curve are read).
        heads: ``(H_1, ..., H_L)``.

    Returns:
        ``(areas [M], probabilities [M])``, one entry per path of the chain; the probabilities sum to 1 and the
        mean of ``areas`` is the mean of :func:`random_order_curve` over ``k = 1..K``.
    """
    heads = heads_tuple(heads)
    values = _table(values, heads)
    pairs = all_heads(heads)
    K = len(pairs) - len(heads)
    if K < 1:
        raise ValueError(f"heads must leave at least one head to prune (some layer with 2 or more), got {heads}")
    masks = np.zeros(1, dtype=np.int64)
    sums = np.zeros(1)
    probabilities = np.ones(1)
    for _ in range(K):
        options = _prunable(masks, heads)  # [paths, n]
        counts = options.sum(axis=1)
        total = int(counts.sum())
        if total > MAX_ORDER_PATHS:
            raise ValueError(
                f"heads={heads} has more than {MAX_ORDER_PATHS} pruning paths: compare with random orders "
                "drawn by Monte Carlo instead"
            )
        path, head = np.nonzero(options)
        masks = masks[path] | (np.int64(1) << head)
        sums = sums[path] + values[masks]
        probabilities = probabilities[path] / counts[path]
    return sums / K, probabilities


def random_order_p_values(observed: float, areas, probabilities) -> tuple[float, float]:
    """Exact one-sided p-values ``(P(a >= observed), P(a <= observed))`` of a pruning curve's mean ``observed``
    under uniformly random orders, from :func:`random_order_area_distribution`.

    Areas within ``1e-12`` (relative) of ``observed`` count as ties on both sides: the same table entries summed
    in another order differ in the last bits, and an order that reproduces the observed curve must count as at
    least as good.
    """
    areas = as_float64_array(areas, "areas", ndim=1, nonempty=True)
    probabilities = as_float64_array(probabilities, "probabilities", ndim=1)
    if probabilities.shape != areas.shape:
        raise ValueError(f"probabilities must have the shape of areas {areas.shape}, got {probabilities.shape}")
    observed = float(observed)
    tie = 1e-12 * max(1.0, abs(observed))
    greater = float(probabilities[areas >= observed - tie].sum())
    smaller = float(probabilities[areas <= observed + tie].sum())
    return min(greater, 1.0), min(smaller, 1.0)


def shapley_values(values, heads, *, higher_is_better: bool = True) -> np.ndarray:
    """Each head's exact Shapley value in the game whose worth of a set ``C`` of kept heads is the table entry of
    its complement (eq-pruning-shapley)::

        phi_i = sum_{C not containing i} |C|! (n - |C| - 1)! / n!  [v(C + i) - v(C)],   v(C) = +-A(pruned = not C).

    Args:
        values: ``[2^n]`` subset table (e.g. validation loss of every pruned set).
        higher_is_better: ``False`` for losses (the worth is then minus the table).

    Returns:
        float64 ``[L, max(H)]`` (``nan`` beyond a layer's heads); the values sum to ``v(all) - v(none)``.
    """
    heads = heads_tuple(heads)
    values = _table(values, heads)
    n = sum(heads)
    full = 2**n - 1
    worth = (values if higher_is_better else -values)[full ^ np.arange(2**n)]  # worth[kept set]
    sizes = subset_masks(heads).sum(axis=1)
    weight = np.array(
        [math.factorial(s) * math.factorial(n - s - 1) / math.factorial(n) if s < n else 0.0 for s in range(n + 1)]
    )
    phi = np.empty(n)
    everything = np.arange(2**n)
    for i in range(n):
        without = everything[(everything >> i) & 1 == 0]
        phi[i] = np.sum(weight[sizes[without]] * (worth[without | (1 << i)] - worth[without]))
    out = np.full((len(heads), max(heads)), np.nan)
    for (l, h), value in zip(all_heads(heads), phi):
        out[l, h] = value
    return out


def greedy_order(values, heads, *, maximize: bool = True) -> list[tuple[int, int]]:
    """Remove, one at a time, the head whose removal leaves the best table entry (a layer's last head is never
    removed; those come last, in layer-major order): a full order of the heads.

    Args:
        values: ``[2^n]`` subset table; maximize: ``False`` for losses.
    """
    heads = heads_tuple(heads)
    values = _table(values, heads)
    position = {lh: i for i, lh in enumerate(all_heads(heads))}
    sign = 1.0 if maximize else -1.0

    def best_left(options, pruned):
        current = sum(1 << position[lh] for lh in pruned)
        return max(options, key=lambda lh: (sign * values[current | (1 << position[lh])], -position[lh]))

    return prune_in_turn(heads, best_left)


def normalised_area(auc, auc_random, auc_best) -> np.ndarray:
    """``(AUC - AUC_random) / (AUC_best - AUC_random)`` (eq-pruning-normalised): 0 for the random expectation,
    1 for the ceiling; ``nan`` where the ceiling equals the random expectation.

    Args:
        auc, auc_random, auc_best: broadcastable arrays of areas (eq-pruning-auc).
    """
    auc, low, high = (
        as_float64_array(a, name) for a, name in ((auc, "auc"), (auc_random, "auc_random"), (auc_best, "auc_best"))
    )
    span = high - low
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(span > 0, (auc - low) / np.where(span > 0, span, 1.0), np.nan)
