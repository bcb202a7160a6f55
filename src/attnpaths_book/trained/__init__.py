"""The trained weights that the book ships, and how a chapter gets its trained models (sec-repro-classes).

Gradient-descent training in float32 is chaotic at the level of rounding: trained again on another CPU (another
instruction set of torch's kernels), in another process or with another memory layout, the same seed ends at
another model, and every number computed from that model moves by the spread between training runs, not by
rounding. The chapters that train (``oneshot``, ``pruning``) therefore load the weights shipped in this folder
by default, so that everything downstream of the model is a float64 computation from fixed inputs.

``manifest.json`` lists each shipped file: its SHA-256 (checked on every load), the key of what it holds
(:func:`attnpaths.oneshot.training.training_key`, ``attnpaths.pruning.training.models_key``: training
settings, data and seeds), the chapter and profile that trained it, the command, the parameters and the machine.
``python -m attnpaths_book ship-weights CHAPTER --profile P`` makes them: it runs the chapter with ``retrain=True``
and copies the models it trained here.

How a chapter gets a model (:class:`ModelSource`): ``"shipped"`` (this folder), ``"retrained"`` (trained
afresh because the chapter's ``retrain`` parameter asks for it), ``"trained"`` (no shipped weights hold the
chapter's parameters: trained on this machine, cached under ``_build/cache``). The chapter says which.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import get_type_hints

import numpy as np

from attnpaths.checkpoints import file_sha256, is_sha256, read_cache, read_checked, write_checked
from attnpaths.experiments.retraining import retraining_agreement, retraining_power
from attnpaths.json_files import DamagedFile, read_json
from attnpaths.oneshot.training import (
    TrainedModel,
    TrainingConfig,
    fit,
    fit_seeds,
    load_or_fit,
    load_trained,
    model_cache_path,
    save_trained,
    split_accuracy,
    training_key,
)
from attnpaths.pruning.sweep import base_accuracies
from attnpaths.pruning.training import load_models, models_key, save_models
from attnpaths_book.results import atomic_write_text

SHIPPED_DIR = Path(__file__).resolve().parent
"""The folder of the shipped weight files and of ``manifest.json``."""

MANIFEST_FORMAT = "attnpaths.book.trained/1"  # a format name, kept when the module moved
"""The ``format`` entry of ``manifest.json``."""

KINDS = ("oneshot", "pruning", "computation")
"""The kinds of shipped files, by what they hold, a one-shot model (:func:`~attnpaths.oneshot.training.save_trained`),
the models of a pruning sweep (``attnpaths.pruning.training.save_models``) or the numbers of an expensive
computation, as JSON (:func:`computed_numbers`: posterior samples and scans that would take minutes in every run)."""

SOURCES = ("shipped", "retrained", "trained")
"""Where a chapter's model came from (see the module docstring)."""


@dataclass(frozen=True)
class ShippedFile:
    """One entry of ``manifest.json``.

    Attributes:
        name: the file's name in :data:`SHIPPED_DIR`.
        sha256: its SHA-256 (64 hex digits).
        kind: one of :data:`KINDS`.
        key: the key of what it holds (training settings, data, seeds).
        label: what it holds in words (e.g. ``"seed 42"``, ``"multihead, 20 seeds"``).
        chapter, profile: the chapter and profile whose run trained it.
        command: the command that made it.
        parameters: the chapter's parameters in that run.
        provenance: commit, versions and machine of that run (``attnpaths_book.provenance.collect``) and the time.
    """

    name: str
    sha256: str
    kind: str
    key: str
    label: str
    chapter: str
    profile: str
    command: str
    parameters: dict
    provenance: dict

    def path(self, folder=SHIPPED_DIR) -> Path:
        """The file in ``folder``."""
        return Path(folder) / self.name


_ENTRY_TYPES = get_type_hints(ShippedFile)
"""The JSON type of each key of a manifest entry (the annotations of :class:`ShippedFile`)."""


