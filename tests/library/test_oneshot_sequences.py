"""Episodes and their token encoding (sec-oneshot-task)."""

import numpy as np
import pytest
import torch

from attnpaths.oneshot import sequences
from attnpaths.oneshot.digits import load_digit_pairs
from attnpaths.oneshot.imagesets import ImageClasses
from attnpaths.oneshot.sequences import SequenceEncoder


def random_classes(n_classes=6, n_instances=5, seed=0):
    rng = np.random.default_rng(seed)
    images = rng.uniform(size=(n_classes, n_instances, 32, 32)).astype(np.float32)
    return ImageClasses(images, tuple(f"c{k}" for k in range(n_classes)), ("a",) * n_classes)


@pytest.fixture()
def encoder():
    return SequenceEncoder.create(np.random.default_rng(0))


def test_positions_are_normalised_sinusoids():
    table = sequences.sinusoidal_positions(48, 64)
    t = np.arange(48)[:, None]
    frequencies = 10000.0 ** (-np.arange(0, 64, 2) / 64)
    raw = np.empty((48, 64))
    raw[:, 0::2], raw[:, 1::2] = np.sin(t * frequencies), np.cos(t * frequencies)
    np.testing.assert_allclose(table, (raw - raw.mean()) / raw.std(ddof=1), atol=1e-5)
    assert abs(table.mean()) < 1e-12 and abs(table.std(ddof=1) - 1) < 1e-5
    with pytest.raises(ValueError, match="width"):
        sequences.sinusoidal_positions(4, 5)


def test_patches_are_row_major_and_invertible(encoder):
    images = np.arange(2 * 3 * 32 * 32, dtype=np.float64).reshape(2, 3, 32, 32)
    tokens = encoder.patches(images)
    assert tokens.shape == (2, 48, 64)  # below: exact on any CPU, patches are copies (reshapes) of the pixels
    np.testing.assert_array_equal(tokens[0, 0].reshape(8, 8), images[0, 0, :8, :8])
    np.testing.assert_array_equal(tokens[0, 1].reshape(8, 8), images[0, 0, :8, 8:16])
    np.testing.assert_array_equal(tokens[1, 16 + 4].reshape(8, 8), images[1, 1, 8:16, :8])
    rebuilt = tokens.reshape(2, 3, 4, 4, 8, 8).transpose(0, 1, 2, 4, 3, 5).reshape(2, 3, 32, 32)
    np.testing.assert_array_equal(rebuilt, images)


def test_encoding_is_layer_norm_plus_position_plus_label(encoder):
    rng = np.random.default_rng(1)
    images = rng.uniform(size=(3, 3, 32, 32))
    labels = np.array([[0, 1, 2], [1, 0, 2], [0, 1, 2]])
    x = encoder.encode(images, labels)
    assert x.shape == (3, 64, 48) and x.dtype == torch.float64
    content = x.numpy().transpose(0, 2, 1) - encoder.positions()[None]
    content = content - np.repeat(encoder.label_embedding[labels], 16, axis=1)
    np.testing.assert_allclose(content.mean(axis=-1), 0, atol=1e-12)
    np.testing.assert_allclose(content.var(axis=-1), 1, atol=1e-3)
    # swapping the support labels changes only the tokens of the two support images
    delta = (encoder.encode(images[:1], labels[1:2]) - encoder.encode(images[:1], labels[:1])).numpy()[0]
    emb = encoder.label_embedding
    np.testing.assert_allclose(delta[:, :16], np.repeat((emb[1] - emb[0])[:, None], 16, axis=1), atol=1e-12)
    # determinism: the query image and its label token are the same in both episodes, encoded by the same code
    np.testing.assert_allclose(delta[:, 32:], 0, atol=0)


def test_encoding_is_bit_for_bit_the_layer_norm_formula(encoder):
    """Training amplifies rounding and trained models are cached by their parameters, so the encoding must keep
    the arithmetic of ``np.mean`` / ``np.var`` exactly: LayerNorm, then the positions, then the label embedding."""
    rng = np.random.default_rng(2)
    images = rng.uniform(size=(5, 3, 32, 32)).astype(np.float32)
    labels = rng.integers(0, 3, size=(5, 3))
    tokens = encoder.patches(images)
    layer_norm = (tokens - tokens.mean(axis=-1, keepdims=True)) / np.sqrt(
        tokens.var(axis=-1, keepdims=True) + encoder.layer_norm_eps
    )
    expected = (
        layer_norm
        + encoder.positions()[None]
        + np.repeat(encoder.label_embedding[labels], encoder.patches_per_image, axis=1)
    )
    for dtype in (torch.float64, torch.float32):
        # determinism: the same NumPy reductions (np.var is the mean of the squared deviations from np.mean) and
        # sums in the same order on the same tokens, on the same CPU: what the encoder must keep (docstring)
        assert torch.equal(
            encoder.encode(images, labels, dtype=dtype), torch.from_numpy(expected).to(dtype).transpose(1, 2)
        )


