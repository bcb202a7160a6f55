"""Trained weights that travel: checksummed files, the shipped weights of the book's chapters, retraining.

The chapters that train (oneshot, pruning) load the weights shipped in ``src/attnpaths_book/trained`` by
default; these tests check that every shipped file is what its manifest says (SHA-256), that the chapters'
smoke and paper parameters name shipped weights (a change of training parameters without shipping new weights
fails here, not silently on a reader's machine), that a damaged file is refused (a damaged cache file is trained
again, never loaded), that a manifest of the wrong shape is refused naming the key, that pruning models rebuilt
from their weights are the trained ones, and claim R with its power.
"""

import json
from dataclasses import asdict, replace

import numpy as np
import pytest
import torch
from book_helpers import oneshot_dataset, oneshot_training, pruning_training
from helpers import ROOT, flip_one_weight_bit

from attnpaths.checkpoints import DamagedCacheWarning, checksum_path, file_sha256, load_checkpoint, save_checkpoint
from attnpaths.claims import Outcome
from attnpaths.experiments.retraining import retraining_agreement, retraining_power, seed_spread
from attnpaths.json_files import DamagedFile
from attnpaths.oneshot.training import training_key
from attnpaths.pruning.digits import digit_patches, held_out_splits, train_test_split, train_validation_test_split
from attnpaths.pruning.sweep import base_accuracies, run_seed, training_seeds
from attnpaths.pruning.training import (
    ModelTraining,
    build_model,
    load_models,
    models_key,
    rebuild_model,
    save_models,
    train_model,
    trained_weights,
)
from attnpaths_book import trained as shipped
from attnpaths_book.chapters import find_chapter, resolve_parameters
from attnpaths_book.layout import BookLayout
from attnpaths_book.runner import notebook_chapters

LAYOUT = BookLayout(ROOT)
pytestmark = pytest.mark.cross_machine
CHAPTERS = notebook_chapters(LAYOUT)
MANIFEST = shipped.read_manifest()


# --------------------------------------------------------------------------------------------------- files


def test_a_checkpoint_is_read_only_with_its_checksum(tmp_path):
    path = tmp_path / "w.pt"
    sha = save_checkpoint({"format": "x/1", "w": torch.arange(4.0)}, path)
    assert sha == file_sha256(path) and len(sha) == 64
    # exact on any CPU: the saved bytes, read back
    assert torch.equal(load_checkpoint(path, sha, format="x/1")["w"], torch.arange(4.0))
    data = bytearray(path.read_bytes())
    data[-20] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="SHA-256"):
        load_checkpoint(path, sha)
    with pytest.raises(ValueError, match="sha256 must be 64"):
        load_checkpoint(path, "abc")
    save_checkpoint({"format": "y/1"}, path)
    with pytest.raises(ValueError, match="format must be 'x/1'"):
        load_checkpoint(path, format="x/1")
    with pytest.raises(ValueError, match="payload"):
        save_checkpoint([1], path)


def _entry(**changes) -> dict:
    """A manifest entry (as its JSON object) with ``changes``."""
    entry = shipped.ShippedFile("a.pt", "0" * 64, "pruning", "k", "a", "pruning", "smoke", "c", {}, {})
    return {**asdict(entry), **changes}


