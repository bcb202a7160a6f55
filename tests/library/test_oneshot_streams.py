"""The one-shot episode chunk generator (``attnpaths.oneshot.streams.EpisodeChunks``): chunk ``k`` from its own
seed whatever was made before and in any order, the episodes of ``class_sorted_sequences`` from that seed with
their path features, streamed into a solve, and the errors of bad input."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch
from helpers import (
    assert_bad_chunk_arguments_are_refused,
    assert_chunks_do_not_depend_on_their_order,
    assert_rounding_close,
    assert_streamed_solve_equals_the_whole_set,
)

from attnpaths.engine import task_seed
from attnpaths.oneshot.episodes import class_sorted_sequences
from attnpaths.oneshot.imagesets import ImageClasses
from attnpaths.oneshot.sequences import SequenceEncoder
from attnpaths.oneshot.streams import EpisodeChunks
from attnpaths.oneshot.training import TrainingConfig, initial_model
from attnpaths.paths import path_features

SIZE, PATCH = 8, 4  # 8x8 images, 4x4 patches: T = 3 * 4 = 12 tokens of N0 = 16 features
CONFIG = TrainingConfig(width=8, qk_width=4, num_heads=2, patch_size=PATCH, channels=1, seed=1)
ROUTE_RTOL = 1e-8
"""The streamed Gram route against the dense feature route: the same minimum from sums grouped differently,
moved by the rounding times the conditioning of the minimum."""


def _classes(num_classes=5, instances=3, size=SIZE, seed=0):
    """Random 8-bit grayscale images ``[C, I, S, S]`` (the generator does not look at what they show)."""
    rng = np.random.default_rng(seed)
    images = (rng.integers(0, 256, size=(num_classes, instances, size, size)) / 255.0).astype(np.float32)
    return ImageClasses(images, tuple(f"c{i}" for i in range(num_classes)), ("a",) * num_classes)


def _model():
    model, encoder, _ = initial_model(CONFIG, SIZE)
    return encoder, model.attention()


def _chunks(**fields):
    encoder, attention = _model()
    options = dict(seed=3, num_examples=30, chunk_size=8) | fields
    return EpisodeChunks(_classes(), encoder, attention, **options)


def test_a_chunk_is_the_same_whether_or_not_earlier_chunks_were_made():
    _, (features, y), in_order = assert_chunks_do_not_depend_on_their_order(_chunks)
    assert features.shape == (8, PATCH * PATCH, 4) and features.dtype == y.dtype == torch.float64
    assert in_order[3][1].tolist() == [1.0] * 3 + [-1.0] * 3
    # different chunks, streams and seeds differ
    for other in (in_order[1][0], _chunks(stream=1)(2)[0], _chunks(seed=4)(2)[0]):
        assert not torch.equal(other, features)


def test_a_chunk_holds_the_class_sorted_episodes_of_its_own_seed_and_their_path_features():
    chunks = _chunks()
    rng = np.random.default_rng(task_seed(3, 2, 0))
    expected = class_sorted_sequences(chunks.classes, 8, chunks.encoder, rng)
    episodes = chunks.episodes(2)
    # the same draws and the same encoding of the kept episodes: the same bits
    assert torch.equal(episodes.x, expected.x) and torch.equal(episodes.y, expected.y)
    for name in ("images", "label_tokens", "classes"):
        np.testing.assert_array_equal(getattr(episodes, name), getattr(expected, name))
    features, y = chunks(2)
    assert torch.equal(y, expected.y.to(torch.float64))
    assert torch.equal(features, path_features(expected.x, chunks.attention))
    factored = _chunks(factored_features=True)
    assert_rounding_close(factored(2)[0], features, what="factored features")
    assert torch.equal(pickle.loads(pickle.dumps(factored))(2)[0], factored(2)[0])  # determinism


def test_the_chunks_stream_into_the_solve_of_the_whole_set():
    chunks = _chunks(num_examples=40, chunk_size=10, factored_features=True)
    statistics = assert_streamed_solve_equals_the_whole_set(chunks, widths=8, rtol=ROUTE_RTOL)
    assert statistics.num_examples == 40 and statistics.dimension == PATCH * PATCH * 4


def test_bad_arguments_are_refused_naming_them():
    assert_bad_chunk_arguments_are_refused(_chunks)
    encoder, attention = _model()
    options = dict(seed=0, num_examples=10)
    with pytest.raises(ValueError, match=r"classes must be an ImageClasses"):
        EpisodeChunks(_classes().images, encoder, attention, **options)
    with pytest.raises(ValueError, match=r"classes must hold >= 2 classes of >= 2 instances each, got 1 x 3"):
        EpisodeChunks(_classes(num_classes=1), encoder, attention, **options)
    with pytest.raises(ValueError, match=r"classes must hold images of the encoder's side 8, got 16"):
        EpisodeChunks(_classes(size=16), encoder, attention, **options)
    with pytest.raises(ValueError, match=r"encoder must be a SequenceEncoder"):
        EpisodeChunks(_classes(), None, attention, **options)
    wide = SequenceEncoder.create(np.random.default_rng(0), patch_size=PATCH, image_size=SIZE, channels=3)
    with pytest.raises(ValueError, match=r"attention must read inputs of the encoder's width N0 = 48, got N0 = 16"):
        EpisodeChunks(_classes(), wide, attention, **options)
    with pytest.raises(ValueError, match=r"attention must be an Attention"):
        EpisodeChunks(_classes(), encoder, None, **options)


def test_the_encoders_input_basis_spans_its_tokens_in_fewer_dimensions_with_several_channels():
    """Three copies of each pixel: every token lies in the span of the 16 copy patterns, the 12 positions and
    the 3 label rows, fewer than ``N0 = 48`` dimensions; the factored features of the chunks use that basis and
    equal the exact ones up to rounding. One channel: the basis spans every feature (nothing to save)."""
    classes = _classes()
    wide = TrainingConfig(width=8, qk_width=4, num_heads=2, patch_size=PATCH, channels=3, seed=1)
    model, encoder, _ = initial_model(wide, SIZE)
    basis = encoder.input_basis()
    d = basis.shape[1]
    assert basis.shape[0] == 48 and d <= 16 + 12 + 3 < 48
    np.testing.assert_allclose(basis.T @ basis, np.eye(d), atol=1e-13)
    factored = EpisodeChunks(classes, encoder, model.attention(), seed=0, num_examples=8, chunk_size=8,
                             factored_features=True)  # fmt: skip
    assert factored._features.input_basis.shape == (48, d)
    x = factored.episodes(0).x
    assert_rounding_close(torch.from_numpy(basis @ (basis.T @ x.numpy())), x, what="tokens in the span")
    assert_rounding_close(factored(0)[0], path_features(x, model.attention()), what="features on the basis")
    assert _model()[0].input_basis().shape == (16, 16)
    assert _chunks(factored_features=True)._features.input_basis is None