def _manifest_entry(path: Path, index: int, entry) -> ShippedFile:
    """Entry ``index`` of the manifest at ``path``, or ``attnpaths.json_files.DamagedFile`` naming the file,
    the entry and the key that is missing, unknown or of the wrong type."""
    where = f"entry {index} of 'files'"
    if not isinstance(entry, dict):
        raise DamagedFile(path, f"{where} must be a JSON object, found {type(entry).__name__}")
    keys = set(_ENTRY_TYPES)
    if set(entry) != keys:
        missing, unknown = sorted(keys - set(entry)), sorted(set(entry) - keys)
        wrong = f"lacks the key {missing[0]!r}" if missing else f"has the unknown key {unknown[0]!r}"
        raise DamagedFile(path, f"{where} {wrong} (an entry holds exactly {sorted(keys)})")
    for key, kind in _ENTRY_TYPES.items():
        if not isinstance(entry[key], kind):
            raise DamagedFile(
                path,
                f"key {key!r} of {where} must be a JSON {'object' if kind is dict else 'string'}, found "
                f"{type(entry[key]).__name__}",
            )
    name = entry["name"]
    sha = entry["sha256"]
    if not is_sha256(sha):
        raise DamagedFile(path, f"key 'sha256' of {where} ({name!r}) must be 64 lowercase hex digits, got {sha!r}")
    if entry["kind"] not in KINDS:
        raise DamagedFile(path, f"key 'kind' of {where} ({name!r}) must be one of {KINDS}, got {entry['kind']!r}")
    return ShippedFile(**entry)


def read_manifest(folder=SHIPPED_DIR) -> dict[str, ShippedFile]:
    """The entries of ``folder/manifest.json`` by file name (empty when there is no manifest).

    Raises:
        ValueError: ``attnpaths.json_files.DamagedFile`` (a subclass) when the manifest is not JSON, or JSON of
            another shape: a ``format`` other than :data:`MANIFEST_FORMAT`, no list ``files``, an entry that is not
            an object, lacks a key of :class:`ShippedFile` or has another, or holds a value of the wrong type
            (naming the file, the entry and the key)."""
    path = Path(folder) / "manifest.json"
    if not path.is_file():
        return {}
    data = read_json(path, "manifest of the shipped weights")
    if data.get("format") != MANIFEST_FORMAT:
        raise DamagedFile(path, f"key 'format' must be {MANIFEST_FORMAT!r}, got {data.get('format')!r}")
    files = data.get("files")
    if not isinstance(files, list):
        raise DamagedFile(path, f"key 'files' must be a JSON list of entries, found {type(files).__name__}")
    entries = [_manifest_entry(path, index, entry) for index, entry in enumerate(files)]
    return {entry.name: entry for entry in entries}


def write_manifest(entries: dict[str, ShippedFile], folder=SHIPPED_DIR) -> Path:
    """Write ``folder/manifest.json`` with ``entries`` (sorted by name)."""
    data = {"format": MANIFEST_FORMAT, "files": [asdict(entries[name]) for name in sorted(entries)]}
    return atomic_write_text(Path(folder) / "manifest.json", json.dumps(data, indent=1, sort_keys=True) + "\n")


