"""Orders of attention heads and pruning along them, whatever the model (sec-oneshot-pruning, sec-pruning-curves).

* :func:`all_heads`, :func:`random_orders`: every ``(layer, head)`` pair, uniformly random orders (the order of
  ascending head score is :func:`attnpaths.head_scoring.pruning_order`);
* :func:`pruning_sets`, :func:`pruning_curve`: the nested sets of pruned heads along an order (the last head of
  a layer is never pruned) and a model's accuracy along them;
* :func:`prune_in_turn`: an order built one head at a time by a rule (greedy removal, re-estimated importance).
"""

from __future__ import annotations

import numpy as np

from .._validation import numpy_generator, positive_int


def all_heads(heads) -> list[tuple[int, int]]:
    """Every ``(layer, head)`` pair, 0-based, layer-major (the order of the non-empty labels of :func:`attnpaths.head_scoring.head_labels`)."""
    return [(l, h) for l, n in enumerate(heads) for h in range(n)]


def pruning_sets(order, heads) -> list[tuple[tuple[int, int], ...]]:
    """Cumulative sets of pruned heads along ``order``: set ``k`` holds the first ``k`` heads of ``order``
    that can be pruned, a head being skipped when it is the last one left in its layer (the model needs
    one head per layer). ``k`` runs from 0 to ``sum(H_l - 1)``.

    Args:
        order: a permutation of :func:`all_heads` ``(heads)``.
        heads: ``(H_1, ..., H_L)``.
    """
    heads = tuple(int(h) for h in heads)
    order = [tuple(int(v) for v in pair) for pair in order]
    if sorted(order) != all_heads(heads):
        raise ValueError(f"order must be a permutation of every (layer, head) pair of heads={heads}, got {order!r}")
    left = list(heads)
    pruned: list[tuple[int, int]] = []
    sets = [()]
    for l, h in order:
        if left[l] > 1:
            left[l] -= 1
            pruned.append((l, h))
            sets.append(tuple(pruned))
    return sets


def prune_in_turn(heads, choose) -> list[tuple[int, int]]:
    """Every head in pruning order, chosen one at a time: ``choose(options, pruned)`` returns one of ``options``
    (the heads ``(layer, head)`` not yet pruned whose layer keeps another head, layer-major) given the list
    ``pruned`` so far; a layer's last head is never pruned, and those come last, layer-major.

    Args:
        heads: ``(H_1, ..., H_L)``; choose: the rule of the next head.
    """
    pairs = all_heads(heads)
    left = list(heads)
    pruned: list[tuple[int, int]] = []
    while options := [(l, h) for l, h in pairs if (l, h) not in pruned and left[l] > 1]:
        chosen = choose(options, pruned)
        pruned.append(chosen)
        left[chosen[0]] -= 1
    return pruned + [lh for lh in pairs if lh not in pruned]


def pruning_curve(evaluator, order) -> np.ndarray:
    """Accuracy after pruning ``k = 0, 1, ..., K`` heads along ``order`` (:func:`pruning_sets`;
    ``K = sum_l (H_l - 1)``).

    Args:
        evaluator: a callable taking a tuple of pruned ``(layer, head)`` pairs and returning an accuracy, with
            an attribute ``heads`` ``(H_1, ..., H_L)`` (e.g. :class:`attnpaths.head_masks.HeadMaskEvaluator`).
        order: a permutation of :func:`all_heads` ``(evaluator.heads)``.

    Returns:
        float64 ``[K + 1]``.
    """
    return np.array([evaluator(s) for s in pruning_sets(order, evaluator.heads)])


def random_orders(heads, num_orders: int, rng: np.random.Generator) -> list[list[tuple[int, int]]]:
    """``num_orders`` uniformly random orders of all heads, drawn from ``rng``."""
    num_orders = positive_int(num_orders, "num_orders")
    numpy_generator(rng)
    pairs = all_heads(heads)
    return [[pairs[i] for i in rng.permutation(len(pairs))] for _ in range(num_orders)]


def curve_auc(curves) -> np.ndarray:
    """Normalised area under accuracy-vs-heads-pruned curves (eq-pruning-auc): the trapezoidal area over
    ``k = 0..K`` divided by ``K``, an accuracy between 0 and 1.

    Args:
        curves: ``[..., K + 1]`` with ``K >= 1``.

    Returns:
        ``[...]``.
    """
    curves = np.asarray(curves, dtype=np.float64)
    if curves.ndim < 1 or curves.shape[-1] < 2:
        raise ValueError(f"curves must have a last axis of K + 1 >= 2 points, got shape {curves.shape}")
    return np.trapezoid(curves, axis=-1) / (curves.shape[-1] - 1)
