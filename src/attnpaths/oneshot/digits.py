"""Out-of-distribution test images: the handwritten digits 0 and 1 that scikit-learn ships (sec-oneshot-digits).

The paper tests its Omniglot-trained model on MNIST 0-vs-1; MNIST cannot be downloaded here, so the
8x8 UCI digits bundled with scikit-learn (``sklearn.datasets.load_digits``, 1797 images, values 0-16)
stand in, upsampled to 32x32. As in the paper's MNIST pipeline, the digits keep their own polarity
(bright ink on a dark background, the opposite of Omniglot's), unless ``invert`` is set.

Each class is cut in two halves, in the data set's order: the first half supplies the support images
(the paper uses MNIST training images), the second the queries (MNIST test images).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._optional import require
from .._validation import int_at_least
from .rendering import resize_images


@dataclass(frozen=True)
class DigitPairs:
    """Two digit classes for out-of-distribution episodes.

    Attributes:
        support: float32 ``[2, n_support, S, S]``, support pool of class 0 (first digit) and class 1.
        queries: float32 ``[Q, S, S]`` query images, in the data set's order.
        query_labels: int ``[Q]`` in ``{0, 1}`` (0 = first digit of ``digits``).
        digits: the two digits.
    """

    support: np.ndarray
    queries: np.ndarray
    query_labels: np.ndarray
    digits: tuple[int, int]


def load_digit_pairs(digits: tuple[int, int] = (0, 1), *, image_size: int = 32, invert: bool = False) -> DigitPairs:
    """Support and query images of two scikit-learn digits, resized to ``image_size``.

    Args:
        digits: the two distinct digits (0-9); the first gets label 0 (target -1), the second label 1.
        image_size: side of the resized images.
        invert: map ink to 0 and background to 1 (Omniglot's polarity) instead of the paper's
            unchanged polarity.
    """
    digits = tuple(int(d) for d in digits)
    if len(digits) != 2 or digits[0] == digits[1] or not all(0 <= d <= 9 for d in digits):
        raise ValueError(f"digits must be two distinct digits in 0..9, got {digits!r}")
    int_at_least(image_size, "image_size", 8)
    data = require("sklearn.datasets", "tasks").load_digits()
    images = data.images.astype(np.float32) / 16.0
    if invert:
        images = 1.0 - images
    support, query_index = [], []
    for digit in digits:
        index = np.flatnonzero(data.target == digit)
        half = index.size // 2
        support.append(index[:half])
        query_index.append(index[half:])
    n_support = min(s.size for s in support)
    queries = np.sort(np.concatenate(query_index))
    labels = (data.target[queries] == digits[1]).astype(np.int64)
    return DigitPairs(
        support=resize_images(np.stack([images[s[:n_support]] for s in support]), image_size),
        queries=resize_images(images[queries], image_size),
        query_labels=labels,
        digits=digits,
    )