def find_shipped(kind: str, key: str, folder=SHIPPED_DIR) -> ShippedFile | None:
    """The shipped file of ``kind`` holding ``key``, or ``None``."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    found = [e for e in read_manifest(folder).values() if e.kind == kind and e.key == key]
    return found[0] if found else None


@dataclass(frozen=True)
class ModelSource:
    """Where a chapter's trained model came from.

    Attributes:
        kind: one of :data:`KINDS`; key: its training key.
        source: one of :data:`SOURCES`.
        file: the shipped file's name (in :data:`SHIPPED_DIR`), or the cache file the model was saved to,
            relative to the working directory where it lies below it (names that do not depend on where the
            checkout lies).
        sha256: the file's SHA-256.
        label: what it holds in words.
    """

    kind: str
    key: str
    source: str
    file: str
    sha256: str
    label: str

    def to_dict(self) -> dict:
        """The fields as a dict (for a results file)."""
        return asdict(self)


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def oneshot_model(
    config: TrainingConfig,
    dataset,
    *,
    retrain: bool = False,
    device="cpu",
    cache_dir="_build/cache",
    folder=SHIPPED_DIR,
) -> tuple[TrainedModel, ModelSource]:
    """The one-shot model of ``config`` trained on ``dataset``, and where it came from.

    Shipped weights of the same :func:`~attnpaths.oneshot.training.training_key` are loaded (SHA-256 checked)
    unless ``retrain``; with ``retrain`` the model is trained afresh on ``device`` and saved to this machine's
    cache ``cache_dir`` (from where ``ship-weights`` takes it); without shipped weights it comes from that cache
    or is trained and cached (:func:`~attnpaths.oneshot.training.load_or_fit`).
    """
    key = training_key(config, dataset)
    label = f"seed {config.seed}"
    shipped = None if retrain else find_shipped("oneshot", key, folder)
    if shipped is not None:
        path = shipped.path(folder)
        return load_trained(str(path), shipped.sha256), ModelSource(
            "oneshot", key, "shipped", shipped.name, shipped.sha256, label
        )
    path = Path(model_cache_path(config, dataset, str(cache_dir)))
    if retrain:
        trained = fit(config, dataset, progress=False, device=device)
        save_trained(trained, str(path))
    else:
        trained = load_or_fit(config, dataset, cache_dir=str(cache_dir), progress=False, device=device)
    return trained, ModelSource(
        "oneshot", key, "retrained" if retrain else "trained", _shown(path), file_sha256(path), label
    )


def computation_key(parameters: dict) -> str:
    """The key of a computation: the SHA-256 of its parameters as canonical JSON (sorted keys)."""
    return hashlib.sha256(json.dumps(parameters, sort_keys=True, default=str).encode()).hexdigest()


def _read_numbers(path: Path, sha256: str | None = None) -> dict:
    """The numbers of a computation's JSON file, its SHA-256 checked (``DamagedFile`` naming the file)."""
    try:
        data = json.loads(read_checked(path, sha256))
    except json.JSONDecodeError as err:
        raise DamagedFile(path, f"not JSON ({err})") from err
    if not isinstance(data, dict) or not isinstance(data.get("numbers"), dict):
        raise DamagedFile(path, "a computation's file holds a JSON object with the object 'numbers'")
    return data["numbers"]


def computed_numbers(
    key: str, label: str, compute, *, retrain: bool = False, cache_dir="_build/cache", folder=SHIPPED_DIR
) -> tuple[dict, ModelSource]:
    """The numbers of an expensive computation (a JSON object), and where they came from, like a trained model's:
    the shipped file of ``key`` (kind ``"computation"``, SHA-256 checked) unless ``retrain``; else this
    machine's cache, or ``compute()`` run now and cached (from where ``ship-weights`` takes it).

    Floats round-trip through JSON exactly (shortest repr), so shipped numbers are the computed ones, bit for bit.

    Args:
        key: :func:`computation_key` of everything the numbers depend on; label: what they are, in words.
        compute: ``() -> dict`` of JSON-serialisable numbers.
    """
    shipped = None if retrain else find_shipped("computation", key, folder)
    if shipped is not None:
        numbers = _read_numbers(shipped.path(folder), shipped.sha256)
        return numbers, ModelSource("computation", key, "shipped", shipped.name, shipped.sha256, label)
    path = Path(cache_dir) / f"computation-{key[:16]}.json"
    numbers = None if retrain else read_cache(_read_numbers, path, label)
    if numbers is None:
        numbers = compute()
        write_checked((json.dumps({"key": key, "numbers": numbers}, sort_keys=True) + "\n").encode(), path)
    source = "retrained" if retrain else "trained"
    return numbers, ModelSource("computation", key, source, _shown(path), file_sha256(path), label)


