"""Handwritten digits as sequences of patch tokens: the pruning chapter's task (sec-pruning-task).

scikit-learn ships the 1797 8x8 images of the UCI handwritten digits (``sklearn.datasets.load_digits``, pixel
values 0-16). Each image is cut into non-overlapping ``p x p`` patches, read row by row; token ``t`` holds the
patch's ``p^2`` pixels (scaled to [0, 1]) followed by a one-hot code of its position, so
``N0 = p^2 + (8 / p)^2`` features and ``T = (8 / p)^2`` tokens. The label is ``+1`` for the digits of
``positive_digits`` and ``-1`` for the others: a binary task, as the theory's scalar output needs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .._optional import require
from .._validation import int_at_least, numpy_generator
from ..engine import task_seed

IMAGE_SIZE = 8


@dataclass(frozen=True, eq=False)
class PatchDigits:
    """Digit images as token sequences.

    Attributes:
        x: float64 ``[B, N0, T]`` tokens (pixels of a patch, then its one-hot position).
        y: float64 ``[B]`` labels ``+-1``.
        digits: int ``[B]`` the digit each image shows.
        patch_size: ``p``; positive_digits: the digits labelled ``+1``.
    """

    x: torch.Tensor
    y: torch.Tensor
    digits: np.ndarray
    patch_size: int
    positive_digits: tuple[int, ...]

    def __len__(self) -> int:
        return int(self.x.shape[0])

    @property
    def num_tokens(self) -> int:
        """The number of tokens ``T`` of an image (its patches)."""
        return int(self.x.shape[2])

    @property
    def input_width(self) -> int:
        """The width ``N0`` of a token (a patch's pixels, then its one-hot position)."""
        return int(self.x.shape[1])

    def subset(self, index) -> PatchDigits:
        """The images at ``index`` (an integer array), in that order."""
        index = np.asarray(index, dtype=np.int64)
        return PatchDigits(self.x[index], self.y[index], self.digits[index], self.patch_size, self.positive_digits)


def digit_patches(patch_size: int = 2, positive_digits=(5, 6, 7, 8, 9)) -> PatchDigits:
    """Every image of ``sklearn.datasets.load_digits`` as a sequence of ``(8 / patch_size)^2`` patch tokens.

    Args:
        patch_size: ``p``, a divisor of 8 below 8 (1, 2 or 4).
        positive_digits: the digits labelled ``+1`` (a non-empty proper subset of 0-9).
    """
    patch_size = int_at_least(patch_size, "patch_size", 1)
    if IMAGE_SIZE % patch_size or patch_size == IMAGE_SIZE:
        raise ValueError(f"patch_size must be 1, 2 or 4 (a divisor of 8 below 8), got {patch_size}")
    positive = tuple(sorted({int(d) for d in positive_digits}))
    if not positive or len(positive) == 10 or any(not 0 <= d <= 9 for d in positive):
        raise ValueError(
            f"positive_digits must be a non-empty proper subset of the digits 0-9, got {positive_digits!r}"
        )
    data = require("sklearn.datasets", "tasks").load_digits()
    images = data.images.astype(np.float64) / 16.0  # [B, 8, 8]
    side = IMAGE_SIZE // patch_size
    patches = images.reshape(-1, side, patch_size, side, patch_size).transpose(0, 1, 3, 2, 4)
    patches = patches.reshape(images.shape[0], side * side, patch_size**2)  # [B, T, p^2], row by row
    position = np.broadcast_to(np.eye(side * side), (images.shape[0], side * side, side * side))
    tokens = np.concatenate([patches, position], axis=2).transpose(0, 2, 1)  # [B, N0, T]
    y = np.where(np.isin(data.target, positive), 1.0, -1.0)
    return PatchDigits(
        torch.from_numpy(np.ascontiguousarray(tokens)),
        torch.from_numpy(y),
        data.target.astype(np.int64),
        patch_size,
        positive,
    )


def train_test_split(data: PatchDigits, num_test: int, rng: np.random.Generator) -> tuple[PatchDigits, PatchDigits]:
    """A uniformly random split into ``len(data) - num_test`` training and ``num_test`` test images, drawn from
    ``rng``."""
    num_test = int_at_least(num_test, "num_test", 1)
    if num_test >= len(data):
        raise ValueError(f"num_test must be below the number of images ({len(data)}), got {num_test}")
    numpy_generator(rng)
    order = rng.permutation(len(data))
    return data.subset(np.sort(order[num_test:])), data.subset(np.sort(order[:num_test]))


def train_validation_test_split(
    data: PatchDigits, num_held_out: int, num_validation: int, seed: int
) -> tuple[PatchDigits, PatchDigits, PatchDigits]:
    """``(train, validation, test)``: ``num_held_out`` images held out from training
    (:func:`train_test_split` with ``numpy.random.default_rng(seed)``), of which ``num_validation`` become the
    validation images (drawn with ``default_rng([seed, 1])``) and the rest the test images. The models train on
    the first part, choices (temperatures, rankings) are made on the second and reported on the third."""
    train, held_out = train_test_split(data, num_held_out, np.random.default_rng(seed))
    test, validation = train_test_split(held_out, num_validation, np.random.default_rng([seed, 1]))
    return train, validation, test


def held_out_splits(num_held_out: int, num_validation: int, seed: int, num_splits: int) -> np.ndarray:
    """``[num_splits, num_held_out]`` bool: split ``r`` of the held-out images into ``num_validation`` validation
    images (``True``) and the others, the test images (``False``), a uniformly random choice drawn with
    ``numpy.random.default_rng(task_seed(seed, 1, r))`` (:func:`attnpaths.engine.task_seed`): each split is its
    own stream, so adding splits changes none of the earlier ones."""
    num_held_out = int_at_least(num_held_out, "num_held_out", 2)
    num_validation = int_at_least(num_validation, "num_validation", 1)
    if num_validation >= num_held_out:
        raise ValueError(f"num_validation must be below num_held_out ({num_held_out}), got {num_validation}")
    seed = int_at_least(seed, "seed", 0)
    num_splits = int_at_least(num_splits, "num_splits", 1)
    masks = np.zeros((num_splits, num_held_out), dtype=bool)
    for r in range(num_splits):
        chosen = np.random.default_rng(task_seed(seed, 1, r)).permutation(num_held_out)[:num_validation]
        masks[r, chosen] = True
    return masks
