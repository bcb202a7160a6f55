"""Every subset of a trained model's heads, evaluated once (sec-pruning-exact): each set's accuracy and mean
squared error, the table from which :mod:`attnpaths.experiments.head_subsets` reads the ceiling, the random
expectation, the Shapley values and the greedy order, and every ranking its pruning curve.
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


@dataclass(frozen=True, eq=False)
class SubsetOutcomes:
    """Each image's outcome under every set of pruned heads, from which the table of any split of the images is
    a mean (:meth:`table`): the images are run through the model once, however many times they are split.

    Attributes:
        heads: ``(H_1, ..., H_L)``.
        correct: float64 ``[2^n, B]`` 1 where ``sign(f) == y`` (an exact 0 counts as wrong), set ``m`` pruning the
            heads of the bits of ``m``.
        squared_error: float64 ``[2^n, B]`` ``(f - y)^2``.
    """

    heads: tuple[int, ...]
    correct: np.ndarray
    squared_error: np.ndarray

    def table(self, splits: dict) -> SubsetTable:
        """The :class:`SubsetTable` of the splits ``{name: [B] bool}`` (each the images it holds, at least one)."""
        accuracy, loss = {}, {}
        for name, mask in splits.items():
            mask = np.asarray(mask)
            if mask.dtype != bool or mask.shape != self.correct.shape[1:] or not mask.any():
                raise ValueError(
                    f"splits[{name!r}] must be a bool mask of shape [{self.correct.shape[1]}] selecting at least "
                    f"one image, got dtype {mask.dtype} and shape {mask.shape}"
                )
            accuracy[name] = self.correct[:, mask].mean(axis=1)
            loss[name] = self.squared_error[:, mask].mean(axis=1)
        return SubsetTable(self.heads, accuracy, loss)


def subset_outcomes(model, x, y) -> SubsetOutcomes:
    """Evaluate every set of pruned heads of ``model`` on each image (:func:`~.masked_outputs.subset_outputs`).

    Args:
        model: a trained model or its :class:`~attnpaths.head_models.FrozenHeadModel`.
        x: ``[B, N0, T]`` images; y: ``[B]`` labels.
    """
    view = head_model(model)
    labels = np.asarray(y, dtype=np.float64)
    f = subset_outputs(view, x).numpy()  # [2^n, B]
    if labels.shape != f.shape[1:]:
        raise ValueError(f"y must have shape [{f.shape[1]}], got {labels.shape}")
    return SubsetOutcomes(view.heads, (np.sign(f) == labels[None]).astype(np.float64), (f - labels[None]) ** 2)


def subset_table(model, splits: dict) -> SubsetTable:
    """Evaluate every set of pruned heads of ``model`` on every split (:func:`~.masked_outputs.subset_outputs`).

    Args:
        model: a trained model or its :class:`~attnpaths.head_models.FrozenHeadModel`.
        splits: ``{name: (x [B, N0, T], y [B])}``.
    """
    view = head_model(model)
    outcomes = {name: subset_outcomes(view, x, y) for name, (x, y) in splits.items()}
    accuracy = {name: o.correct.mean(axis=1) for name, o in outcomes.items()}
    return SubsetTable(view.heads, accuracy, {name: o.squared_error.mean(axis=1) for name, o in outcomes.items()})


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
