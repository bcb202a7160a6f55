"""Training: reproducible from its seed, keeps the best validation weights, saves everything it needs."""

import copy
import os

import numpy as np
import pytest
import torch

from attnpaths.oneshot import training
from attnpaths.oneshot.imagesets import ImageClasses, ImageDataset
from attnpaths.oneshot.sequences import sample_sequences
from attnpaths.oneshot.training import TrainingConfig

TINY = TrainingConfig(width=8, qk_width=4, batch_size=16, steps=12, validate_every=4, validation_sequences=64)


def blob_classes(n_classes, seed):
    """Classes whose instances are noisy copies of one random blob image (an easy one-shot task)."""
    rng = np.random.default_rng(seed)
    prototypes = (rng.uniform(size=(n_classes, 1, 32, 32)) > 0.7).astype(np.float32)
    images = np.clip(prototypes + 0.2 * rng.standard_normal((n_classes, 6, 32, 32)), 0, 1).astype(np.float32)
    return ImageClasses(images, tuple(f"blob{seed}-{k}" for k in range(n_classes)), ("blobs",) * n_classes)


@pytest.fixture(scope="module")
def dataset():
    return ImageDataset(blob_classes(10, 0), blob_classes(6, 1), blob_classes(6, 2), parameters={"source": "blobs"})


@pytest.fixture(scope="module")
def trained(dataset):
    return training.fit(TINY, dataset, progress=False)


def test_fit_is_reproducible_from_the_seed(dataset, trained):
    again = training.fit(TINY, dataset, progress=False)
    for a, b in zip(trained.model.parameters(), again.model.parameters()):
        assert torch.equal(a, b)  # determinism: the same training from the same seed, twice
    assert trained.history == again.history  # determinism: as above
    other = training.fit(TrainingConfig(**{**TINY.__dict__, "seed": 7}), dataset, progress=False)
    assert not torch.equal(other.model.readout, trained.model.readout)


def test_history_and_best_weights(dataset, trained):
    assert trained.history["step"] == [4, 8, 12]
    assert all(np.isfinite(trained.history["train_loss"]))
    assert trained.best_step == trained.history["step"][int(np.argmax(trained.history["validation_accuracy"]))]
    # the kept weights reproduce the best validation accuracy on the same validation episodes
    validation_rng = np.random.default_rng(np.random.SeedSequence(TINY.seed).spawn(3)[2])
    validation = sample_sequences(
        dataset.validation, TINY.validation_sequences, trained.encoder, validation_rng, dtype=torch.float32
    )
    assert training.accuracy(trained.model, validation) == max(trained.history["validation_accuracy"])


def test_adam_steps_fit_the_training_episodes(dataset):
    config = TrainingConfig(
        width=16,
        qk_width=8,
        batch_size=32,
        steps=150,
        validate_every=50,
        validation_sequences=64,
        learning_rate=3e-3,
    )
    result = training.fit(config, dataset, progress=False)
    # starting from MSE ~ 1 (outputs near 0), ten training classes are fitted well within 150 steps
    assert result.history["train_loss"][0] > 0.9
    assert result.history["train_loss"][-1] < 0.5 * result.history["train_loss"][0]


def test_save_and_load_round_trip(tmp_path, dataset, trained):
    path = tmp_path / "model.pt"
    training.save_trained(trained, str(path))
    loaded = training.load_trained(str(path))
    assert loaded.config == TINY and loaded.best_step == trained.best_step
    assert loaded.history == trained.history and loaded.data_parameters == {"source": "blobs"}
    # exact on any CPU: the saved numbers, read back
    np.testing.assert_array_equal(loaded.encoder.label_embedding, trained.encoder.label_embedding)
    seqs = sample_sequences(dataset.test, 20, trained.encoder, np.random.default_rng(1), dtype=torch.float32)
    torch.testing.assert_close(training.predict(loaded.model, seqs.x), training.predict(trained.model, seqs.x))
    torch.testing.assert_close(
        training.predict(loaded.model, seqs.x, drop_heads=[(1, 2)]),
        training.predict(trained.model, seqs.x, drop_heads=[(1, 2)]),
    )
    torch.save({"format": "something else"}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="path"):
        training.load_trained(str(tmp_path / "other.pt"))