def retrained_oneshot_models(
    config: TrainingConfig, dataset, seeds, *, device="cpu", cache_dir="_build/cache"
) -> list[tuple[TrainedModel, ModelSource]]:
    """The one-shot models of ``config`` trained afresh from each training seed of ``seeds``
    (:func:`~attnpaths.oneshot.training.fit_seeds`, one engine task each), each saved to this machine's cache
    ``cache_dir`` (from where ``ship-weights`` takes them), with their :class:`ModelSource` ``"retrained"``."""
    out = []
    for trained in fit_seeds(config, dataset, seeds, device=device, progress=False):
        path = Path(model_cache_path(trained.config, dataset, str(cache_dir)))
        sha256, key = save_trained(trained, str(path)), training_key(trained.config, dataset)
        out.append(
            (trained, ModelSource("oneshot", key, "retrained", _shown(path), sha256, f"seed {trained.config.seed}"))
        )
    return out


def shipped_oneshot_models(config: TrainingConfig, dataset, seeds, folder=SHIPPED_DIR) -> list[TrainedModel] | None:
    """The shipped one-shot models of ``config`` at each training seed of ``seeds`` (SHA-256 checked), or
    ``None`` when one of them is not shipped."""
    models = []
    for seed in seeds:
        shipped = find_shipped("oneshot", training_key(replace(config, seed=int(seed)), dataset), folder)
        if shipped is None:
            return None
        models.append(load_trained(str(shipped.path(folder)), shipped.sha256))
    return models


def oneshot_claim_r(
    trained: TrainedModel,
    source: ModelSource,
    dataset,
    *,
    seeds,
    num_test: int,
    episode_seed: int,
    margin_sd: float,
    level: float,
    device="cpu",
) -> tuple[list, dict]:
    """Claim R of the one-shot chapter for a run with ``retrain = True``: trains the models of the extra training
    ``seeds`` afresh (:func:`retrained_oneshot_models`), measures every retrained and shipped model's accuracy on
    ``num_test`` test episodes (:func:`~attnpaths.oneshot.training.split_accuracy`, episodes from
    ``episode_seed``) and tests them (``attnpaths.experiments.retraining.retraining_agreement``, with its power at a
    shift of three margins).

    Args:
        trained, source: the chapter's retrained model (its training seed first) and where it came from.

    Returns:
        ``(sources, result)``: the :class:`ModelSource` of every retrained model, and ``{"seeds",
        "shipped_accuracy", "retrained_accuracy", "verdict" (a dict), "power_at_3_margins"}``, or ``{}`` when
        no shipped models of these seeds exist.
    """
    config = trained.config
    extra = retrained_oneshot_models(config, dataset, seeds, device=device)
    sources = [source, *[s for _, s in extra]]
    all_seeds = [config.seed, *[int(s) for s in seeds]]
    shipped = shipped_oneshot_models(config, dataset, all_seeds)
    if shipped is None:
        return sources, {}
    models = {"shipped": shipped, "retrained": [trained, *[m for m, _ in extra]]}
    accuracy = {
        name: np.array([split_accuracy(m, dataset.test, num_test, episode_seed) for m in group])
        for name, group in models.items()
    }
    options = dict(statistic="GD test accuracy", what="the one-shot models", margin_sd=margin_sd, level=level)
    return sources, {
        "seeds": all_seeds,
        **_claim_r("R", accuracy["shipped"], accuracy["retrained"], config.seed, **options),
    }


def _claim_r(claim: str, shipped, retrained, power_seed: int, **options) -> dict:
    """Claim R on the accuracies of the ``shipped`` and ``retrained`` models of the same seeds
    (``attnpaths.experiments.retraining.retraining_agreement`` with ``options``), and its power at three margins."""
    verdict = retraining_agreement(claim, shipped=shipped, retrained=retrained, **options)
    margin_sd, level, rng = options["margin_sd"], options["level"], np.random.default_rng(power_seed)
    power = retraining_power(len(shipped), shift_sd=3 * margin_sd, margin_sd=margin_sd, level=level, rng=rng)
    return {
        "shipped_accuracy": shipped,
        "retrained_accuracy": np.asarray(retrained),
        "verdict": verdict.to_dict(),
        "power_at_3_margins": power["contradicted"],
    }


