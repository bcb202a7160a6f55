"""A network with named attention paths, and its path features (eq-path-features) on a training set and on named
evaluation sets."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..attention import Attention, HeadCounts
from ..paths import path_features


class PathNetwork(HeadCounts):
    """Base of the networks the experiments run on: fixed attention whose paths have names.

    A subclass (a frozen dataclass) holds ``attention`` (an :class:`~attnpaths.attention.Attention`) and
    ``path_names`` (one name per path in flat path order, ``h_1`` slowest), as a field or a property; it may
    override :attr:`plot_order` to show the paths of its figures in another order. Everything else an
    experiment reads from a network is derived here.

    ``num_layers`` and ``num_paths`` come from :class:`~attnpaths.attention.HeadCounts`.
    """

    attention: Attention
    path_names: tuple[str, ...]

    @property
    def heads(self) -> tuple[int, ...]:
        """``(H_1, ..., H_L)``."""
        return self.attention.heads

    @property
    def plot_order(self) -> tuple[int, ...]:
        """The flat path indices in figure order, by default the flat order; ``U[plot_order][:, plot_order]``
        reorders an order parameter for a figure."""
        return tuple(range(self.num_paths))

    @property
    def plot_names(self) -> tuple[str, ...]:
        """Path names in figure order."""
        return tuple(self.path_names[i] for i in self.plot_order)


def reorder(U, order) -> np.ndarray:
    """``U[order][:, order]`` for ``U`` ``[..., n, n]`` (e.g. flat path order -> figure order)."""
    U = np.asarray(U, dtype=np.float64)
    order = list(order)
    return U[..., order, :][..., :, order]


@dataclass(frozen=True, eq=False)
class PathData:
    """A network's path features (eq-path-features) on a training set and on named evaluation sets.

    Attributes:
        network: the :class:`PathNetwork`.
        features: ``[P, N0, n_paths]`` training path features; ``y``: ``[P]`` labels (float64 tensors).
        evaluation: ``{split: (features [B, N0, n_paths], y [B])}``, in the order in which results list the
            splits; it holds a ``"test"`` split.
    """

    network: PathNetwork
    features: torch.Tensor
    y: torch.Tensor
    evaluation: dict

    def __post_init__(self):
        if not isinstance(self.network, PathNetwork):
            raise ValueError(
                f"network must be a PathNetwork (a network with named paths), got {type(self.network).__name__}"
            )
        if not isinstance(self.evaluation, dict) or "test" not in self.evaluation:
            raise ValueError(
                f"evaluation must be a dict of (features, y) pairs with a 'test' split, got {self.evaluation!r}"
            )
        for split, (features, y) in [("train", (self.features, self.y)), *self.evaluation.items()]:
            if features.ndim != 3 or features.shape[2] != self.network.num_paths or y.shape != features.shape[:1]:
                raise ValueError(
                    f"the {split} split must hold features [B, N0, {self.network.num_paths}] and "
                    f"labels [B], got {tuple(features.shape)} and {tuple(y.shape)}"
                )

    @property
    def splits(self) -> tuple[str, ...]:
        """The evaluation splits."""
        return tuple(self.evaluation)

    @property
    def features_test(self) -> torch.Tensor:
        """``[P_test, N0, n_paths]``: the features of the ``"test"`` split."""
        return self.evaluation["test"][0]

    @property
    def y_test(self) -> torch.Tensor:
        """``[P_test]``: the labels of the ``"test"`` split."""
        return self.evaluation["test"][1]

    @property
    def num_test(self) -> int:
        """The number of examples of the ``"test"`` split."""
        return self.features_test.shape[0]


def _labelled(data, name: str) -> tuple[torch.Tensor, torch.Tensor]:
    x, y = getattr(data, "x", None), getattr(data, "y", None)
    if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor) or x.ndim != 3 or y.shape != x.shape[:1]:
        raise ValueError(
            f"{name} must be a data set with inputs x [B, N0, T] and labels y [B] (torch tensors), "
            f"got {type(data).__name__}"
        )
    return x, y.to(torch.float64)


def path_data(network: PathNetwork, train, test, **splits) -> PathData:
    """Path features of ``network`` on ``train`` and on the evaluation sets ``test`` and ``splits`` (any
    further named ones), each a data set with inputs ``x`` ``[B, N0, T]`` and labels ``y`` ``[B]``.

    Data sets that carry the task they were drawn from (a ``task`` attribute) must all come from the same one.
    """
    if not isinstance(network, PathNetwork):
        raise ValueError(f"network must be a PathNetwork (a network with named paths), got {type(network).__name__}")
    sets = {"test": test, **splits}
    x, y = _labelled(train, "train")
    tasks = [data.task for data in (train, *sets.values()) if hasattr(data, "task")]
    if any(task != tasks[0] for task in tasks[1:]):
        raise ValueError(
            f"train and {', '.join(sets)} must be drawn from the same task (the same generative parameters)"
        )
    evaluation = {}
    for split, data in sets.items():
        x_s, y_s = _labelled(data, split)
        evaluation[split] = (path_features(x_s, network.attention), y_s)
    return PathData(network=network, features=path_features(x, network.attention), y=y, evaluation=evaluation)