def test_load_or_fit_trains_once(tmp_path, dataset, monkeypatch):
    first = training.load_or_fit(TINY, dataset, cache_dir=str(tmp_path), progress=False)
    path = training.model_cache_path(TINY, dataset, str(tmp_path))
    assert os.path.exists(path)

    def no_training(*args, **kwargs):
        raise AssertionError("load_or_fit retrained although a matching file exists")

    monkeypatch.setattr(training, "fit", no_training)
    second = training.load_or_fit(TINY, dataset, cache_dir=str(tmp_path), progress=False)
    assert torch.equal(first.model.readout, second.model.readout)  # exact on any CPU: read back from the file
    assert training.model_cache_path(TrainingConfig(**{**TINY.__dict__, "steps": 13}), dataset, "x") != path


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"width": 0}, "width"),
        ({"learning_rate": 0.0}, "learning_rate"),
        ({"seed": -2}, "seed"),
        ({"weight_decay": -1.0}, "weight_decay"),
    ],
)
def test_config_rejects_bad_values(kwargs, name):
    with pytest.raises(ValueError, match=name):
        TrainingConfig(**kwargs)


def test_fine_tuning_keeps_the_pruned_heads_pruned_and_trains_the_kept_ones(dataset, trained):
    before = {name: value.clone() for name, value in trained.model.state_dict().items()}
    pruned = [(1, 3), (0, 1)]
    tuned = training.fine_tune_pruned(trained, dataset.train, pruned, steps=6, rng=np.random.default_rng(3))
    assert tuned.pruned == ((0, 1), (1, 3)) and len(tuned.losses) == 6 and np.all(np.isfinite(tuned.losses))
    for name, value in trained.model.state_dict().items():
        assert torch.equal(value, before[name])  # the model it started from is not changed
    for name in ("queries", "keys", "values"):
        start, end = getattr(trained.model, name), getattr(tuned.model, name)
        for lh in pruned:
            # the pruned heads' weights are set back after every step (weight decay would move them)
            assert torch.equal(end[lh], start[lh])
        assert not torch.equal(end[0, 0], start[0, 0])  # a kept head is trained
    assert not torch.equal(tuned.model.readout, trained.model.readout)
    # with the heads dropped, the output does not depend on the pruned heads' weights at all
    x = sample_sequences(dataset.test, 20, trained.encoder, np.random.default_rng(4), dtype=torch.float32).x
    scrambled = copy.deepcopy(tuned.model)
    with torch.no_grad():
        for l, h in pruned:
            scrambled.values[l, h].normal_()
            scrambled.queries[l, h].normal_()
    out = training.predict(tuned.model, x, drop_heads=tuned.pruned)
    assert torch.equal(training.predict(scrambled, x, drop_heads=tuned.pruned), out)  # the pruned heads' outputs are 0
    # reproducible from the episodes' generator, and another generator gives another model
    again = training.fine_tune_pruned(trained, dataset.train, pruned, steps=6, rng=np.random.default_rng(3))
    assert all(torch.equal(a, b) for a, b in zip(again.model.parameters(), tuned.model.parameters()))
    other = training.fine_tune_pruned(trained, dataset.train, pruned, steps=6, rng=np.random.default_rng(5))
    assert not torch.equal(other.model.readout, tuned.model.readout)
    with pytest.raises(ValueError, match="at least one head"):
        training.fine_tune_pruned(
            trained, dataset.train, [(0, h) for h in range(4)], steps=1, rng=np.random.default_rng(0)
        )
    with pytest.raises(ValueError, match="steps"):
        training.fine_tune_pruned(trained, dataset.train, pruned, steps=0, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="rng"):
        training.fine_tune_pruned(trained, dataset.train, pruned, steps=1, rng=3)


def test_summary_gives_the_models_sizes_and_its_best_validation_under_the_chapters_names(trained):
    summary = trained.summary()
    encoder = trained.encoder
    assert summary == {
        "model_N": 8,
        "model_G": 4,
        "heads": 4,
        "paths": 16,  # 4 heads in each of 2 layers
        "train_steps": 12,
        "batch": 16,
        "best_step": trained.best_step,
        "best_val": 100 * max(trained.history["validation_accuracy"]),
        "patch": 8,
        "patches_per_image": 16,  # 32x32 images in 8x8 patches
        "N0": 64,
        "T": encoder.num_tokens,
    }
    assert encoder.num_tokens == 3 * 16  # two support images and a query