@pytest.mark.parametrize(
    "data, message",
    [
        ({"format": "other/1", "files": []}, r"key 'format' must be 'attnpaths\.book\.trained/1'"),
        ({"format": shipped.MANIFEST_FORMAT}, "key 'files' must be a JSON list of entries, found NoneType"),
        ({"format": shipped.MANIFEST_FORMAT, "files": {"a.pt": _entry()}}, "key 'files' must be a JSON list"),
        ({"format": shipped.MANIFEST_FORMAT, "files": [["a.pt"]]}, "entry 0 of 'files' must be a JSON object"),
        (
            {"format": shipped.MANIFEST_FORMAT, "files": [_entry(), {**_entry(sha256=1234)}]},
            "key 'sha256' of entry 1 of 'files' must be a JSON string, found int",
        ),
        (
            {"format": shipped.MANIFEST_FORMAT, "files": [_entry(sha256="ab" * 31)]},
            r"key 'sha256' of entry 0 of 'files' \('a\.pt'\) must be 64 lowercase hex digits",
        ),
        (
            {"format": shipped.MANIFEST_FORMAT, "files": [_entry(parameters=[])]},
            "key 'parameters' of entry 0 of 'files' must be a JSON object, found list",
        ),
        (
            {"format": shipped.MANIFEST_FORMAT, "files": [{k: v for k, v in _entry().items() if k != "key"}]},
            "entry 0 of 'files' lacks the key 'key'",
        ),
        (
            {"format": shipped.MANIFEST_FORMAT, "files": [_entry(size=3)]},
            "entry 0 of 'files' has the unknown key 'size'",
        ),
        ({"format": shipped.MANIFEST_FORMAT, "files": [_entry(kind="other")]}, "key 'kind' of entry 0 of 'files'"),
    ],
)
def test_a_manifest_of_the_wrong_shape_is_refused_naming_the_file_and_the_key(tmp_path, data, message):
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(data))
    with pytest.raises(DamagedFile, match=message) as err:
        shipped.read_manifest(tmp_path)
    assert err.value.path == path and str(err.value).startswith(f"{path}: ")


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_every_shipped_file_has_its_recorded_checksum_and_provenance(name):
    entry = MANIFEST[name]
    assert entry.path().is_file(), f"{name} is listed in the manifest but not shipped"
    assert file_sha256(entry.path()) == entry.sha256
    assert entry.kind in shipped.KINDS and entry.command.startswith(
        (
            "python -m attnpaths_book ship-weights",
            "attnpaths ship-weights",
            # the command's name before the companion
            # became a package of its own
            "python -m attnpaths ship-weights",
        )
    )
    machine = entry.provenance["machine"]
    assert machine["cpu_model"] and machine["cpu_capability"] and entry.provenance["commit"]


def test_no_unlisted_weight_file_is_shipped():
    files = {
        p.name for p in shipped.SHIPPED_DIR.glob("*.*") if p.suffix in (".pt", ".json") and p.name != "manifest.json"
    }
    assert files == set(MANIFEST)


# ------------------------------------------------------------------------------ the chapters' shipped weights


def _parameters(chapter: str, profile: str) -> dict:
    return resolve_parameters(find_chapter(CHAPTERS, chapter), profile)


def _pruning_chapter(profile: str):
    """The pruning chapter's training settings per architecture, its training and test images and its seeds in
    ``profile``."""
    p = _parameters("pruning", profile)
    data = digit_patches(p["patch_size"], p["positive_digits"])
    train, _, test = train_validation_test_split(data, p["num_test"], p["num_validation"], p["data_seed"])
    configs = {a: pruning_training(p, a) for a in p["architectures"]}
    return configs, train, test, training_seeds(p["seed"], p["num_seeds"])


@pytest.mark.parametrize("profile", ["smoke", "paper"])
def test_the_pruning_chapter_finds_shipped_models_for_its_profiles(profile):
    configs, train, _, seeds = _pruning_chapter(profile)
    for architecture, config in configs.items():
        weights, key, entry = shipped.pruning_weights(config, train, seeds, cache_dir="/nonexistent")
        assert entry is not None, (
            f"no shipped {architecture} models for the pruning chapter's {profile} profile: "
            f"python -m attnpaths_book ship-weights pruning --profile {profile}"
        )
        assert len(weights) == len(seeds) and entry.key == key and entry.profile == profile


@pytest.mark.usefixtures("long_computation")
def test_the_pruning_chapters_claim_r_holds_for_its_shipped_models_and_sees_worse_ones():
    configs, train, test, seeds = _pruning_chapter("smoke")
    config = configs["multihead"]
    weights, _, _ = shipped.pruning_weights(config, train, seeds)
    accuracy = base_accuracies(config, weights, test)
    arguments = dict(name="stack", claim="R", margin_sd=1.0, level=0.05, power_seed=0)
    same = shipped.pruning_claim_r(config, train, test, seeds, accuracy, **arguments)
    assert same["verdict"]["outcome"] == "holds" and same["power_at_3_margins"] > 0.5
    worse = shipped.pruning_claim_r(config, train, test, seeds, accuracy - 3 * accuracy.std(ddof=1), **arguments)
    assert worse["verdict"]["outcome"] == "contradicted"


