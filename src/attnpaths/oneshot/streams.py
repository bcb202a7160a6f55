"""Chunks of one-shot episodes made one at a time from a seed (sec-oneshot-task, eq-path-features): for training
sets too large to hold, streamed into the Gram statistics of the theory
(:func:`attnpaths.streaming.gram_statistics`), as :class:`attnpaths.hmc.streams.HMCChunks` does for
the hidden-Markov-chain task.

Chunk ``k`` draws its episodes from its own generator (:meth:`EpisodeChunks.generator`, the engine's seeding rule),
so it is the same whether or not chunks ``0, ..., k - 1`` were made, in any order and on any worker. Each chunk is
class-sorted on its own (its first half ``y = +1``, then ``y = -1``): the order of the examples changes nothing in
the theory.

Example::

    from attnpaths.streaming import gram_statistics
    from attnpaths.theory import solve_from_statistics

    chunks = EpisodeChunks(dataset.train, trained.encoder, trained.model.attention(), seed=0,
                           num_examples=100_000, chunk_size=1000)
    stats = gram_statistics(chunks, chunks.num_chunks)
    sol = solve_from_statistics(stats, heads=chunks.heads, width=512, temperature=0.01)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ..attention import Attention
from ..engine import task_seed
from ..experiments.path_chunks import PathFeatureChunks
from ..paths import FactoredPathFeatures
from .episodes import class_sorted_sequences
from .imagesets import ImageClasses
from .sequences import SequenceEncoder, Sequences


@dataclass(frozen=True, eq=False)
class EpisodeChunks(PathFeatureChunks):
    """The path features (eq-path-features) of ``num_examples`` one-shot episodes of one split's classes, in
    chunks of ``chunk_size`` made one at a time: ``chunks(k)`` is ``(features [p_k, N0, n_paths], y [p_k])`` of
    chunk ``k`` (float64 tensors; ``p_k = chunk_size`` except for the last chunk, which holds the rest; ``y`` in
    ``{-1, +1}``, the first half ``+1``): the ``make_chunk`` of :func:`attnpaths.streaming.gram_statistics`.

    Attributes:
        classes: the :class:`~attnpaths.oneshot.imagesets.ImageClasses` the episodes are drawn from (e.g.
            ``dataset.train``), at least 2 classes of at least 2 instances, images of side
            ``encoder.image_size``.
        encoder: the frozen token encoding (:class:`~attnpaths.oneshot.sequences.SequenceEncoder`) of the model
            whose attention is given: episodes become ``x [p_k, N0, T]``, ``N0 = encoder.input_width``.
        attention: the network's fixed attention (e.g. ``model.attention()``), of input width ``N0``.
        seed: a non-negative integer; chunk ``k`` draws from ``task_seed(seed, k, stream)``.
        num_examples: ``P``, even, >= 2.
        chunk_size: episodes per chunk, even, >= 2 (memory: a chunk's inputs ``[chunk_size, N0, T]`` are encoded
            at once; 1000 episodes of the authors' size, ``N0 = 192``, ``T = 48``, take 74 MB).
        stream: a non-negative integer that tells apart sets drawn from one seed (0: training, 1: test, ...).
        factored_features: ``False`` (default): the features are :func:`attnpaths.paths.path_features` of the
            chunk's inputs; ``True``: :class:`attnpaths.paths.FactoredPathFeatures`, the same features up to
            rounding, with the encoder's :meth:`~attnpaths.oneshot.sequences.SequenceEncoder.input_basis` where it
            spans fewer than ``N0`` dimensions (several channels: the scores on 95 coordinates instead of 192 at
            the authors' size).
    """

    classes: ImageClasses
    encoder: SequenceEncoder
    attention: Attention
    seed: int
    num_examples: int
    chunk_size: int = 1000
    stream: int = 0
    factored_features: bool = False
    _features: FactoredPathFeatures | None = field(init=False, repr=False, default=None)

    def __post_init__(self):
        if not isinstance(self.classes, ImageClasses):
            raise ValueError(
                f"classes must be an ImageClasses (attnpaths.oneshot.imagesets), e.g. dataset.train, got "
                f"{type(self.classes).__name__}"
            )
        if self.classes.num_classes < 2 or self.classes.instances_per_class < 2:
            raise ValueError(
                f"classes must hold >= 2 classes of >= 2 instances each, got {self.classes.num_classes} x "
                f"{self.classes.instances_per_class}"
            )
        if not isinstance(self.encoder, SequenceEncoder):
            raise ValueError(
                f"encoder must be a SequenceEncoder (attnpaths.oneshot.sequences), got {type(self.encoder).__name__}"
            )
        if self.classes.image_size != self.encoder.image_size:
            raise ValueError(
                f"classes must hold images of the encoder's side {self.encoder.image_size}, got "
                f"{self.classes.image_size}"
            )
        self._check_attention(self.encoder.input_width, "encoder's", "model.attention()")
        if self.factored_features:
            basis = self.encoder.input_basis()
            basis = basis if basis.shape[1] < basis.shape[0] else None  # the whole space: nothing to save
            object.__setattr__(self, "_features", FactoredPathFeatures(self.attention, input_basis=basis))

    def generator(self, k: int) -> np.random.Generator:
        """The generator chunk ``k`` draws from: ``numpy.random.default_rng(task_seed(seed, k, stream))``."""
        return np.random.default_rng(task_seed(self.seed, self._index(k), self.stream))

    def episodes(self, k: int) -> Sequences:
        """The :class:`~attnpaths.oneshot.sequences.Sequences` of chunk ``k`` (inputs ``x [p_k, N0, T]``, targets,
        images, label tokens, classes), made from its own generator only:
        ``class_sorted_sequences(classes, p_k, encoder, generator(k))``
        (:func:`attnpaths.oneshot.episodes.class_sorted_sequences`)."""
        return class_sorted_sequences(self.classes, self.chunk_examples(k), self.encoder, self.generator(k))

    def __call__(self, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``(features [p_k, N0, n_paths], y [p_k])`` of chunk ``k``, made from its own generator only.

        Raises:
            ValueError: ``k`` is not an integer in ``[0, num_chunks)``.
        """
        episodes = self.episodes(k)
        return self._path_features(episodes.x), episodes.y.to(torch.float64)
