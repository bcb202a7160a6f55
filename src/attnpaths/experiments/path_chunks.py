"""What the subjects' chunk generators of path features share (:class:`attnpaths.hmc.streams.HMCChunks`,
:class:`attnpaths.oneshot.streams.EpisodeChunks`): the check of the network's attention against the inputs a chunk
holds, and the features of a chunk's inputs, plain or factored."""

from __future__ import annotations

import torch

from .._validation import check_chunked_stream
from ..attention import Attention
from ..paths import path_features
from ..streaming import ChunkedStream


class PathFeatureChunks(ChunkedStream):
    """A base class of frozen dataclasses that read chunks of inputs through ``attention`` (an
    :class:`~attnpaths.attention.Attention`) into path features (eq-path-features): besides the fields of
    :class:`~attnpaths.streaming.ChunkedStream`, ``attention``, ``factored_features`` and ``_features`` (``None``
    or the :class:`~attnpaths.paths.FactoredPathFeatures` that ``factored_features`` asks for)."""

    def _check_attention(self, input_width: int, source: str, example: str) -> None:
        """Raises unless ``attention`` is an ``Attention`` (e.g. ``example``) of input width ``input_width`` (that of
        ``source``), then checks the chunk sizes."""
        if not isinstance(self.attention, Attention):
            raise ValueError(
                f"attention must be an Attention (attnpaths.attention), e.g. {example}, got "
                f"{type(self.attention).__name__}"
            )
        if self.attention.input_width != input_width:
            raise ValueError(
                f"attention must read inputs of the {source} width N0 = {input_width}, got "
                f"N0 = {self.attention.input_width}"
            )
        check_chunked_stream(self)

    def _path_features(self, x: torch.Tensor) -> torch.Tensor:
        """``[p, N0, n_paths]`` path features of the inputs ``x [p, N0, T]``."""
        return path_features(x, self.attention) if self._features is None else self._features(x)
