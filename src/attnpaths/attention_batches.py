"""A model's training data as Gram statistics, batch by batch: the theory of your own model at any number of
examples (sec-own-model, sec-learning-curves).

:func:`attnpaths.frozen_attention.theory_from_attention` holds the path features of every training example,
``P x D x n_paths`` numbers. The theory needs only their Gram matrix (:mod:`attnpaths.gram`: ``D n_paths`` squared
numbers whatever ``P``), so :func:`attention_statistics` runs the model on one batch of tokens at a time, checks
the batch as :func:`~attnpaths.frozen_attention.theory_from_attention` checks its data (the attention's layout and
row sums, the tokens' shape, one real target per example, no 0/1 labels, the same heads in every batch), adds its
path features to the statistics and drops them. The statistics record the model's heads and readout, and
:func:`attnpaths.frozen_attention.theory_from_statistics` solves them into the same
:class:`~attnpaths.frozen_attention.AttentionTheory` (head scores, GP limit, ``predict(attention, tokens)``)::

    statistics = attention_statistics(model, loader)          # loader: (tokens [B, T, D], targets [B]) batches
    theory = theory_from_statistics(statistics, width=64, temperature=0.1)

The batches come from an iterable (a ``DataLoader``, a generator: read in this process, in order), or from a
picklable function ``make_batch(k)`` for ``k = 0, ..., num_batches - 1`` (a pure function of ``k``), whose batches
are tasks of the engine (:func:`attnpaths.streaming.gram_statistics`: in this process, on threads of it, or on a
Dask cluster; the same bits wherever they run).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from numpy.typing import ArrayLike
from tqdm import tqdm

from ._validation import positive_int
from .frozen_attention import checked_attention, checked_targets, model_attention
from .gram import DEFAULT_BLOCK_SIZE, GramStatistics
from .head_models import HeadModel
from .paths import features_along_paths
from .streaming import gram_statistics


def batch_features(
    model: HeadModel, tokens: ArrayLike, targets: ArrayLike, readout: str
) -> tuple[torch.Tensor, torch.Tensor, tuple[int, ...]]:
    """``(features [B, D, n_paths], targets [B], heads)`` of one batch: the path features (eq-path-features) of the
    model's frozen attention for ``tokens`` ``[B, T, D]``, checked as
    :func:`attnpaths.frozen_attention.theory_from_attention` checks its data."""
    matrices, x = checked_attention(model_attention(model, tokens), tokens, readout)
    y = checked_targets(targets, x.shape[0])
    return features_along_paths(x, matrices), y, tuple(int(m.shape[1]) for m in matrices)


class AttentionBatches:
    """The chunks of :func:`attnpaths.streaming.gram_statistics` made by a model from batches of tokens:
    ``self(k) = (features [B_k, D, n_paths], targets [B_k])`` of ``make_batch(k) = (tokens, targets)``, refused
    where the model's heads differ from ``heads``. Picklable where ``model`` and ``make_batch`` are.

    Args:
        model: a :class:`attnpaths.head_models.HeadModel` (``attention_weights(tokens)``).
        make_batch: ``k -> (tokens [B_k, T, D], targets [B_k])``.
        heads: ``(H_1, ..., H_L)`` of the model.
        readout: the last layer's readout (as for :func:`attnpaths.frozen_attention.theory_from_attention`).
    """

    def __init__(self, model: HeadModel, make_batch: Callable, heads: tuple[int, ...], readout: str):
        self.model, self.make_batch, self.heads, self.readout = model, make_batch, tuple(heads), readout

    def __call__(self, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        batch = self.make_batch(k)
        if not isinstance(batch, (tuple, list)) or len(batch) != 2:
            raise ValueError(f"make_batch({k}) must return a pair (tokens [B, T, D], targets [B])")
        features, y, heads = batch_features(self.model, *batch, self.readout)
        if heads != self.heads:
            raise ValueError(f"the model's attention must have the heads {self.heads} of batch 0, got {heads}")
        return features, y


def attention_statistics(
    model: HeadModel,
    batches: Iterable | Callable,
    *,
    num_batches: int | None = None,
    readout: str = "average_pooling",
    engine=None,
    block_size: int = DEFAULT_BLOCK_SIZE,
    progress: bool = True,
) -> GramStatistics:
    """The Gram statistics (:class:`attnpaths.gram.GramStatistics`) of a model's training data, batch by batch, for
    :func:`attnpaths.frozen_attention.theory_from_statistics` (module docstring).

    Args:
        model: any object with a method ``attention_weights(tokens)`` returning ``L`` tensors ``[B, H_l, T, T]``
            (batch, head, query, key; :class:`attnpaths.head_models.HeadModel`).
        batches: an iterable of pairs ``(tokens [B, T, D], targets [B])`` (``+-1`` labels), read in this process;
            or a picklable callable ``make_batch(k)`` returning such a pair, with ``num_batches``.
        num_batches: the number of batches of a callable ``batches`` (an integer >= 1); None for an iterable.
        readout: ``"average_pooling"``, ``"last_token"`` or ``"first_token"``, as the model reads its output.
        engine: where the batches of a callable run (:func:`attnpaths.streaming.gram_statistics`): None, an
            :class:`attnpaths.engine.Engine` or a ``dask.distributed`` client; an iterable is read in this process.
        block_size: examples per block of the statistics (:class:`attnpaths.gram.GramStatistics`).
        progress: a tqdm bar over the batches.

    Returns:
        :class:`attnpaths.gram.GramStatistics` recording the model's ``heads`` and the ``readout``. An iterable's
        statistics are those of one stream of its examples; a callable's are merged batch by batch in order (equal
        to the stream's up to rounding, and the same bits on any engine).

    Raises:
        ValueError: a batch the in-memory door would refuse (naming it), heads that change between batches, no
            batch at all, ``num_batches`` given for an iterable or missing for a callable, an ``engine`` with an
            iterable.
    """
    if callable(batches) and not hasattr(batches, "__iter__"):
        num_batches = positive_int(num_batches, "num_batches")
        first = batches(0)
        if not isinstance(first, (tuple, list)) or len(first) != 2:
            raise ValueError("make_batch(0) must return a pair (tokens [B, T, D], targets [B])")
        _, _, heads = batch_features(model, *first, readout)
        chunks = AttentionBatches(model, batches, heads, readout)
        return gram_statistics(
            chunks, num_batches, engine=engine, block_size=block_size, progress=progress, description="batches"
        )
    if num_batches is not None or engine is not None:
        raise ValueError(
            "num_batches and engine must be None for an iterable of batches (read in this process); pass a "
            "function make_batch(k) to run the batches on an engine"
        )
    statistics = None
    for k, batch in enumerate(tqdm(batches, desc="batches", disable=not progress, leave=False, unit="batch")):
        if not isinstance(batch, (tuple, list)) or len(batch) != 2:
            raise ValueError(f"batch {k} must be a pair (tokens [B, T, D], targets [B]), got {type(batch).__name__}")
        try:
            features, y, heads = batch_features(model, *batch, readout)
            if statistics is None:
                statistics = GramStatistics(block_size, heads=heads, readout=readout)
            elif heads != statistics.heads:
                raise ValueError(
                    f"the model's attention must have the heads {statistics.heads} of batch 0, got {heads}"
                )
            statistics.update(features, y)
        except (ValueError, TypeError) as err:
            raise type(err)(f"batch {k}: {err}") from err
    if statistics is None:
        raise ValueError("batches must hold at least one batch, got none")
    return statistics
