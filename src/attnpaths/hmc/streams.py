"""Chunks of hidden-Markov-chain examples made one at a time from a seed (sec-hmc-task, eq-path-features): for
training sets too large to hold, streamed into the Gram statistics of the theory
(:func:`attnpaths.streaming.gram_statistics`).

Chunk ``k`` is drawn from its own generator, ``torch.Generator().manual_seed(task_seed(seed, k, stream))``
(:func:`attnpaths.engine.task_seed`: the engine's seeding rule), never from what earlier chunks left in a shared
one, so chunk ``k`` is the same whether or not chunks ``0, ..., k - 1`` were made, in any order and on any worker,
and a training set of ``P`` examples is the same list of chunks whoever makes them. ``stream`` tells apart sets
drawn from one seed (e.g. 0 for training, 1 for testing).

Each chunk is class-sorted on its own (its first half ``y = +1``, then ``y = -1``;
:meth:`attnpaths.hmc.data.HMCTask.sample`), so the whole set has as many examples of each class, in alternating
runs of half a chunk: the order of the examples changes nothing in the theory.

Example::

    from attnpaths.streaming import gram_statistics
    from attnpaths.hmc import HMCTask, four_path_network
    from attnpaths.theory import solve_from_statistics

    task = HMCTask()
    chunks = HMCChunks(task, four_path_network(task).attention, seed=0, num_examples=100_000, chunk_size=1000)
    stats = gram_statistics(chunks, chunks.num_chunks)
    sol = solve_from_statistics(stats, heads=chunks.heads, width=10, temperature=0.01)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..attention import Attention
from ..engine import task_seed
from ..experiments.path_chunks import PathFeatureChunks
from ..paths import FactoredPathFeatures
from .data import HMCTask, sample_inputs


@dataclass(frozen=True, eq=False)
class HMCChunks(PathFeatureChunks):
    """The path features (eq-path-features) of ``num_examples`` HMC sequences, in chunks of ``chunk_size`` made
    one at a time: ``chunks(k)`` is ``(features [p_k, N0, n_paths], y [p_k])`` of chunk ``k`` (float64 tensors;
    ``p_k = chunk_size`` except for the last chunk, which holds the rest). A picklable callable: the ``make_chunk``
    of :func:`attnpaths.streaming.gram_statistics` and
    :func:`attnpaths.streaming.predict_streamed`.

    Attributes:
        task: the :class:`~attnpaths.hmc.data.HMCTask` the sequences are drawn from.
        attention: the network's fixed attention (e.g. ``four_path_network(task).attention``), of input width
            ``task.input_width``.
        seed: a non-negative integer; chunk ``k`` draws from ``task_seed(seed, k, stream)``.
        num_examples: ``P``, even, >= 2.
        chunk_size: examples per chunk, even, >= 2 (memory: a chunk's inputs ``[chunk_size, N0, T_seq + 1]`` and
            its random draws are made at once; 1000 sequences of the paper's task take about 60 MB each).
        stream: a non-negative integer that tells apart sets drawn from one seed (0: training, 1: test, ...).
        factored_features: ``False`` (default): the features are :func:`attnpaths.paths.path_features` of the
            chunk's inputs; ``True``: :class:`attnpaths.paths.FactoredPathFeatures`, the same features up to
            rounding (about 1e-14 of the largest, seen on the paper's task; a solve from them moves by that times
            the conditioning of its minimum) with fewer operations (the last layer scored for its readout query
            only, low-rank heads through their factors).
    """

    task: HMCTask
    attention: Attention
    seed: int
    num_examples: int
    chunk_size: int = 1000
    stream: int = 0
    factored_features: bool = False
    _features: FactoredPathFeatures | None = field(init=False, repr=False, default=None)

    def __post_init__(self):
        if not isinstance(self.task, HMCTask):
            raise ValueError(f"task must be an HMCTask (attnpaths.hmc.data), got {type(self.task).__name__}")
        self._check_attention(self.task.input_width, "task's", "four_path_network(task).attention")
        if self.factored_features:
            object.__setattr__(self, "_features", FactoredPathFeatures(self.attention))

    def generator(self, k: int) -> torch.Generator:
        """The generator chunk ``k`` draws from: ``torch.Generator().manual_seed(task_seed(seed, k, stream))``."""
        return torch.Generator().manual_seed(task_seed(self.seed, self._index(k), self.stream))

    def __call__(self, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``(features [p_k, N0, n_paths], y [p_k])`` of chunk ``k``, made from its own generator only.

        Raises:
            ValueError: ``k`` is not an integer in ``[0, num_chunks)``.
        """
        # the inputs and labels of task.sample(p_k, generator(k)), the same bits, without the rest of the data set
        x, y = sample_inputs(self.task, self.chunk_examples(k), self.generator(k))
        return self._path_features(x), y
