"""One-shot episodes as token sequences (sec-oneshot-task): [support A, support B, query] -> x of shape [B, N0, T].

An episode shows one support image of each of two classes, with their labels 0 and 1 in random order,
then a query image of one of the two classes with the "unknown" label token 2; the target is
``y = 2 * label(query) - 1``. Every image is cut into ``(S / p)^2`` patches of ``p x p`` pixels
(row-major, pixels row-major inside a patch), giving ``T = 3 (S / p)^2`` tokens (48 for 32x32 images
and 8x8 patches). Token features, as in the authors' model:

    x0_t = LayerNorm(patch_t) + position_t + label_embedding[label token of t's image]

with a LayerNorm without learned affine (its default, frozen, is the identity), a sinusoidal position
table normalised by its own global mean and standard deviation, and a frozen random ``N(0, 1)``
label embedding of the tokens 0, 1, 2, shared by the 16 patches of an image.

Channels: the images are grayscale. With ``channels = 1`` (the default) a patch has ``p^2 = 64``
features. The authors repeat the grayscale Omniglot image on 3 channels before cutting patches
(einops ``(p1 p2 c)``, channel fastest), so their patches have ``3 p^2 = 192`` features, every pixel three
times in a row; ``channels = 3`` does the same, which LayerNorm maps to three copies of the same
normalised values (position code and label embedding then have 192 features of their own).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from .._validation import int_at_least, positive_int
from .digits import DigitPairs
from .imagesets import ImageClasses

QUERY_TOKEN = 2


def sinusoidal_positions(num_tokens: int, width: int, *, eps: float = 1e-6) -> np.ndarray:
    """Sinusoidal positions (sin on even, cos on odd features), normalised to zero mean and unit
    (unbiased) standard deviation over the whole table.

    Returns:
        float64 ``[num_tokens, width]``.
    """
    if width % 2:
        raise ValueError(f"width must be even for sin/cos pairs, got {width}")
    position = np.arange(num_tokens, dtype=np.float64)[:, None]
    frequency = np.exp(np.arange(0, width, 2, dtype=np.float64) * (-math.log(10000.0) / width))
    table = np.zeros((num_tokens, width))
    table[:, 0::2] = np.sin(position * frequency)
    table[:, 1::2] = np.cos(position * frequency)
    return (table - table.mean()) / (table.std(ddof=1) + eps)


@dataclass(frozen=True)
class SequenceEncoder:
    """Frozen token encoding of 3-image episodes.

    Attributes:
        label_embedding: float64 ``[3, N0]``, rows for the label tokens 0, 1 and 2 (query).
        patch_size: side ``p`` of the square patches.
        image_size: side ``S`` of the square images.
        layer_norm_eps: epsilon of the per-token LayerNorm.
        channels: copies of every grayscale pixel in a patch (1, or 3 as the authors' RGB-repeated images).
    """

    label_embedding: np.ndarray
    patch_size: int = 8
    image_size: int = 32
    layer_norm_eps: float = 1e-5
    channels: int = 1

    def __post_init__(self):
        positive_int(self.channels, "channels")
        if self.image_size % self.patch_size:
            raise ValueError(f"patch_size must divide image_size={self.image_size}, got {self.patch_size}")
        emb = np.asarray(self.label_embedding, dtype=np.float64)
        if emb.shape != (3, self.input_width):
            raise ValueError(f"label_embedding must have shape [3, {self.input_width}], got {emb.shape}")
        object.__setattr__(self, "label_embedding", emb)

    @classmethod
    def create(
        cls, rng: np.random.Generator, *, patch_size: int = 8, image_size: int = 32, channels: int = 1
    ) -> SequenceEncoder:
        """An encoder with a fresh ``N(0, 1)`` label embedding ``[3, channels * patch_size^2]`` drawn from
        ``rng``."""
        positive_int(patch_size, "patch_size")
        positive_int(channels, "channels")
        return cls(
            rng.standard_normal((3, channels * patch_size * patch_size)), patch_size, image_size, channels=channels
        )

    @property
    def input_width(self) -> int:
        """``N0 = channels * p^2``, features per token."""
        return self.channels * self.patch_size**2

    @property
    def patches_per_image(self) -> int:
        """Number of ``p x p`` patches of one image, ``(S / p)^2``."""
        return (self.image_size // self.patch_size) ** 2

    @property
    def num_tokens(self) -> int:
        """``T``, tokens per episode."""
        return 3 * self.patches_per_image

    def positions(self) -> np.ndarray:
        """float64 ``[T, N0]`` position table."""
        return sinusoidal_positions(self.num_tokens, self.input_width)

    def input_basis(self) -> np.ndarray:
        """Orthonormal columns ``[N0, d]`` spanning every token this encoder makes: a token is ``LayerNorm(patch)``
        (the ``channels`` copies of each of the ``p^2`` pixels equal) plus a row of the position table plus a row
        of the label embedding, so it lies in the span of the ``p^2`` copy patterns, the ``T`` positions and the 3
        label rows (``d <= min(N0, p^2 + T + 3)``; 95 of ``N0 = 192`` at the authors' size, ``N0`` with one
        channel). For :class:`attnpaths.paths.FactoredPathFeatures`' ``input_basis``.

        Returns:
            float64 ``[N0, d]``, the left singular vectors of those ``p^2 + T + 3`` vectors with singular values
            above ``N0 eps`` times the largest.
        """
        copies = np.repeat(np.eye(self.patch_size**2), self.channels, axis=0)  # [N0, p^2]: a pixel's copies
        spanning = np.concatenate([copies, self.positions().T, self.label_embedding.T], axis=1)
        u, s, _ = np.linalg.svd(spanning, full_matrices=False)
        rank = int((s > s[0] * self.input_width * np.finfo(np.float64).eps).sum())
        return np.ascontiguousarray(u[:, :rank])

    def patches(self, images) -> np.ndarray:
        """Cut episodes into patch tokens.

        Args:
            images: ``[B, 3, S, S]``.

        Returns:
            float64 ``[B, T, N0]`` (``N0 = channels * p * p``), tokens image by image, patches row-major,
            pixels row-major inside a patch with the channel copies of a pixel next to each other.
        """
        images = np.asarray(images, dtype=np.float64)
        B, n, S, _ = images.shape
        p, k = self.patch_size, self.image_size // self.patch_size
        if images.shape[1:] != (3, self.image_size, self.image_size):
            raise ValueError(f"images must have shape [B, 3, {self.image_size}, {self.image_size}], got {images.shape}")
        tiles = images.reshape(B, n, k, p, k, p).transpose(0, 1, 2, 4, 3, 5).reshape(B, n * k * k, p * p)
        return np.repeat(tiles, self.channels, axis=-1) if self.channels > 1 else tiles

    def encode(self, images, label_tokens, *, dtype: torch.dtype = torch.float64) -> torch.Tensor:
        """Token features of episodes.

        Args:
            images: ``[B, 3, S, S]`` (support, support, query).
            label_tokens: int ``[B, 3]`` label token of each image (0, 1 or 2).
            dtype: dtype of the result (float64 for the theory, float32 for training).

        Returns:
            ``x`` of shape ``[B, N0, T]`` (column ``t`` is token ``t``).
        """
        tokens = self.patches(images)
        label_tokens = np.asarray(label_tokens)
        if label_tokens.shape != (tokens.shape[0], 3) or not np.isin(label_tokens, (0, 1, 2)).all():
            raise ValueError(f"label_tokens must be [B, 3] with values in {{0, 1, 2}}, got shape {label_tokens.shape}")
        # LayerNorm with the arithmetic of np.var (mean of the squared deviations), the deviations computed once
        B, T, N0 = tokens.shape
        centred = tokens - tokens.mean(axis=-1, keepdims=True)
        x = centred / np.sqrt(np.mean(centred * centred, axis=-1, keepdims=True) + self.layer_norm_eps)
        x += self.positions()[None]
        x.reshape(B, 3, self.patches_per_image, N0)[...] += self.label_embedding[label_tokens][:, :, None, :]
        return torch.from_numpy(x).to(dtype).transpose(1, 2).contiguous()

    def state(self) -> dict:
        """Everything needed to rebuild the encoder (saved with trained weights)."""
        return {
            "label_embedding": torch.from_numpy(self.label_embedding.copy()),
            "patch_size": self.patch_size,
            "image_size": self.image_size,
            "layer_norm_eps": self.layer_norm_eps,
            "channels": self.channels,
        }

    @classmethod
    def from_state(cls, state: dict) -> SequenceEncoder:
        """The encoder saved by :meth:`state` (the inverse of :meth:`state`)."""
        return cls(
            np.asarray(state["label_embedding"], dtype=np.float64),
            int(state["patch_size"]),
            int(state["image_size"]),
            float(state["layer_norm_eps"]),
            int(state.get("channels", 1)),
        )


@dataclass(frozen=True)
class Sequences:
    """Encoded episodes.

    Attributes:
        x: ``[B, N0, T]`` token features (the theory's input).
        y: float64 ``[B]`` targets in ``{-1, +1}``.
        images: float32 ``[B, 3, S, S]`` (support, support, query), for plotting.
        label_tokens: int ``[B, 3]``.
        classes: int ``[B, 3]`` class index of each image within its split (digit label for digits).
    """

    x: torch.Tensor
    y: torch.Tensor
    images: np.ndarray
    label_tokens: np.ndarray
    classes: np.ndarray

    def __len__(self) -> int:
        return self.x.shape[0]

    @classmethod
    def encoded(cls, encoder, images, label_tokens, classes, y, *, dtype: torch.dtype = torch.float64) -> Sequences:
        """The episodes of ``images [B, 3, S, S]``, ``label_tokens``, ``classes`` (int ``[B, 3]``) and targets ``y``
        (float64 ``[B]``), their tokens encoded by ``encoder`` (:meth:`SequenceEncoder.encode` in ``dtype``)."""
        x = encoder.encode(images, label_tokens, dtype=dtype)
        return cls(x, torch.from_numpy(y), images.astype(np.float32), label_tokens, classes)

    def subset(self, index) -> Sequences:
        """The episodes at ``index`` (an index array or a boolean mask over the ``B`` episodes)."""
        index = np.asarray(index)
        rows = torch.as_tensor(index)
        return Sequences(self.x[rows], self.y[rows], self.images[index], self.label_tokens[index], self.classes[index])

    def class_sorted(self, n: int) -> Sequences:
        """The first ``n/2`` episodes with ``y = +1`` followed by the first ``n/2`` with ``y = -1``
        (the ordering of the theory's training and test sets, sec-oneshot-task)."""
        if not isinstance(n, int) or n < 2 or n % 2:
            raise ValueError(f"n must be an even integer >= 2, got {n!r}")
        y = self.y.numpy()
        pos, neg = np.flatnonzero(y > 0), np.flatnonzero(y < 0)
        if min(pos.size, neg.size) < n // 2:
            raise ValueError(f"n must be <= 2 * {min(pos.size, neg.size)} (episodes of the rarer target), got {n}")
        return self.subset(np.concatenate([pos[: n // 2], neg[: n // 2]]))


def sample_episodes(classes: ImageClasses, n: int, rng: np.random.Generator):
    """Draw ``n`` one-shot episodes from a split.

    Two distinct classes are drawn uniformly; their support images get the labels 0 and 1 in random
    order; the query's label is uniform in {0, 1} and its image is another instance of that class.

    Returns:
        ``(images [n, 3, S, S], label_tokens [n, 3], classes [n, 3], y [n])``.
    """
    C, I = classes.num_classes, classes.instances_per_class
    if C < 2 or I < 2:
        raise ValueError(f"classes must hold >= 2 classes with >= 2 instances each, got {C} x {I}")
    int_at_least(n, "n", 0)
    first = rng.integers(C, size=n)
    second = (first + rng.integers(1, C, size=n)) % C
    support_class = np.stack([first, second], axis=1)
    support_instance = rng.integers(I, size=(n, 2))
    first_label = rng.integers(2, size=n)
    query_label = rng.integers(2, size=n)
    # Position (0 or 1) of the support image whose label is the query's label.
    slot = (query_label != first_label).astype(np.int64)
    rows = np.arange(n)
    query_class = support_class[rows, slot]
    query_instance = (support_instance[rows, slot] + rng.integers(1, I, size=n)) % I
    class_ids = np.concatenate([support_class, query_class[:, None]], axis=1)
    images = classes.images[class_ids, np.concatenate([support_instance, query_instance[:, None]], axis=1)]
    label_tokens = np.stack([first_label, 1 - first_label, np.full(n, QUERY_TOKEN)], axis=1)
    return images, label_tokens, class_ids, 2.0 * query_label - 1.0


def sample_sequences(
    classes: ImageClasses,
    n: int,
    encoder: SequenceEncoder,
    rng: np.random.Generator,
    *,
    dtype: torch.dtype = torch.float64,
) -> Sequences:
    """``n`` encoded episodes of a split (see :func:`~attnpaths.oneshot.sequences.sample_episodes`)."""
    images, label_tokens, class_ids, y = sample_episodes(classes, n, rng)
    return Sequences.encoded(encoder, images, label_tokens, class_ids, y, dtype=dtype)


def digit_sequences(digits: DigitPairs, encoder: SequenceEncoder, *, dtype: torch.dtype = torch.float64) -> Sequences:
    """Out-of-distribution episodes, one per query image (sec-oneshot-digits): episode ``i`` shows the
    ``i``-th support image of each digit (cycling through the support pool), labels in the fixed
    order [0, 1, 2], and the ``i``-th query; target -1 for the first digit, +1 for the second."""
    Q, n_support = digits.queries.shape[0], digits.support.shape[1]
    k = np.arange(Q) % n_support
    images = np.stack([digits.support[0, k], digits.support[1, k], digits.queries], axis=1)
    label_tokens = np.tile(np.array([0, 1, QUERY_TOKEN]), (Q, 1))
    class_ids = np.stack([np.zeros(Q, np.int64), np.ones(Q, np.int64), digits.query_labels], axis=1)
    y = 2.0 * digits.query_labels - 1.0
    return Sequences.encoded(encoder, images, label_tokens, class_ids, y, dtype=dtype)
