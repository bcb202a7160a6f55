"""Training device option (CPU by default, CUDA on request, a clear error without a GPU), the 3-channel
token encoding, the one-shot chapter's ``full`` profile (resolved, then run at small sizes), and the
training benchmark."""

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from book_helpers import oneshot_training

from attnpaths.oneshot import training
from attnpaths.oneshot.imagesets import ImageClasses, ImageDataset
from attnpaths.oneshot.sequences import SequenceEncoder
from attnpaths.oneshot.training import AUTHORS_TRAINING, TrainingConfig
from attnpaths_book.benchmarks import training as bench
from attnpaths_book.benchmarks.record import read_record

ROOT = Path(__file__).resolve().parents[2]
TINY = TrainingConfig(width=8, qk_width=4, batch_size=16, steps=6, validate_every=3, validation_sequences=32)
CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (torch.cuda.is_available() is False)")


def random_classes(n_classes, seed, size=16):
    rng = np.random.default_rng(seed)
    images = rng.uniform(size=(n_classes, 4, size, size)).astype(np.float32)
    return ImageClasses(images, tuple(f"r{seed}-{k}" for k in range(n_classes)), ("random",) * n_classes)


@pytest.fixture(scope="module")
def dataset():
    return ImageDataset(random_classes(6, 0), random_classes(4, 1), random_classes(4, 2), parameters={"source": "r"})


def test_cpu_is_the_default_and_the_result_lives_on_the_cpu(dataset):
    default = training.fit(TINY, dataset, progress=False)
    explicit = training.fit(TINY, dataset, progress=False, device="cpu")
    for a, b in zip(default.model.parameters(), explicit.model.parameters()):
        assert a.device.type == "cpu" and torch.equal(a, b)  # determinism: the same training on the same device
    assert default.history == explicit.history  # determinism: as above


@pytest.mark.parametrize("call", ["fit", "load_or_fit"])
def test_cuda_without_a_gpu_is_a_clear_error(dataset, monkeypatch, tmp_path, call):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match=r"device='cuda'.*torch\.cuda\.is_available\(\) is False.*'cpu', 'cuda'"):
        if call == "fit":
            training.fit(TINY, dataset, progress=False, device="cuda")
        else:
            training.load_or_fit(TINY, dataset, progress=False, device="cuda", cache_dir=str(tmp_path))


@pytest.mark.parametrize("device", ["tpu", "mps", 3, "gpu"])
def test_unknown_devices_are_refused(dataset, device):
    with pytest.raises(ValueError, match=r"device must be one of \('cpu', 'cuda'\)"):
        training.fit(TINY, dataset, progress=False, device=device)


@CUDA
def test_cuda_training_agrees_with_cpu(dataset):
    config = replace(TINY, steps=10, validate_every=5)
    cpu = training.fit(config, dataset, progress=False, device="cpu")
    gpu = training.fit(config, dataset, progress=False, device="cuda")
    # same seed: same initial weights and batches, so only float32 rounding differs. Adam's step ~ lr * g / |g|
    # can turn a rounding difference of a near-zero gradient entry into up to 2 lr a step: that bounds the
    # largest difference, while the typical one stays at rounding level.
    for (name, a), b in zip(cpu.model.named_parameters(), gpu.model.parameters()):
        assert b.device.type == "cpu"
        difference = (a - b).abs()
        assert difference.max() <= 2 * config.learning_rate * config.steps, name
        assert difference.median() < 1e-5, name
    np.testing.assert_allclose(gpu.history["train_loss"], cpu.history["train_loss"], rtol=1e-3)
    x = torch.randn(8, cpu.encoder.input_width, cpu.encoder.num_tokens, generator=torch.Generator().manual_seed(0))
    on_gpu = cpu.model.to("cuda")
    torch.testing.assert_close(training.predict(on_gpu, x), training.predict(gpu.model, x), rtol=1e-3, atol=1e-4)


def test_three_channel_patches_repeat_every_pixel():
    rng = np.random.default_rng(0)
    one = SequenceEncoder.create(np.random.default_rng(1), patch_size=4, image_size=8)
    three = SequenceEncoder.create(np.random.default_rng(1), patch_size=4, image_size=8, channels=3)
    assert (one.input_width, three.input_width) == (16, 48) and three.num_tokens == one.num_tokens == 12
    images = rng.uniform(size=(2, 3, 8, 8))
    p1, p3 = one.patches(images), three.patches(images)
    # exact on any CPU: patches are copies of the pixels; channel fastest, as einops '(p1 p2 c)'
    assert np.array_equal(p3, np.repeat(p1, 3, axis=-1))
    # LayerNorm of three copies = three copies of the LayerNorm (position and label codes have 48 features)
    labels = np.tile([0, 1, 2], (2, 1))
    x = three.encode(images, labels)
    extra = three.positions()[None] + np.repeat(three.label_embedding[labels], three.patches_per_image, axis=1)
    normed = x.numpy().transpose(0, 2, 1) - extra
    assert np.allclose(normed[..., 0::3], normed[..., 1::3]) and np.allclose(normed[..., 0::3], normed[..., 2::3])
    assert SequenceEncoder.from_state(three.state()).channels == 3
    with pytest.raises(ValueError, match="channels must be an integer >= 1"):
        SequenceEncoder.create(rng, channels=0)