@pytest.mark.parametrize("profile", ["smoke", "paper"])
def test_the_oneshot_chapter_finds_shipped_models_for_its_profiles(profile):
    p = _parameters("oneshot", profile)
    dataset = oneshot_dataset(p)
    config = oneshot_training(p)
    for seed in [p["train_seed"], *p["retrain_seeds"]]:
        entry = shipped.find_shipped("oneshot", training_key(replace(config, seed=seed), dataset))
        assert entry is not None, (
            f"no shipped one-shot model of seed {seed} for the {profile} profile: "
            f"python -m attnpaths_book ship-weights oneshot --profile {profile}"
        )
    trained, source = shipped.oneshot_model(config, dataset, cache_dir="/nonexistent")
    assert source.source == "shipped" and trained.config == config


# ------------------------------------------------------------------------------- pruning weights and shipping


@pytest.fixture(scope="module")
def small_split():
    return train_test_split(digit_patches(4, positive_digits=(0,)), 300, np.random.default_rng(0))


@pytest.mark.parametrize("architecture", ["multihead", "sum_heads"])
def test_a_model_rebuilt_from_its_weights_is_the_trained_model(tmp_path, small_split, architecture):
    train, test = small_split
    config = ModelTraining(architecture=architecture, width=8, qk_width=4, num_heads=2, steps=30, batch_size=32)
    model, history = train_model(config, train, 5)
    weights = trained_weights(model, history)
    key = models_key(config, train, [5])
    sha = save_models(tmp_path / "m.pt", config, key, [weights])
    (loaded,) = load_models(tmp_path / "m.pt", key, sha)
    rebuilt = rebuild_model(config, train.input_width, loaded)
    with torch.no_grad():
        assert torch.equal(rebuilt(test.x), model(test.x))  # determinism: the same module code on the same weights
    np.testing.assert_array_equal(loaded.loss, history["loss"])  # exact on any CPU: the saved numbers, read back
    with pytest.raises(ValueError, match="holds the models of key"):
        load_models(tmp_path / "m.pt", models_key(replace(config, steps=31), train, [5]))
    assert models_key(config, train, [6]) != key


def test_a_sweep_task_given_weights_reproduces_the_task_that_trained_them(small_split):
    train, held_out = small_split
    training = ModelTraining(width=8, num_heads=2, steps=20, batch_size=32)
    arguments = dict(
        seed=3,
        train=train,
        held_out=held_out,
        validation_masks=held_out_splits(len(held_out), 100, 1, 2),
        training=training,
        theory_width=10,
        theory_examples=60,
        temperatures=[0.1, 1.0],
    )
    trained = run_seed(1, **arguments)
    again = run_seed(1, weights=trained["weights"], **arguments)
    for split in ("validation", "test"):  # determinism: the same task on the weights it trained itself
        np.testing.assert_array_equal(again["curves"][split], trained["curves"][split])
    assert again["train_loss"] == trained["train_loss"]  # determinism: as above


def test_shipping_copies_the_retrained_models_and_replaces_the_profiles_earlier_files(tmp_path, small_split):
    train, _ = small_split
    config = ModelTraining(width=8, num_heads=2, steps=10, batch_size=16)
    model, history = train_model(config, train, 1)
    key = models_key(config, train, [1])
    cache = tmp_path / "cache"
    source = shipped.pruning_source(
        config, key, [trained_weights(model, history)], shipped=None, retrain=True, cache_dir=cache
    )
    folder = tmp_path / "shipped"
    folder.mkdir()
    (folder / "pruning-smoke-old.pt").write_bytes(b"old")
    shipped.write_manifest(
        {
            "pruning-smoke-old.pt": shipped.ShippedFile(
                "pruning-smoke-old.pt", "0" * 64, "pruning", "k", "old", "pruning", "smoke", "c", {}, {}
            )
        },
        folder,
    )
    (entry,) = shipped.ship(
        [source.to_dict()], chapter="pruning", profile="smoke", command="c", parameters={}, provenance={}, folder=folder
    )
    assert set(shipped.read_manifest(folder)) == {entry.name} and not (folder / "pruning-smoke-old.pt").exists()
    weights, found_key, found = shipped.pruning_weights(config, train, [1], cache_dir=tmp_path / "none", folder=folder)
    assert found == entry and found_key == key and len(weights) == 1
    not_retrained = {**source.to_dict(), "source": "shipped"}
    with pytest.raises(ValueError, match="retrain=True"):
        shipped.ship(
            [not_retrained],
            chapter="pruning",
            profile="smoke",
            command="c",
            parameters={},
            provenance={},
            folder=folder,
        )


