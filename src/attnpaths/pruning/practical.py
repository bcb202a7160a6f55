"""Stronger practical pruning baselines (sec-pruning-rankings): the gradient importance of Michel, Levy and
Neubig (2019, eq-michel-importance) estimated again after each removal, and the small-scale form of the
Fisher-based mask search of Kwon et al. (2022, eq-fisher-pruning).
"""

from __future__ import annotations

import itertools

import numpy as np

from .._validation import positive_int
from ..experiments.head_pruning import all_heads, prune_in_turn
from ..experiments.head_rankings import GateGradients
from ..head_masks import pruning_mask


def iterative_gradient_order(model, tokens, targets, *, normalize: bool = True) -> list[tuple[int, int]]:
    """Prune, one at a time, the prunable head of smallest gradient importance (eq-michel-importance) measured
    at the mask of the heads pruned so far (normalised per layer over the heads left, when ``normalize``); a
    layer's last head is never pruned and comes last.

    Args:
        model: a :class:`~attnpaths.head_models.HeadModel` (as for
            :func:`~attnpaths.experiments.head_rankings.gradient_head_importance`).
        tokens: ``[P, T, D]``.
        targets: ``[P]``.

    Returns:
        every head ``(layer, head)`` in pruning order.
    """
    gradients = GateGradients(model, tokens, targets)  # the summed-head model runs once here, not once per mask

    def least_important(options, pruned):
        if len(options) == 1:  # nothing to compare: no gradient pass
            return options[0]
        importance = gradients.importance(pruning_mask(gradients.heads, pruned), normalize=normalize)
        return min(options, key=lambda lh: (importance[lh], lh))

    return prune_in_turn(gradients.heads, least_important)


def gate_fisher(model, tokens, targets, *, batch_size: int = 512) -> tuple[np.ndarray, np.ndarray]:
    """The gate gradient and the gate Fisher matrix of the training loss ``l(x) = (f(x) - y)^2`` at every head
    kept: ``g = <d l / d xi>`` and ``F = <(d l / d xi)(d l / d xi)^T>`` over examples (eq-fisher-pruning).

    Args:
        model, tokens, targets: as for :func:`iterative_gradient_order` (tokens ``[P, T, D]``, targets ``[P]``).

    Returns:
        ``(g [n], F [n, n])``, heads in :func:`~attnpaths.experiments.head_pruning.all_heads` order.
    """
    batch_size = positive_int(batch_size, "batch_size")  # checked before the model, which may be missing
    return _gate_fisher(GateGradients(model, tokens, targets, batch_size=batch_size))


def _gate_fisher(gradients: GateGradients) -> tuple[np.ndarray, np.ndarray]:
    heads, P = gradients.heads, gradients.tokens.shape[0]
    L, H = len(heads), max(heads)
    index = [l * H + h for l, h in all_heads(heads)]
    per_example = gradients().reshape(P, L * H)[:, index]
    return per_example.mean(dim=0).numpy(), (per_example.T @ per_example / per_example.shape[0]).numpy()


def fisher_pruning_sets(model, tokens, targets) -> tuple[list[tuple[tuple[int, int], ...]], np.ndarray]:
    """For each number ``k`` of pruned heads, the set ``S`` (one head kept per layer) of smallest second-order
    loss change when its gates go from 1 to 0 (eq-fisher-pruning):

        Delta l(S) ~ -g . 1_S + 1_S^T F 1_S / 2,

    searched over every such set (the heads interact through ``F``).

    Args:
        model, tokens, targets: as for :func:`iterative_gradient_order` (tokens ``[P, T, D]``, targets ``[P]``).

    Returns:
        ``(sets, change)``: ``sets[k]`` the chosen set of ``k`` heads (``k = 0..K``), ``change[k]`` its estimate.
    """
    gradients = GateGradients(model, tokens, targets)
    heads = gradients.heads
    g, F = _gate_fisher(gradients)
    pairs = all_heads(heads)
    K = sum(heads) - len(heads)
    sets, change = [], []
    for k in range(K + 1):
        best, best_value = None, np.inf
        for chosen in itertools.combinations(range(len(pairs)), k):
            counts = np.bincount([pairs[i][0] for i in chosen], minlength=len(heads))
            if np.any(counts >= np.array(heads)):
                continue
            v = -g[list(chosen)].sum() + 0.5 * F[np.ix_(chosen, chosen)].sum()
            if v < best_value:
                best, best_value = chosen, v
        sets.append(tuple(pairs[i] for i in best))
        change.append(best_value)
    return sets, np.array(change)