def test_label_embedding_comes_from_the_generator():
    a = SequenceEncoder.create(np.random.default_rng(5)).label_embedding
    b = SequenceEncoder.create(np.random.default_rng(5)).label_embedding
    c = SequenceEncoder.create(np.random.default_rng(6)).label_embedding
    np.testing.assert_array_equal(a, b)  # determinism: the same draw from the same seed
    assert not np.array_equal(a, c) and a.shape == (3, 64)


def test_episodes_show_two_classes_and_a_new_instance_of_the_query_class(encoder):
    classes = random_classes()
    seqs = sequences.sample_sequences(classes, 400, encoder, np.random.default_rng(2))
    assert len(seqs) == 400 and seqs.x.shape == (400, 64, 48)
    assert (seqs.classes[:, 0] != seqs.classes[:, 1]).all()
    assert np.array_equal(np.sort(seqs.label_tokens[:, :2], axis=1), np.tile([0, 1], (400, 1)))
    assert (seqs.label_tokens[:, 2] == 2).all()
    for i in range(400):
        slot = int(np.flatnonzero(seqs.label_tokens[i, :2] == (seqs.y[i] > 0))[0])
        assert seqs.classes[i, 2] == seqs.classes[i, slot]
        assert not np.array_equal(seqs.images[i, 2], seqs.images[i, slot])
    assert abs(float(seqs.y.mean())) < 0.15 and set(seqs.y.tolist()) == {-1.0, 1.0}
    assert 0.35 < (seqs.label_tokens[:, 0] == 0).mean() < 0.65


def test_same_generator_gives_identical_sequences(encoder):
    classes = random_classes()
    a = sequences.sample_sequences(classes, 50, encoder, np.random.default_rng(3), dtype=torch.float32)
    b = sequences.sample_sequences(classes, 50, encoder, np.random.default_rng(3), dtype=torch.float32)
    assert a.x.dtype == torch.float32
    assert torch.equal(a.x, b.x) and torch.equal(a.y, b.y)  # determinism: the same episodes from the same seed


def test_class_sorted_puts_positive_targets_first(encoder):
    seqs = sequences.sample_sequences(random_classes(), 100, encoder, np.random.default_rng(4))
    ordered = seqs.class_sorted(40)
    assert ordered.y[:20].eq(1).all() and ordered.y[20:].eq(-1).all()
    first_positive = int(np.flatnonzero(seqs.y.numpy() > 0)[0])
    assert torch.equal(ordered.x[0], seqs.x[first_positive])  # exact on any CPU: a reordering copies
    with pytest.raises(ValueError, match="n must be"):
        seqs.class_sorted(3)


@pytest.mark.needs("tasks")
def test_digit_sequences_use_fixed_label_order(encoder):
    pairs = load_digit_pairs()
    seqs = sequences.digit_sequences(pairs, encoder)
    assert len(seqs) == pairs.queries.shape[0]
    assert (seqs.label_tokens == [0, 1, 2]).all()
    # exact on any CPU: +-1 targets from 0/1 labels, and copies of the images
    np.testing.assert_array_equal(seqs.y.numpy(), 2.0 * pairs.query_labels - 1)
    np.testing.assert_array_equal(seqs.images[3, 0], pairs.support[0, 3])
    np.testing.assert_array_equal(seqs.images[3, 2], pairs.queries[3])


def test_bad_inputs_are_rejected(encoder):
    with pytest.raises(ValueError, match="label_tokens"):
        encoder.encode(np.zeros((1, 3, 32, 32)), np.array([[0, 1, 3]]))
    with pytest.raises(ValueError, match="patch_size"):
        SequenceEncoder(np.zeros((3, 49)), patch_size=7)
    with pytest.raises(ValueError, match="classes"):
        sequences.sample_episodes(random_classes(n_classes=1), 3, np.random.default_rng(0))
