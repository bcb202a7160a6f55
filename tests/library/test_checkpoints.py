"""Checkpoints of this machine's cache: saved with their SHA-256 beside them and refused when a byte changed, when the
checksum is missing or when ``torch.load`` cannot read them; a cache reader then makes what the file held again and
rewrites it, with one warning, instead of loading (and saving again) damaged weights."""

import types
import warnings
from pathlib import Path

import pytest
import torch
from helpers import flip_one_weight_bit

from attnpaths.checkpoints import (
    DamagedCacheWarning,
    checksum_path,
    file_sha256,
    load_checkpoint,
    read_cache,
    save_checkpoint,
)
from attnpaths.json_files import DamagedFile
from attnpaths.oneshot import training
from attnpaths.oneshot.training import TrainedModel, TrainingConfig

TINY = TrainingConfig(width=8, qk_width=4, batch_size=16, steps=12, validate_every=4, validation_sequences=64)
WEIGHT = 101.0  # the weight that helpers.flip_one_weight_bit turns into 101.125
"""101.0 as float32 (little-endian), and the bytes with one bit flipped: 101.125."""


def test_a_checkpoint_with_one_flipped_bit_is_refused_by_its_recorded_checksum(tmp_path):
    path = tmp_path / "w.pt"
    weights = torch.tensor([1.0, WEIGHT, 3.0])
    sha = save_checkpoint({"format": "x/1", "w": weights}, path)
    assert checksum_path(path).read_text() == f"{sha}  w.pt\n" and sha == file_sha256(path)
    assert torch.equal(load_checkpoint(path, format="x/1")["w"], weights)  # exact on any CPU: the bytes read back
    flip_one_weight_bit(path)
    assert torch.load(path, weights_only=True)["w"][1] == 101.125  # what reading it unchecked would give
    with pytest.raises(
        DamagedFile, match=r"SHA-256 [0-9a-f]{64} differs from the one recorded in w\.pt\.sha256"
    ) as err:
        load_checkpoint(path, format="x/1")
    assert err.value.path == path and str(path) in str(err.value)


def test_a_checkpoint_without_its_checksum_or_unreadable_is_refused_and_a_shipped_one_needs_none(tmp_path):
    path = tmp_path / "w.pt"
    sha = save_checkpoint({"w": torch.arange(3.0)}, path)
    beside = checksum_path(path)
    beside.unlink()
    with pytest.raises(DamagedFile, match=r"with its SHA-256 in w\.pt\.sha256 beside it; there is none"):
        load_checkpoint(path)
    # a shipped file: its expected SHA-256 comes from the manifest, and nothing lies beside it
    assert torch.equal(load_checkpoint(path, sha)["w"], torch.arange(3.0))
    beside.write_text("not a digest\n")
    with pytest.raises(DamagedFile, match=r"its checksum file w\.pt\.sha256 is damaged"):
        load_checkpoint(path)
    path.write_bytes(b"not a torch file")
    beside.write_text(f"{file_sha256(path)}  w.pt\n")
    with pytest.raises(DamagedFile, match="torch.load cannot read it"):
        load_checkpoint(path)


def test_the_same_payload_is_saved_to_the_same_bytes(tmp_path):
    payload = {"format": "x/1", "w": torch.arange(5.0), "history": [1, 2]}
    first, second = save_checkpoint(payload, tmp_path / "a.pt"), save_checkpoint(payload, tmp_path / "b.pt")
    assert first == second  # a cache file written again from the same weights keeps its SHA-256


def test_a_damaged_cache_file_reads_as_absent_with_one_warning(tmp_path, recwarn):
    path = tmp_path / "w.pt"
    assert read_cache(load_checkpoint, path, "test weights") is None and not recwarn.list  # no file: nothing to say
    save_checkpoint({"w": torch.tensor([WEIGHT])}, path)
    assert read_cache(load_checkpoint, path, "test weights")["w"].item() == 101.0
    flip_one_weight_bit(path)
    assert read_cache(load_checkpoint, path, "test weights") is None
    (warning,) = recwarn.list
    assert warning.category is DamagedCacheWarning
    message = str(warning.message)
    assert str(path) in message and "SHA-256" in message and "cached test weights is not used" in message
    save_checkpoint({"format": "y/1"}, path)
    with pytest.raises(ValueError, match="format must be 'x/1'"):  # not damage: passed on
        read_cache(lambda p: load_checkpoint(p, format="x/1"), path, "test weights")


def test_load_or_fit_trains_a_damaged_cached_model_again_and_rewrites_it(tmp_path, monkeypatch):
    """One-shot models cached by ``load_or_fit``, with the training replaced by a tiny one holding a weight of
    101.0: a flipped bit in the cache file is noticed, the model trained again and the file rewritten; the damaged
    weights are neither returned nor saved again."""
    dataset = types.SimpleNamespace(parameters={"source": "stub"})
    trainings = []

    def tiny_fit(config, data, *, progress=True, device="cpu"):
        trainings.append(config)
        model, encoder, _ = training.initial_model(config, 32)
        with torch.no_grad():
            model.readout[0] = WEIGHT
        return TrainedModel(model, encoder, config, dict(data.parameters), {"step": [config.steps]}, config.steps)

    monkeypatch.setattr(training, "fit", tiny_fit)
    cache = str(tmp_path)
    path = Path(training.model_cache_path(TINY, dataset, cache))
    first = training.load_or_fit(TINY, dataset, cache_dir=cache, progress=False)
    sha = file_sha256(path)
    assert len(trainings) == 1 and checksum_path(path).is_file()
    flip_one_weight_bit(path)
    with pytest.warns(DamagedCacheWarning, match="cached one-shot model is not used") as warned:
        again = training.load_or_fit(TINY, dataset, cache_dir=cache, progress=False)
    assert len(warned) == 1 and len(trainings) == 2
    assert again.model.readout[0].item() == 101.0 and torch.equal(again.model.readout, first.model.readout)
    assert file_sha256(path) == sha  # rewritten from the weights trained again: the first file's bytes
    with warnings.catch_warnings():
        warnings.simplefilter("error", DamagedCacheWarning)  # the rewritten file is sound
        third = training.load_or_fit(TINY, dataset, cache_dir=cache, progress=False)
    assert len(trainings) == 2 and third.model.readout[0].item() == 101.0
