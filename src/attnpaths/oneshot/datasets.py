"""Image classes for the one-shot task (sec-oneshot-data): the rendered Omniglot-like set, cached, or real Omniglot.

Omniglot cannot be downloaded here, so the default source draws an Omniglot-like set offline: every
character of ``glyphs.character_table`` is a class, and each of its instances gets its own font face
(style), scale, aspect, rotation, shear, shift, elastic field and stroke thickness
(``rendering.render_instance``). The arrays and their generation parameters are cached in one ``.npz``
file, with its SHA-256 beside it (:func:`attnpaths.checkpoints.write_checked`: a damaged file is rendered again),
whose name is a hash of those parameters, so a change of any parameter (or of the matplotlib /
scipy / numpy versions, which fix the fonts and the resampling) renders a new set.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from dataclasses import asdict, dataclass

import numpy as np
import scipy
from tqdm import tqdm

from .._optional import require
from .._validation import int_at_least
from ..checkpoints import read_cache, read_checked, write_checked
from ..json_files import DamagedFile
from . import glyphs
from .imagesets import SPLITS, ImageClasses, ImageDataset
from .omniglot import read_omniglot
from .rendering import DistortionConfig, render_instance, sample_distortion, sample_elastic_field

#: Bumped whenever the rendering code changes what a given set of parameters produces.
GENERATOR_VERSION = 1
SOURCES = ("rendered", "omniglot")


@dataclass(frozen=True)
class GlyphDatasetConfig:
    """Parameters of the rendered Omniglot-like set.

    Attributes:
        instances_per_class: instances drawn per character (Omniglot: 20 drawers).
        image_size: side of the square grayscale images.
        alphabets: names of ``glyphs.ALPHABETS`` to use; None for all.
        max_per_alphabet: most classes per alphabet (``glyphs.character_table``).
        duplicate_similarity: cosine similarity above which a glyph duplicates an earlier one.
        distortion: per-instance distortion ranges.
        seed: instance ``i`` of the character at code point ``u`` is drawn by
            ``numpy.random.default_rng([seed, u])``, so a class does not change when others are added.
    """

    instances_per_class: int = 20
    image_size: int = 32
    alphabets: tuple[str, ...] | None = None
    max_per_alphabet: int = 55
    duplicate_similarity: float = 0.9
    distortion: DistortionConfig = DistortionConfig()
    seed: int = 0

    def __post_init__(self):
        int_at_least(self.instances_per_class, "instances_per_class", 2)
        int_at_least(self.image_size, "image_size", 8)
        if self.alphabets is not None:
            object.__setattr__(self, "alphabets", tuple(self.alphabets))
            for name in self.alphabets:
                glyphs.alphabet_by_name(name)
        int_at_least(self.seed, "seed", 0)

    def parameters(self) -> dict:
        """Everything that determines the arrays, as plain JSON-able values (the cache key's input)."""
        params = asdict(self)
        params["alphabets"] = list(self.alphabets) if self.alphabets is not None else None
        params["distortion"] = self.distortion.as_dict()
        params["source"] = "rendered"
        params["generator_version"] = GENERATOR_VERSION
        matplotlib = require("matplotlib", "tasks")  # its fonts draw the glyphs: its version is part of the key
        params["versions"] = {"matplotlib": matplotlib.__version__, "scipy": scipy.__version__, "numpy": np.__version__}
        return params

    def cache_key(self) -> str:
        """16 hex digits of the SHA-256 of :meth:`parameters`: the name of the cached data set."""
        text = json.dumps(self.parameters(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def _render_class(character: glyphs.Character, config: GlyphDatasetConfig):
    rng = np.random.default_rng([config.seed, character.codepoint])
    images = np.empty((config.instances_per_class, config.image_size, config.image_size), dtype=np.uint8)
    styles = np.empty(config.instances_per_class, dtype=np.int64)
    distortions = np.empty((config.instances_per_class, 7))
    bitmaps: dict[int, np.ndarray] = {}
    for i in range(config.instances_per_class):
        style = int(rng.integers(len(character.styles)))
        if style not in bitmaps:
            bitmaps[style] = glyphs.prototype_bitmap(character.alphabet, character.styles[style])
        distortion = sample_distortion(rng, config.distortion)
        elastic = sample_elastic_field(rng, config.distortion, config.image_size)
        image = render_instance(bitmaps[style], distortion, elastic, config.distortion, config.image_size)
        # Quantised like an 8-bit PNG, so a freshly rendered set equals its cached copy bit for bit.
        images[i] = np.round(image * 255)
        styles[i] = style
        distortions[i] = distortion
    return images, styles, distortions


def render_glyph_dataset(config: GlyphDatasetConfig = GlyphDatasetConfig(), *, progress: bool = True) -> ImageDataset:
    """Render the Omniglot-like set (no cache; see :func:`load_glyph_dataset`).

    Returns:
        an :class:`~attnpaths.oneshot.imagesets.ImageDataset` whose splits hold float32 images
        ``[C, I, S, S]`` with values ``k / 255``.
    """
    characters = glyphs.character_table(
        config.alphabets,
        max_per_alphabet=config.max_per_alphabet,
        duplicate_similarity=config.duplicate_similarity,
    )
    rendered = [
        _render_class(c, config)
        for c in tqdm(characters, desc="rendering glyph classes", unit="class", disable=not progress)
    ]
    splits = {}
    n_inst, size = config.instances_per_class, config.image_size
    for split in SPLITS:
        index = [k for k, c in enumerate(characters) if c.split == split]
        images = np.zeros((len(index), n_inst, size, size), dtype=np.uint8)
        styles = np.zeros((len(index), n_inst), dtype=np.int64)
        distortions = np.zeros((len(index), n_inst, 7))
        for row, k in enumerate(index):
            images[row], styles[row], distortions[row] = rendered[k]
        splits[split] = ImageClasses(
            images=images.astype(np.float32) / 255.0,
            names=tuple(characters[k].name for k in index),
            alphabets=tuple(characters[k].alphabet for k in index),
            styles=styles,
            distortions=distortions,
        )
    return ImageDataset(**splits, parameters=config.parameters())


def _save(dataset: ImageDataset, path: str) -> None:
    arrays = {"parameters": np.array(json.dumps(dataset.parameters, sort_keys=True))}
    for split in SPLITS:
        classes = dataset.split(split)
        arrays[f"{split}_images"] = np.round(classes.images * 255).astype(np.uint8)
        arrays[f"{split}_names"] = np.array(classes.names, dtype=str)
        arrays[f"{split}_alphabets"] = np.array(classes.alphabets, dtype=str)
        arrays[f"{split}_styles"] = classes.styles
        arrays[f"{split}_distortions"] = classes.distortions
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    write_checked(buffer.getvalue(), path)  # atomically, with its SHA-256 beside it


def _load(path: str) -> ImageDataset:
    """The set cached at ``path``; ``DamagedFile`` when its bytes do not match the SHA-256 beside it or cannot be
    read as the arrays :func:`_save` writes."""
    try:
        with np.load(io.BytesIO(read_checked(path)), allow_pickle=False) as data:
            splits = {
                split: ImageClasses(
                    images=data[f"{split}_images"].astype(np.float32) / 255.0,
                    names=tuple(str(n) for n in data[f"{split}_names"]),
                    alphabets=tuple(str(a) for a in data[f"{split}_alphabets"]),
                    styles=data[f"{split}_styles"],
                    distortions=data[f"{split}_distortions"],
                )
                for split in SPLITS
            }
            return ImageDataset(**splits, parameters=json.loads(str(data["parameters"])))
    except (OSError, ValueError, KeyError) as err:
        if isinstance(err, DamagedFile):
            raise
        raise DamagedFile(path, f"it cannot be read as a cached glyph set ({type(err).__name__}: {err})") from err


def glyph_cache_path(config: GlyphDatasetConfig, cache_dir: str) -> str:
    """Where :func:`load_glyph_dataset` keeps the set for ``config``."""
    return os.path.join(cache_dir, f"glyphs-{config.cache_key()}.npz")


def load_glyph_dataset(
    config: GlyphDatasetConfig = GlyphDatasetConfig(),
    *,
    cache_dir: str | None = os.path.join("_build", "cache"),
    progress: bool = True,
) -> ImageDataset:
    """The rendered set for ``config``, read from ``cache_dir`` when present, else rendered and cached.

    A cache file whose stored parameters differ from ``config``'s (a hash collision or a hand-edited
    file) is rendered again and overwritten. ``cache_dir=None`` renders without caching.
    """
    if cache_dir is None:
        return render_glyph_dataset(config, progress=progress)
    path = glyph_cache_path(config, cache_dir)
    dataset = read_cache(_load, path, "glyph set")
    if dataset is not None and dataset.parameters == config.parameters():
        return dataset
    dataset = render_glyph_dataset(config, progress=progress)
    _save(dataset, path)
    return dataset


def load_image_dataset(
    source: str = "rendered",
    *,
    config: GlyphDatasetConfig = GlyphDatasetConfig(),
    omniglot_root: str | None = None,
    omniglot_validation_alphabets: int = 5,
    cache_dir: str | None = os.path.join("_build", "cache"),
    progress: bool = True,
) -> ImageDataset:
    """The class splits of the one-shot task from either source.

    Args:
        source: ``"rendered"`` (the offline Omniglot-like set, ``config``) or ``"omniglot"`` (the real
            data set already on disk at ``omniglot_root``, read at ``config.image_size`` with
            ``config.instances_per_class`` instances per class; nothing is downloaded).
        config: parameters of the rendered set (image size and instances also apply to Omniglot).
        omniglot_root: folder holding ``images_background/`` and ``images_evaluation/``.
        omniglot_validation_alphabets: background alphabets held out for validation (Omniglot only).
        cache_dir: cache folder of the rendered set (None: no cache).
        progress: show a progress bar.
    """
    if source == "rendered":
        return load_glyph_dataset(config, cache_dir=cache_dir, progress=progress)
    if source == "omniglot":
        if omniglot_root is None:
            raise ValueError("omniglot_root must name the Omniglot folder when source='omniglot'")
        return read_omniglot(
            omniglot_root,
            image_size=config.image_size,
            instances_per_class=config.instances_per_class,
            validation_alphabets=omniglot_validation_alphabets,
            progress=progress,
        )
    raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