def test_a_damaged_cache_of_pruning_models_is_trained_again_and_never_saved_again(tmp_path, small_split):
    """Models of no shipped file, cached by ``pruning_source``: one bit flipped in the cache file (a weight of 101.0
    read as 101.125), ``pruning_weights`` reports it once and answers "to be trained" instead of the damaged
    weights; the models trained again are written in its place, and read back."""
    train, _ = small_split
    config = ModelTraining(width=8, num_heads=2, steps=10, batch_size=16)
    model = build_model(config, train.input_width, torch.Generator().manual_seed(0))
    with torch.no_grad():
        next(model.parameters()).view(-1)[0] = 101.0
    weights = [trained_weights(model, {"loss": np.zeros(10, dtype=np.float32)})]
    key, cache, folder = models_key(config, train, [1]), tmp_path / "cache", tmp_path / "shipped"
    folder.mkdir()  # no manifest: nothing shipped
    arguments = dict(cache_dir=cache, folder=folder)
    source = shipped.pruning_source(config, key, weights, shipped=None, retrain=False, **arguments)
    path = shipped.pruning_cache_path(key, cache)
    (loaded,), _, _ = shipped.pruning_weights(config, train, [1], **arguments)
    assert next(iter(loaded.state.values())).view(-1)[0].item() == 101.0
    flip_one_weight_bit(path)
    damaged = path.read_bytes()
    with pytest.warns(DamagedCacheWarning, match=r"pruning-models-.*SHA-256.*cached pruning models is not used"):
        found, found_key, entry = shipped.pruning_weights(config, train, [1], **arguments)
    assert found is None and found_key == key and entry is None
    assert path.read_bytes() == damaged  # reading it wrote nothing: no damaged weights saved again
    again = shipped.pruning_source(config, key, weights, shipped=None, retrain=False, **arguments)
    assert again.sha256 == source.sha256 == file_sha256(path) and checksum_path(path).read_text().startswith(
        again.sha256
    )
    (loaded,), _, _ = shipped.pruning_weights(config, train, [1], **arguments)
    assert next(iter(loaded.state.values())).view(-1)[0].item() == 101.0


# ------------------------------------------------------------------------------------------------- claim R


def test_claim_r_holds_for_identical_and_for_equally_good_models_and_is_contradicted_for_worse_ones():
    rng = np.random.default_rng(0)
    shipped_acc = 0.8 + 0.02 * rng.standard_normal(20)
    same = retraining_agreement("R", shipped=shipped_acc, retrained=shipped_acc, statistic="acc")
    assert same.outcome is Outcome.HOLDS and same.level is None
    redrawn = retraining_agreement(
        "R",
        shipped=shipped_acc,
        retrained=0.8 + 0.02 * rng.standard_normal(20),
        statistic="acc",
        margin_sd=1.0,
        level=0.05,
    )
    assert redrawn.outcome is Outcome.HOLDS and redrawn.level == 0.05
    worse_acc = shipped_acc - 0.08 + 0.02 * rng.standard_normal(20)
    worse = retraining_agreement(
        "R", shipped=shipped_acc, retrained=worse_acc, statistic="acc", margin_sd=1.0, level=0.05
    )
    assert worse.outcome is Outcome.CONTRADICTED  # 4 sd worse: another training, not another rounding
    assert seed_spread(shipped_acc) == pytest.approx(np.std(shipped_acc, ddof=1))
    flat = retraining_agreement("R", shipped=[0.8, 0.8], retrained=[0.8, 0.81], statistic="acc")
    assert flat.outcome is Outcome.CONTRADICTED
    with pytest.raises(ValueError, match="retrained must have the shape"):
        retraining_agreement("R", shipped=[0.8, 0.7], retrained=[0.8], statistic="acc")
    with pytest.raises(ValueError, match="at least 2 seeds"):
        retraining_agreement("R", shipped=[0.8], retrained=[0.8], statistic="acc")


def test_claim_r_has_power_against_a_shift_and_rarely_rejects_a_correct_retraining():
    power = retraining_power(20, shift_sd=3.0, margin_sd=1.0, level=0.05, draws=400, rng=np.random.default_rng(1))
    assert power["contradicted"] > 0.9
    null = retraining_power(20, shift_sd=0.0, margin_sd=1.0, level=0.05, draws=400, rng=np.random.default_rng(2))
    assert null["contradicted"] < 0.02 and null["holds"] > 0.5
    few = retraining_power(5, shift_sd=0.0, margin_sd=2.0, level=0.05, draws=400, rng=np.random.default_rng(3))
    assert few["contradicted"] < 0.02
