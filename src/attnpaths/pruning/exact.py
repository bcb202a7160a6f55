"""Every subset of a trained model's heads, evaluated once (sec-pruning-exact).

:func:`subset_table` runs the model with each of the ``2^n`` sets of heads pruned (each layer once per mask of the layers
before it, the output being linear in the last layer's mask) on every split given, and keeps each set's accuracy and mean squared error: the table from which
:mod:`attnpaths.experiments.head_subsets` reads the ceiling, the random expectation, the Shapley values and the
greedy order, and from which every ranking's pruning curve is read (:class:`TableEvaluator`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..experiments.head_subsets import subset_index
from ..head_models import head_model
from .masked_outputs import subset_outputs


@dataclass(frozen=True, eq=False)
class SubsetTable:
    """Accuracy and loss of a model with every set of heads pruned.

    Attributes:
        heads: ``(H_1, ..., H_L)``.
        accuracy: ``{split: [2^n]}`` fraction of ``sign(f) == y`` (an exact 0 counts as wrong), set ``m`` pruning
            the heads of the bits of ``m`` (:func:`attnpaths.experiments.head_subsets.subset_masks`).
        loss: ``{split: [2^n]}`` mean of ``(f - y)^2``, the training loss.
    """

    heads: tuple[int, ...]
    accuracy: dict
    loss: dict


def subset_table(model, splits: dict) -> SubsetTable:
    """Evaluate every set of pruned heads of ``model`` on every split (:func:`~.masked_outputs.subset_outputs`).

    Args:
        model: a trained model or its :class:`~attnpaths.head_models.FrozenHeadModel`.
        splits: ``{name: (x [B, N0, T], y [B])}``.
    """
    view = head_model(model)
    accuracy, loss = {}, {}
    for name, (x, y) in splits.items():
        labels = np.asarray(y, dtype=np.float64)
        f = subset_outputs(view, x).numpy()  # [2^n, B]
        if labels.shape != f.shape[1:]:
            raise ValueError(f"splits[{name!r}] labels must have shape [{f.shape[1]}], got {labels.shape}")
        accuracy[name] = np.mean(np.sign(f) == labels[None], axis=1)
        loss[name] = np.mean((f - labels[None]) ** 2, axis=1)
    return SubsetTable(view.heads, accuracy, loss)


class TableEvaluator:
    """The accuracy of a set of pruned heads read from a :class:`SubsetTable` split, with the interface of
    :func:`attnpaths.experiments.head_pruning.pruning_curve`'s evaluator."""

    def __init__(self, table: SubsetTable, split: str):
        if split not in table.accuracy:
            raise ValueError(f"split must be one of {sorted(table.accuracy)}, got {split!r}")
        self.heads = table.heads
        self.values = table.accuracy[split]

    def __call__(self, pruned=()) -> float:
        return float(self.values[subset_index(pruned, self.heads)])