def pruning_claim_r(
    config,
    train,
    test,
    seeds,
    retrained_accuracy,
    *,
    name: str,
    claim: str,
    margin_sd: float,
    level: float,
    power_seed: int,
) -> dict:
    """Claim R of the pruning chapter for one architecture in a run with ``retrain = True``: the retrained models'
    test accuracy ``retrained_accuracy`` ``[S]`` against the shipped models of the same ``seeds`` (config
    ``config``, training images ``train``, test images ``test``), with its power at a shift of three margins.

    Returns:
        ``{"shipped_accuracy", "retrained_accuracy", "verdict" (a dict), "power_at_3_margins"}``, or ``{}`` when
        no shipped models of these seeds exist.
    """
    weights, _, shipped = pruning_weights(config, train, seeds)
    if shipped is None:
        return {}
    options = dict(statistic="test accuracy", what=f"the {name} models", margin_sd=margin_sd, level=level)
    return _claim_r(claim, base_accuracies(config, weights, test), retrained_accuracy, power_seed, **options)


def pruning_cache_path(key: str, cache_dir) -> Path:
    """This machine's file of the pruning models of ``key``."""
    return Path(cache_dir) / f"pruning-models-{key[:16]}.pt"


def pruning_weights(config, train, seeds, *, retrain: bool = False, cache_dir="_build/cache", folder=SHIPPED_DIR):
    """The trained weights of a pruning sweep's seeds (``config``: its ``attnpaths.pruning.training.ModelTraining``;
    ``train``: its training images; ``seeds``: its training seeds), or ``None`` when they are to be trained.

    Returns:
        ``(weights, key, shipped)``: ``weights`` a list of ``attnpaths.pruning.training.TrainedWeights``
        (one per seed of ``seeds``) from the shipped file or this machine's cache (SHA-256 checked: a damaged cache
        file counts as none, with an ``attnpaths.checkpoints.DamagedCacheWarning``), or ``None`` with ``retrain``
        or when neither holds them; ``key`` their ``attnpaths.pruning.training.models_key``;
        ``shipped`` the :class:`ShippedFile` they came from, or ``None``.
    """
    key = models_key(config, train, seeds)
    if retrain:
        return None, key, None
    shipped = find_shipped("pruning", key, folder)
    if shipped is not None:
        return load_models(shipped.path(folder), key, shipped.sha256), key, shipped
    path = pruning_cache_path(key, cache_dir)
    return read_cache(lambda p: load_models(p, key), path, "pruning models"), key, None


def pruning_source(
    config,
    key: str,
    weights,
    *,
    shipped: ShippedFile | None,
    retrain: bool,
    cache_dir="_build/cache",
    folder=SHIPPED_DIR,
) -> ModelSource:
    """Where a sweep's models (of ``config``, an ``attnpaths.pruning.training.ModelTraining``) came from; models
    that were not shipped are saved to ``cache_dir`` first (from where ``ship-weights`` takes them, and the next run
    loads them)."""
    label = f"{config.architecture}, {len(weights)} seeds"
    if shipped is not None:
        return ModelSource("pruning", key, "shipped", shipped.name, shipped.sha256, label)
    path = pruning_cache_path(key, cache_dir)
    sha256 = save_models(path, config, key, weights)
    return ModelSource("pruning", key, "retrained" if retrain else "trained", _shown(path), sha256, label)