def test_cache_key_follows_the_channels_and_the_forward_revision(dataset, tmp_path, monkeypatch):
    # a model trained on other inputs, or with another evaluation order of the forward pass, is another model
    key = training.model_cache_path(TINY, dataset, str(tmp_path))
    assert key == training.model_cache_path(replace(TINY, channels=1), dataset, str(tmp_path))
    assert key != training.model_cache_path(replace(TINY, channels=3), dataset, str(tmp_path))
    monkeypatch.setattr(training, "FORWARD_REVISION", training.FORWARD_REVISION + 1)
    assert key != training.model_cache_path(TINY, dataset, str(tmp_path))


def oneshot_chapter():
    from attnpaths_book.chapters import book_chapters, find_chapter  # the book's tools: imported only here
    from attnpaths_book.layout import BookLayout

    return find_chapter(book_chapters(BookLayout(ROOT)), "oneshot")


def resolve_parameters(chapter, profile):
    from attnpaths_book.chapters import resolve_parameters as resolve

    return resolve(chapter, profile)


def test_full_profile_is_the_authors_run():
    params = resolve_parameters(oneshot_chapter(), "full")
    assert (params["model_width"], params["qk_width"], params["num_heads"], params["input_channels"]) == (
        512,
        128,
        4,
        3,
    )
    assert (params["image_size"], params["distortion_scale"], params["alphabets"]) == (32, 1.0, [])
    assert params["widths"] == [10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000]
    assert params["temperatures"] == [0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5]
    config = oneshot_training(params)
    assert config == AUTHORS_TRAINING
    assert AUTHORS_TRAINING.steps == 10 * 4124
    assert params["device"] == "cpu"  # the device is chosen with --set device=cuda


def test_full_profile_only_in_the_chapters_that_define_it():
    from attnpaths_book.chapters import book_chapters
    from attnpaths_book.layout import BookLayout

    chapters = [c for c in book_chapters(BookLayout(ROOT)) if c.is_notebook]
    without = [c for c in chapters if "full" not in c.profiles]
    assert without, "every chapter defines 'full': the book-wide error path is untested here"
    with pytest.raises(
        ValueError, match=r"profile 'full' is defined only by some chapters.*run CHAPTER --profile full"
    ):
        resolve_parameters(without[0], "full")
    for chapter in chapters:
        assert {"smoke", "paper"} <= set(chapter.profiles)


def test_full_profile_code_path_at_small_sizes(dataset):
    """The chapter's training and feature code with the full profile's settings, sizes overridden small."""
    from attnpaths.oneshot import episodes

    params = resolve_parameters(oneshot_chapter(), "full")
    config = TrainingConfig(
        width=16,
        qk_width=8,
        num_heads=params["num_heads"],
        channels=params["input_channels"],
        steps=4,
        batch_size=16,
        learning_rate=params["learning_rate"],
        validate_every=2,
        validation_sequences=32,
        seed=params["train_seed"],
    )
    trained = training.load_or_fit(config, dataset, cache_dir=None, progress=False, device=params["device"])
    assert (
        trained.encoder.input_width == 3 * trained.encoder.patch_size**2 == trained.model.hyperparameters["input_width"]
    )
    drawn = episodes.draw_episodes(dataset, trained.encoder, num_train=8, num_validation=8, num_test=8, seed=0)
    data = episodes.episode_features(drawn, trained.model.attention())
    assert np.isfinite(np.asarray(data.features)).all() and data.splits == ("validation", "test")
    assert training.accuracy(trained.model, drawn.test) >= 0


def test_benchmark_times_a_step_and_projects_the_run():
    config = replace(TINY, steps=100, validate_every=30)
    report = bench.time_training(config, steps=2, warmup=1, image_size=16)
    assert report["device"] == "cpu" and len(report["step_seconds"]) == 2 and report["num_validations"] == 4
    expected = 100 * report["median_step_s"] + 4 * report["validation_s"]
    assert report["projected_total_s"] == pytest.approx(expected)
    json.dumps(report)  # a record must be JSON


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_committed_benchmark_records_describe_the_authors_size(device):
    path = Path(bench.record_path(device))
    if not path.is_file():
        pytest.skip(f"no committed record {path.name}")
    record = read_record(path)
    report = record["report"]
    assert report["device"] == device and report["config"] == training.asdict(AUTHORS_TRAINING)
    assert (report["sizes"]["width"], report["sizes"]["input_width"], report["sizes"]["num_tokens"]) == (512, 192, 48)
    assert record["commit"] and report["num_threads"] >= 1
