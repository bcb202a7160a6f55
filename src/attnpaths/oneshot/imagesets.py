"""Containers for the image classes of the one-shot task: one split (:class:`~attnpaths.oneshot.imagesets.ImageClasses`)
and the three disjoint splits with their generation parameters (:class:`~attnpaths.oneshot.imagesets.ImageDataset`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

SPLITS = ("train", "validation", "test")


@dataclass(frozen=True)
class ImageClasses:
    """The images of one split, grouped by class.

    Attributes:
        images: float32 ``[C, I, S, S]``, instance ``i`` of class ``c``; background 1, ink 0 (as Omniglot).
        names: ``C`` class names.
        alphabets: ``C`` alphabet names, one per class.
        styles: int ``[C, I]`` index into the class's styles (font face / code-point variant) of every
            instance, or None for real images.
        distortions: float ``[C, I, 7]`` per-instance distortion parameters (``rendering.DISTORTION_NAMES``),
            or None for real images.
    """

    images: np.ndarray
    names: tuple[str, ...]
    alphabets: tuple[str, ...]
    styles: np.ndarray | None = None
    distortions: np.ndarray | None = None

    def __post_init__(self):
        if self.images.ndim != 4 or self.images.shape[-1] != self.images.shape[-2]:
            raise ValueError(f"images must have shape [C, I, S, S], got {self.images.shape}")
        if not len(self.names) == len(self.alphabets) == self.images.shape[0]:
            raise ValueError("names and alphabets must hold one entry per class (images.shape[0])")

    @property
    def num_classes(self) -> int:
        """Number of classes ``C``."""
        return self.images.shape[0]

    @property
    def instances_per_class(self) -> int:
        """Number of instances ``I`` of each class."""
        return self.images.shape[1]

    @property
    def image_size(self) -> int:
        """Side ``S`` of the square images, in pixels."""
        return self.images.shape[-1]


@dataclass(frozen=True)
class ImageDataset:
    """Disjoint ``train`` / ``validation`` / ``test`` classes and the parameters that produced them."""

    train: ImageClasses
    validation: ImageClasses
    test: ImageClasses
    parameters: dict = field(default_factory=dict)

    def split(self, name: str) -> ImageClasses:
        """The classes of the split ``name`` (one of ``train``, ``validation``, ``test``)."""
        if name not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {name!r}")
        return getattr(self, name)
