"""The one-shot task's episodes and their theory network (Fig. 3; sec-oneshot-task): :class:`OneShotNetwork`, the
trained model's query/key maps as a path network, and the episodes of every split with their path features
(eq-path-features).

Every ``U`` of this task is in the flat path order (``h_1`` slowest), which is also its figure order (path label
``"h1,h2"``, 1-based).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .._validation import even_int, int_at_least
from ..attention import Attention
from ..experiments.path_data import PathData, PathNetwork
from ..paths import all_paths, path_features
from .digits import DigitPairs
from .imagesets import ImageDataset
from .sequences import SequenceEncoder, Sequences, digit_sequences, sample_episodes

#: Training examples of the theory and test episodes (sec-oneshot-theory).
PAPER_NUM_TRAIN = 600
PAPER_NUM_TEST = 1000
#: Splits on which the theory's predictors are evaluated.
EVALUATION_SPLITS = ("validation", "test", "ood")


@dataclass(frozen=True)
class OneShotNetwork(PathNetwork):
    """The theory network of the one-shot task (sec-oneshot-theory): the trained model's query/key maps as fixed
    attention (qk form, average pooling), ``L = 2`` layers of ``H = 4`` heads, 16 paths, shown in flat order.
    """

    attention: Attention
    name: str = "one-shot"

    def __post_init__(self):
        if not isinstance(self.attention, Attention):
            raise ValueError(f"attention must be an attnpaths.attention.Attention, got {type(self.attention).__name__}")

    @property
    def path_names(self) -> tuple[str, ...]:
        """``"h1,h2"`` with 1-based heads, in flat path order (eq-path-form)."""
        return tuple(",".join(str(h + 1) for h in path) for path in all_paths(self.heads))


@dataclass(frozen=True, eq=False)
class Episodes:
    """The episodes of one chapter run.

    Attributes:
        train: ``P`` class-sorted episodes of the training classes (the theory's training set).
        validation: class-sorted episodes of the validation classes (temperature selection).
        test: class-sorted episodes of the test classes (reported accuracies).
        ood: out-of-distribution digit episodes (or None).
    """

    train: Sequences
    validation: Sequences
    test: Sequences
    ood: Sequences | None = None

    def split(self, name: str) -> Sequences:
        """The sequences of split ``name`` (``"train"``, ``"validation"``, ``"test"`` or ``"ood"``)."""
        if name not in ("train",) + EVALUATION_SPLITS:
            raise ValueError(f"split must be one of {('train',) + EVALUATION_SPLITS}, got {name!r}")
        value = getattr(self, name)
        if value is None:
            raise ValueError(f"split {name!r} was not drawn")
        return value


def class_sorted_sequences(classes, n: int, encoder: SequenceEncoder, rng: np.random.Generator) -> Sequences:
    """``n`` episodes of one split, the first ``n/2`` with ``y = +1`` then ``n/2`` with ``y = -1`` (sec-oneshot-task).

    Draws episodes in blocks of ``n`` until each target has ``n/2`` of them, then keeps the first ``n/2`` of
    each (in the order drawn), so the result depends only on ``rng``'s state and ``n``; only the kept episodes are
    encoded.
    """
    n = even_int(n, "n (half of each target)")
    blocks = []
    while True:
        blocks.append(sample_episodes(classes, n, rng))
        y = np.concatenate([b[3] for b in blocks])
        if min(int((y > 0).sum()), int((y < 0).sum())) >= n // 2:
            break
    keep = np.concatenate([np.flatnonzero(y > 0)[: n // 2], np.flatnonzero(y < 0)[: n // 2]])
    images, label_tokens, class_ids = (np.concatenate([b[i] for b in blocks])[keep] for i in range(3))
    return Sequences.encoded(encoder, images, label_tokens, class_ids, y[keep])


def draw_episodes(
    dataset: ImageDataset,
    encoder: SequenceEncoder,
    *,
    num_train: int = PAPER_NUM_TRAIN,
    num_validation: int = PAPER_NUM_TEST,
    num_test: int = PAPER_NUM_TEST,
    seed: int = 0,
    digits: DigitPairs | None = None,
) -> Episodes:
    """Training, validation and test episodes from the disjoint class splits, and the OOD digit episodes.

    Each split has its own stream ``numpy.random.default_rng(SeedSequence(seed).spawn(3)[k])`` (k = 0, 1, 2
    for train, validation, test), so changing one split's size changes no other split.

    Args:
        dataset: the class splits; encoder: the trained model's frozen token encoding.
        num_train: ``P``; num_validation, num_test: episodes per split (even).
        seed: the seed of the three streams.
        digits: out-of-distribution digit pairs (:func:`attnpaths.oneshot.digits.load_digit_pairs`), or None.
    """
    seed = int_at_least(seed, "seed", 0)
    rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3)]
    return Episodes(
        train=class_sorted_sequences(dataset.train, num_train, encoder, rngs[0]),
        validation=class_sorted_sequences(dataset.validation, num_validation, encoder, rngs[1]),
        test=class_sorted_sequences(dataset.test, num_test, encoder, rngs[2]),
        ood=None if digits is None else digit_sequences(digits, encoder),
    )


def episode_features(episodes: Episodes, attention: Attention) -> PathData:
    """Path features of the training episodes, and of the validation, test and (if drawn) OOD episodes as the
    evaluation splits (in that order), under the theory network of ``attention``."""
    network = OneShotNetwork(attention)
    names = ("train",) + tuple(s for s in EVALUATION_SPLITS if getattr(episodes, s) is not None)
    features = {s: path_features(episodes.split(s).x, attention) for s in names}
    y = {s: episodes.split(s).y.to(torch.float64) for s in names}
    return PathData(network, features["train"], y["train"], {s: (features[s], y[s]) for s in names[1:]})