def source_sentence(sources) -> str:
    """One paragraph saying where a chapter's trained models came from (a list of :class:`ModelSource`)."""
    parts = []
    for source in sources:
        if source.source == "shipped":
            parts.append(
                f"{source.label}: the shipped weights `{source.file}` (SHA-256 "
                f"`{source.sha256[:12]}...`, checked when loaded)"
            )
        elif source.source == "retrained":
            parts.append(f"{source.label}: trained afresh in this run (`retrain = True`)")
        else:
            parts.append(
                f"{source.label}: trained on this machine, since no shipped weights hold these parameters "
                f"(cached in `{source.file}`)"
            )
    shipped = all(s.source == "shipped" for s in sources)
    tail = (
        " Everything computed from them starts from fixed inputs: another machine reproduces the float64 "
        "computations within rounding and the float32 network's accuracies within an episode."
        if shipped
        else " Trained elsewhere, the same settings give other models: their numbers agree with the shipped "
        "models' only within the spread between training seeds."
    )
    return "Trained models: " + "; ".join(parts) + "." + tail


def retraining_sentence(results: dict, *, retrain: bool, chapter: str) -> str:
    """The outcome of claim R per model kind (``{name: {"verdict": Verdict dict, "power_at_3_margins": p}}``),
    or why it was not tested (``chapter``: the chapter's name, for the command that tests it)."""
    if not retrain:
        return (
            f"This run used the shipped weights, so claim R was not tested; `python -m attnpaths_book run {chapter} "
            "--set retrain=True` tests it."
        )
    if not results:
        return "This run retrained the models, but no shipped weights hold its parameters: claim R was not tested."
    sentences = []
    for name, result in results.items():
        verdict = result["verdict"]
        sentences.append(
            f"{name}: claim {verdict['claim']} {verdict['outcome']}. {verdict['measured']} "
            f"Power: a retrained set three margins off is contradicted with probability "
            f"{result['power_at_3_margins']:.2f}."
        )
    return " ".join(sentences)


def ship(
    sources, *, chapter: str, profile: str, command: str, parameters: dict, provenance: dict, folder=SHIPPED_DIR
) -> list[ShippedFile]:
    """Copy the models a chapter's run trained (its :class:`ModelSource` dicts, source ``"retrained"``) into
    ``folder`` as ``<chapter>-<profile>-<kind>-<key[:12]>.pt`` and list them in its manifest, in place of every
    earlier file of the same chapter and profile. Raises ``ValueError`` for a model that was not trained by the
    run or whose file no longer has the recorded SHA-256."""
    entries = read_manifest(folder)
    for name, entry in list(entries.items()):  # the run retrained every model of the chapter's profile
        if entry.chapter == chapter and entry.profile == profile:
            entry.path(folder).unlink(missing_ok=True)
            del entries[name]
    added = []
    for item in sources:
        source = ModelSource(**item)
        if source.source != "retrained":
            raise ValueError(
                f"sources must be models the run trained afresh (source 'retrained'), got "
                f"{source.source!r} for {source.label}: run the chapter with retrain=True"
            )
        origin = Path(source.file)
        if file_sha256(origin) != source.sha256:
            raise ValueError(f"{origin} changed since the run recorded it (SHA-256 differs): run the chapter again")
        name = f"{chapter}-{profile}-{source.kind}-{source.key[:12]}{origin.suffix or '.pt'}"
        shutil.copyfile(origin, Path(folder) / name)
        entry = ShippedFile(
            name=name,
            sha256=source.sha256,
            kind=source.kind,
            key=source.key,
            label=source.label,
            chapter=chapter,
            profile=profile,
            command=command,
            parameters=parameters,
            provenance=provenance,
        )
        entries[name] = entry
        added.append(entry)
    write_manifest(entries, folder)
    return added


__all__ = [
    "KINDS",
    "MANIFEST_FORMAT",
    "ModelSource",
    "SHIPPED_DIR",
    "SOURCES",
    "ShippedFile",
    "computation_key",
    "computed_numbers",
    "find_shipped",
    "oneshot_claim_r",
    "oneshot_model",
    "pruning_claim_r",
    "pruning_cache_path",
    "pruning_source",
    "pruning_weights",
    "read_manifest",
    "retrained_oneshot_models",
    "retraining_sentence",
    "ship",
    "shipped_oneshot_models",
    "source_sentence",
    "write_manifest",
]
