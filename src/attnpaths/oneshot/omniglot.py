"""Reader for the real Omniglot data set in its standard folder layout (sec-oneshot-data), for machines that have it.

Layout (as unpacked from the official ``images_background.zip`` / ``images_evaluation.zip``)::

    root/images_background/<alphabet>/<character>/<drawing>.png   -> train and validation classes
    root/images_evaluation/<alphabet>/<character>/<drawing>.png   -> test classes

Like Omniglot's background / evaluation split, classes are split by alphabet: the last
``validation_alphabets`` background alphabets (in sorted order) are held out for validation. Nothing is
downloaded. Images are read as grayscale (background 1, ink 0) and resized to ``image_size`` with
bilinear antialiased interpolation, as torchvision's ``Resize`` does for the paper's pipeline.
"""

from __future__ import annotations

import os

import numpy as np
from tqdm import tqdm

from .._optional import require
from .._validation import int_at_least
from .imagesets import ImageClasses, ImageDataset
from .rendering import resize_images

FOLDERS = {"background": "images_background", "evaluation": "images_evaluation"}


def _subfolders(path: str) -> list[str]:
    return sorted(name for name in os.listdir(path) if os.path.isdir(os.path.join(path, name)))


def _read_classes(folder: str, alphabets: list[str], image_size: int, instances: int, progress) -> ImageClasses:
    Image = require("PIL.Image", "tasks")
    images, names, owners = [], [], []
    for alphabet in alphabets:
        for character in _subfolders(os.path.join(folder, alphabet)):
            char_dir = os.path.join(folder, alphabet, character)
            files = sorted(f for f in os.listdir(char_dir) if f.lower().endswith(".png"))
            if len(files) < instances:
                raise ValueError(
                    f"instances_per_class must be <= the drawings of every class; {char_dir} holds {len(files)}"
                    f" PNG files, fewer than instances_per_class={instances}"
                )
            drawings = []
            for name in files[:instances]:
                with Image.open(os.path.join(char_dir, name)) as im:
                    drawings.append(np.asarray(im.convert("L"), dtype=np.float32) / 255.0)
            images.append(resize_images(np.stack(drawings), image_size))
            names.append(f"{alphabet}/{character}")
            owners.append(alphabet)
            progress.update(1)
    stacked = np.stack(images) if images else np.zeros((0, instances, image_size, image_size), np.float32)
    return ImageClasses(images=stacked, names=tuple(names), alphabets=tuple(owners))


def read_omniglot(
    root: str,
    *,
    image_size: int = 32,
    instances_per_class: int = 20,
    validation_alphabets: int = 5,
    progress: bool = True,
) -> ImageDataset:
    """Read Omniglot from ``root`` (see the module docstring for the layout).

    Args:
        root: folder containing ``images_background/`` and ``images_evaluation/``.
        image_size: side of the resized square images.
        instances_per_class: drawings kept per character (the first ones in file-name order; Omniglot
            has 20).
        validation_alphabets: background alphabets held out as validation classes (the last ones in
            sorted order); must leave at least one training alphabet.
        progress: show a progress bar.

    Returns:
        an :class:`~attnpaths.oneshot.imagesets.ImageDataset` with float32 images
        ``[C, instances_per_class, image_size, image_size]``.
    """
    folders = {key: os.path.join(root, sub) for key, sub in FOLDERS.items()}
    for key, path in folders.items():
        if not os.path.isdir(path):
            raise ValueError(f"root must contain {FOLDERS[key]}/ (Omniglot layout), not found under {root!r}")
    background = _subfolders(folders["background"])
    evaluation = _subfolders(folders["evaluation"])
    if not isinstance(validation_alphabets, int) or not 0 <= validation_alphabets < len(background):
        raise ValueError(
            f"validation_alphabets must be an integer in [0, {len(background) - 1}] for the "
            f"{len(background)} background alphabets, got {validation_alphabets!r}"
        )
    int_at_least(instances_per_class, "instances_per_class", 2)
    n_train = len(background) - validation_alphabets
    parts = {
        "train": ("background", background[:n_train]),
        "validation": ("background", background[n_train:]),
        "test": ("evaluation", evaluation),
    }
    total = sum(len(_subfolders(os.path.join(folders[key], a))) for key, alphabets in parts.values() for a in alphabets)
    with tqdm(total=total, desc="reading Omniglot", unit="class", disable=not progress) as bar:
        splits = {
            split: _read_classes(folders[key], alphabets, image_size, instances_per_class, bar)
            for split, (key, alphabets) in parts.items()
        }
    parameters = {
        "source": "omniglot",
        "root": os.path.abspath(root),
        "image_size": image_size,
        "instances_per_class": instances_per_class,
        "validation_alphabets": background[n_train:],
    }
    return ImageDataset(**splits, parameters=parameters)
