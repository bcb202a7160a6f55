"""BERT's uncased tokenizer: text to word-piece ids ``[B, T]`` with their attention mask ``[B, T]``.

The steps are those of the ``tokenizers`` library's ``BertNormalizer``, ``BertPreTokenizer`` and ``WordPiece``
model (the fast tokenizer that ships with a BERT checkpoint, its ``tokenizer.json``), in this order:

1. clean: drop NUL, U+FFFD and control characters (Unicode category ``C*`` except tab, newline and carriage
   return), and map whitespace (tab, newline, carriage return, categories ``Zs``, ``Zl``, ``Zp``) to a space;
2. put spaces around every CJK ideograph, so that each is a word of its own;
3. strip accents (canonical decomposition, then drop the non-spacing marks, category ``Mn``);
4. lower-case character by character (no context: a final capital sigma becomes ``σ``, as in ``tokenizers``);
5. split on spaces, then isolate every punctuation character (ASCII punctuation and categories ``P*``);
6. split each word greedily into the longest pieces of the vocabulary (continuations prefixed ``##``); a word
   longer than 100 characters, or one that cannot be split, is ``[UNK]``;
7. frame with ``[CLS]`` ... ``[SEP]``, truncating the pieces to ``max_length - 2``; pad on the right with
   ``[PAD]`` to the longest sequence of the batch, the attention mask 1 on the real tokens and 0 on the padding.
"""

from __future__ import annotations

import unicodedata
from functools import cache
from pathlib import Path

import torch

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]")
MAX_WORD_CHARS = 100
"""Longer words are one ``[UNK]`` (``max_input_chars_per_word`` of the checkpoint's tokenizer)."""

_CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B920, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)
"""The CJK blocks that ``tokenizers`` isolates (its ranges, which start the fifth extension at U+2B920)."""


_ASCII = str.maketrans({c: (" " if c in "\t\n\r" else None) for c in map(chr, [*range(32), 127])})
"""Step 1 on ASCII text: tab, newline and carriage return become spaces, the other control characters go."""


def _is_cjk(char: str) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in _CJK_RANGES)


@cache  # a corpus has few distinct characters: look each one up once
def _is_punctuation(char: str) -> bool:
    code = ord(char)
    ascii_punctuation = 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126
    return ascii_punctuation or unicodedata.category(char).startswith("P")


def normalize(text: str) -> str:
    """``text`` cleaned, CJK-spaced, accent-stripped and lower-cased (steps 1-4 of the module's documentation)."""
    if text.isascii():  # no CJK, no accents, lower-casing one to one: the common case, at string speed
        return text.translate(_ASCII).lower()
    out = []
    for char in text:
        category = unicodedata.category(char)
        if char in "\t\n\r" or category in ("Zs", "Zl", "Zp"):
            out.append(" ")
        elif char == "\ufffd" or category.startswith("C"):  # NUL is a control character
            continue
        elif _is_cjk(char):
            out.append(f" {char} ")
        else:
            out.append(char)
    decomposed = unicodedata.normalize("NFD", "".join(out))
    return "".join(c.lower() for c in decomposed if unicodedata.category(c) != "Mn")


def split_words(text: str) -> list[str]:
    """The words of normalised ``text``: split on spaces, every punctuation character a word of its own."""
    words = []
    for chunk in text.split(" "):
        start = 0
        for i, char in enumerate(chunk):
            if _is_punctuation(char):
                if i > start:
                    words.append(chunk[start:i])
                words.append(char)
                start = i + 1
        if start < len(chunk):
            words.append(chunk[start:])
    return words


class WordPiece:
    """BERT's uncased tokenizer for a vocabulary (one piece a line, its id the line number).

    Call it on a list of ``B`` texts: ``ids, mask = tokenizer(texts, max_length=128)``, both int64 ``[B, T]``
    with ``T`` the longest framed sequence (at most ``max_length``).
    """

    def __init__(self, vocab: dict[str, int]):
        missing = [token for token in SPECIAL_TOKENS if token not in vocab]
        if missing:
            raise ValueError(f"vocab must contain the special tokens {list(SPECIAL_TOKENS)}, missing {missing}")
        self.vocab = dict(vocab)
        self.pad_id, self.unk_id, self.cls_id, self.sep_id = (self.vocab[t] for t in SPECIAL_TOKENS)
        self._words: dict[str, tuple[int, ...]] = {}  # a word's pieces, memoised: words repeat across a corpus

    @classmethod
    def from_file(cls, path: Path | str) -> WordPiece:
        """The tokenizer of the vocabulary file ``path`` (``vocab.txt``: one piece a line, UTF-8)."""
        lines = Path(path).read_text(encoding="utf-8").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return cls({piece: index for index, piece in enumerate(lines)})

    def word_ids(self, word: str) -> tuple[int, ...]:
        """The ids of one word's pieces: greedy longest match first, ``(unk,)`` if it cannot be split."""
        cached = self._words.get(word)
        if cached is not None:
            return cached
        ids: list[int] = []
        start = 0
        while start < len(word) and len(word) <= MAX_WORD_CHARS:
            for end in range(len(word), start, -1):
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.vocab:
                    ids.append(self.vocab[piece])
                    start = end
                    break
            else:
                break
        found = tuple(ids) if start == len(word) and ids else (self.unk_id,)
        self._words[word] = found
        return found

    def piece_ids(self, text: str) -> list[int]:
        """The word-piece ids of ``text``, without ``[CLS]``, ``[SEP]`` or truncation."""
        return [i for word in split_words(normalize(text)) for i in self.word_ids(word)]

    def encode(self, text: str, max_length: int | None = None) -> list[int]:
        """``[CLS] pieces [SEP]`` of ``text``, the pieces truncated to ``max_length - 2`` (``None``: no limit)."""
        pieces = self.piece_ids(text)
        if max_length is not None:
            pieces = pieces[: _check_max_length(max_length) - 2]
        return [self.cls_id, *pieces, self.sep_id]

    def __call__(self, texts, max_length: int = 512) -> tuple[torch.Tensor, torch.Tensor]:
        """``(ids, mask)`` for a list of ``B`` texts: int64 ``[B, T]`` each, ``T`` the longest framed sequence (at
        most ``max_length``), padding ``[PAD]`` on the right with mask 0."""
        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            raise TypeError("texts must be a list of strings")
        rows = [self.encode(t, _check_max_length(max_length)) for t in texts]
        width = max((len(r) for r in rows), default=2)
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.int64)
        mask = torch.zeros((len(rows), width), dtype=torch.int64)
        for b, row in enumerate(rows):
            ids[b, : len(row)] = torch.tensor(row, dtype=torch.int64)
            mask[b, : len(row)] = 1
        return ids, mask


def _check_max_length(max_length) -> int:
    if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 2:
        raise ValueError(f"max_length must be an integer >= 2 ([CLS] and [SEP]), got {max_length!r}")
    return max_length
