"""Alphabets and character tables of the rendered Omniglot-like data set (sec-oneshot-data, offline stand-in).

Every alphabet is a set of Unicode code-point ranges. A character enters the table only if at least one
of the font faces that matplotlib ships really contains it: it must be in the face's character map,
render with ink, and differ from the face's missing-glyph ("notdef") box. Characters that look the same
as an earlier one (Latin ``A``, Greek ``Alpha`` and Cyrillic ``A`` share one glyph) are dropped, so that
no shape appears in two classes and, through them, in two splits.

Like Omniglot's ``images_background`` / ``images_evaluation`` folders, each alphabet belongs to one fixed
split, so training, validation and test classes are disjoint (and come from disjoint alphabets).
"""

from __future__ import annotations

import functools
import os
import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .._optional import require
from .._validation import positive_int
from .imagesets import SPLITS
from .rendering import IDENTITY_DISTORTION, DistortionConfig, render_instance

if TYPE_CHECKING:
    from matplotlib.ft2font import FT2Font

FITS = ("glyph", "alphabet")


@dataclass(frozen=True)
class FontFace:
    """One font file shipped in ``matplotlib/mpl-data/fonts/ttf``."""

    name: str
    filename: str

    @property
    def path(self) -> str:
        """The font file's path in the installed matplotlib's data directory."""
        return os.path.join(require("matplotlib", "tasks").get_data_path(), "fonts", "ttf", self.filename)


#: The faces instances are drawn from. matplotlib's ``LastResortHE`` font is left out on purpose: it
#: draws every code point as a labelled box. ``*Display``, ``STIXNonUni*``, ``STIXSiz*`` and the
#: Computer Modern files hold only symbols, private-use glyphs or non-Unicode encodings.
FONT_FACES = (
    FontFace("DejaVu Sans", "DejaVuSans.ttf"),
    FontFace("DejaVu Sans Bold", "DejaVuSans-Bold.ttf"),
    FontFace("DejaVu Sans Oblique", "DejaVuSans-Oblique.ttf"),
    FontFace("DejaVu Sans Bold Oblique", "DejaVuSans-BoldOblique.ttf"),
    FontFace("DejaVu Sans Mono", "DejaVuSansMono.ttf"),
    FontFace("DejaVu Sans Mono Bold", "DejaVuSansMono-Bold.ttf"),
    FontFace("DejaVu Sans Mono Oblique", "DejaVuSansMono-Oblique.ttf"),
    FontFace("DejaVu Sans Mono Bold Oblique", "DejaVuSansMono-BoldOblique.ttf"),
    FontFace("DejaVu Serif", "DejaVuSerif.ttf"),
    FontFace("DejaVu Serif Bold", "DejaVuSerif-Bold.ttf"),
    FontFace("DejaVu Serif Italic", "DejaVuSerif-Italic.ttf"),
    FontFace("DejaVu Serif Bold Italic", "DejaVuSerif-BoldItalic.ttf"),
    FontFace("STIX General", "STIXGeneral.ttf"),
    FontFace("STIX General Bold", "STIXGeneralBol.ttf"),
    FontFace("STIX General Italic", "STIXGeneralItalic.ttf"),
    FontFace("STIX General Bold Italic", "STIXGeneralBolIta.ttf"),
)


@dataclass(frozen=True)
class Alphabet:
    """An alphabet: Unicode ranges (inclusive), the Unicode general categories kept, and its split.

    ``fit`` says what is scaled to fill the image: ``"glyph"`` the glyph's own ink box (as a person
    fills the drawing box), ``"alphabet"`` the box shared by all glyphs of the alphabet in that face, for
    alphabets where the position inside the cell is the letter (Braille).

    ``variant_offsets`` lists code-point offsets at which the same letter exists in another style (the
    bold Fraktur letters sit 0x68 after the regular ones); such variants count as extra font faces of one
    character class, never as classes of their own.
    """

    name: str
    ranges: tuple[tuple[int, int], ...]
    split: str
    categories: tuple[str, ...] = ("Lu", "Ll", "Lo")
    variant_offsets: tuple[int, ...] = ()
    fit: str = "glyph"

    def __post_init__(self):
        if self.split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {self.split!r}")
        if self.fit not in FITS:
            raise ValueError(f"fit must be one of {FITS}, got {self.fit!r}")


#: The alphabet table. Splits are fixed, as Omniglot's background/evaluation folders are; the three
#: Canadian-syllabics alphabets (consecutive ranges of one Unicode block) mirror Omniglot's Inuktitut /
#: Blackfoot / Ojibwe alphabets. Symbol alphabets (Braille, astrological symbols, tetragrams) play the part of
#: Omniglot's invented alphabets.
ALPHABETS = (
    Alphabet("Latin", ((0x41, 0x5A), (0x61, 0x7A)), "train"),
    Alphabet("IPA", ((0x250, 0x2AF),), "train"),
    Alphabet("Greek", ((0x391, 0x3C9),), "train"),
    Alphabet("Cyrillic", ((0x400, 0x45F),), "train"),
    Alphabet("Hebrew", ((0x5D0, 0x5EA),), "train"),
    Alphabet("Arabic", ((0x621, 0x64A),), "train"),
    Alphabet("Georgian (Mkhedruli)", ((0x10D0, 0x10FA),), "train"),
    Alphabet("Canadian syllabics I", ((0x1401, 0x1489),), "train"),
    Alphabet("Canadian syllabics II", ((0x148A, 0x154F),), "train"),
    Alphabet("Ogham", ((0x1681, 0x169A),), "train"),
    Alphabet("Lisu", ((0xA4D0, 0xA4F7),), "train"),
    Alphabet("Old Italic", ((0x10300, 0x1031F),), "train"),
    Alphabet("Braille", ((0x2801, 0x28FF),), "train", ("So",), fit="alphabet"),
    Alphabet("Astrological symbols", ((0x263F, 0x2653), (0x26B3, 0x26BC)), "train", ("So",)),
    Alphabet("Mathematical Fraktur", ((0x1D504, 0x1D537),), "train", variant_offsets=(0x68,)),
    Alphabet("Mathematical double-struck", ((0x1D538, 0x1D56B),), "train"),
    Alphabet("Coptic", ((0x3E2, 0x3EF),), "validation"),
    Alphabet("Georgian (Asomtavruli)", ((0x10A0, 0x10C5),), "validation"),
    Alphabet("Tifinagh", ((0x2D30, 0x2D67),), "validation"),
    Alphabet("Armenian", ((0x531, 0x586),), "test"),
    Alphabet("N'Ko", ((0x7CA, 0x7EA),), "test"),
    Alphabet("Lao", ((0xE81, 0xEAE),), "test"),
    Alphabet("Georgian (Nuskhuri)", ((0x2D00, 0x2D25),), "test"),
    Alphabet("Canadian syllabics III", ((0x1550, 0x167F),), "test"),
    Alphabet("Mathematical script", ((0x1D49C, 0x1D4CF),), "test", variant_offsets=(0x34,)),
    Alphabet("Tai Xuan Jing tetragrams", ((0x1D306, 0x1D356),), "test", ("So",)),
)


@dataclass(frozen=True)
class Character:
    """One character class: its alphabet, code point, split, and its styles: the ``(face index into
    FONT_FACES, code point)`` pairs that draw it with a real glyph."""

    alphabet: str
    codepoint: int
    split: str
    styles: tuple[tuple[int, int], ...]

    @property
    def name(self) -> str:
        """The alphabet, the code point and its Unicode name, e.g.
        ``"Armenian: U+0531 ARMENIAN CAPITAL LETTER AYB"``."""
        return f"{self.alphabet}: U+{self.codepoint:04X} {unicodedata.name(chr(self.codepoint))}"


def alphabet_by_name(name: str) -> Alphabet:
    """The entry of ``ALPHABETS`` called ``name``."""
    for alphabet in ALPHABETS:
        if alphabet.name == name:
            return alphabet
    raise ValueError(f"alphabet must be one of {[a.name for a in ALPHABETS]}, got {name!r}")


@functools.cache
def _font(face_index: int) -> FT2Font:
    return require("matplotlib.ft2font", "tasks").FT2Font(FONT_FACES[face_index].path)


@functools.cache
def _charmap(face_index: int) -> frozenset[int]:
    return frozenset(_font(face_index).get_charmap())


@dataclass(frozen=True)
class GlyphImage:
    """A drawn glyph: ``coverage`` ``[h, w]`` in ``[0, 1]`` cropped to the ink, and the ink box
    ``(x_min, y_min, x_max, y_max)`` in pixels relative to the pen origin (y up), from FreeType."""

    coverage: np.ndarray
    box: tuple[float, float, float, float]


def _draw(font: FT2Font, glyph_index: int, em_pixels: int) -> GlyphImage:
    font.set_size(em_pixels, 72)
    glyph = font.load_glyph(glyph_index, flags=require("matplotlib.ft2font", "tasks").LoadFlags.NO_HINTING)
    box = tuple(v / 64 for v in glyph.bbox)  # 26.6 fixed point
    margin = em_pixels // 2  # generous: the drawing offset includes the glyph's bearings
    height = int(np.ceil(box[3] - box[1])) + 2 * margin
    width = int(np.ceil(box[2] - box[0])) + 2 * margin
    buffer = np.zeros((height, width), dtype=np.uint8)
    font.draw_glyph_to_bitmap(buffer, margin, margin, glyph, antialiased=True)
    image = buffer.astype(np.float64) / 255.0
    rows = np.flatnonzero(image.max(axis=1) > 0)
    cols = np.flatnonzero(image.max(axis=0) > 0)
    if rows.size == 0:
        return GlyphImage(np.zeros((0, 0)), box)
    if rows[0] == 0 or cols[0] == 0 or rows[-1] == height - 1 or cols[-1] == width - 1:
        raise RuntimeError(f"glyph {glyph_index} of {font.fname} overflows its drawing buffer")
    return GlyphImage(image[rows[0] : rows[-1] + 1, cols[0] : cols[-1] + 1], box)


def draw_glyph(face_index: int, codepoint: int, em_pixels: int = 96) -> GlyphImage:
    """Draw one glyph, antialiased, at an em size of ``em_pixels``.

    A code point missing from the face's character map gives the face's notdef glyph (a box), which
    :func:`has_real_glyph` rejects.
    """
    font = _font(face_index)
    return _draw(font, font.get_char_index(codepoint), em_pixels)


def glyph_bitmap(face_index: int, codepoint: int, em_pixels: int = 96) -> np.ndarray:
    """Coverage ``[h, w]`` (values in ``[0, 1]``, 1 = full ink) of one glyph, cropped to its ink;
    shape ``(0, 0)`` for a glyph without ink."""
    return draw_glyph(face_index, codepoint, em_pixels).coverage


@functools.cache
def notdef_bitmap(face_index: int, em_pixels: int = 96) -> np.ndarray:
    """The missing-glyph box (glyph index 0) of a face, cropped like :func:`glyph_bitmap`."""
    return _draw(_font(face_index), 0, em_pixels).coverage


def has_real_glyph(face_index: int, codepoint: int, *, min_ink: float = 2.0) -> bool:
    """Whether a face draws ``codepoint`` with a glyph of its own: mapped, with at least ``min_ink``
    pixels of ink at a 32-pixel em, and not the box it draws for missing characters."""
    if codepoint not in _charmap(face_index):
        return False
    bitmap = glyph_bitmap(face_index, codepoint, em_pixels=32)
    if bitmap.sum() < min_ink:
        return False
    box = notdef_bitmap(face_index, em_pixels=32)
    return not (bitmap.shape == box.shape and np.allclose(bitmap, box, atol=0.05))


def candidate_codepoints(alphabet: Alphabet) -> list[int]:
    """Assigned code points of an alphabet whose general category is one it keeps, in code order."""
    out = []
    for lo, hi in alphabet.ranges:
        for codepoint in range(lo, hi + 1):
            char = chr(codepoint)
            if unicodedata.name(char, None) is not None and unicodedata.category(char) in alphabet.categories:
                out.append(codepoint)
    return out


def covering_faces(codepoint: int) -> tuple[int, ...]:
    """Indices of the faces in ``FONT_FACES`` with a real glyph for ``codepoint``."""
    return tuple(i for i in range(len(FONT_FACES)) if has_real_glyph(i, codepoint))


def character_styles(alphabet: Alphabet, codepoint: int) -> tuple[tuple[int, int], ...]:
    """Every ``(face index, code point)`` that draws a character, its style variants included."""
    styles = []
    for offset in (0, *alphabet.variant_offsets):
        variant = codepoint + offset
        if unicodedata.name(chr(variant), None) is not None:
            styles.extend((face, variant) for face in covering_faces(variant))
    return tuple(styles)


@functools.cache
def alphabet_frame(alphabet_name: str, face_index: int, em_pixels: int = 96) -> tuple[float, float, float, float]:
    """Union of the ink boxes of an alphabet's glyphs in one face, ``(x_min, y_min, x_max, y_max)``."""
    alphabet = alphabet_by_name(alphabet_name)
    boxes = np.array(
        [
            draw_glyph(face_index, cp, em_pixels).box
            for cp in candidate_codepoints(alphabet)
            if has_real_glyph(face_index, cp)
        ]
    )
    if boxes.size == 0:
        raise ValueError(f"face {FONT_FACES[face_index].name!r} draws no glyph of alphabet {alphabet_name!r}")
    return (*boxes[:, :2].min(axis=0), *boxes[:, 2:].max(axis=0))


def prototype_bitmap(alphabet_name: str, style: tuple[int, int], em_pixels: int = 96) -> np.ndarray:
    """The bitmap that ``rendering.render_instance`` distorts for one style of a character.

    For ``fit="glyph"`` alphabets it is the glyph cropped to its ink; for ``fit="alphabet"`` the glyph
    placed inside the alphabet's frame in that face (so its position in the cell survives).

    Returns:
        float64 ``[h, w]`` coverage in ``[0, 1]``.
    """
    face_index, codepoint = style
    glyph = draw_glyph(face_index, codepoint, em_pixels)
    if alphabet_by_name(alphabet_name).fit == "glyph":
        return glyph.coverage
    x_min, y_min, x_max, y_max = alphabet_frame(alphabet_name, face_index, em_pixels)
    h, w = glyph.coverage.shape
    top = int(round(y_max - glyph.box[3]))
    left = int(round(glyph.box[0] - x_min))
    height = max(int(np.ceil(y_max - y_min)), top + h)
    width = max(int(np.ceil(x_max - x_min)), left + w)
    framed = np.zeros((height, width))
    framed[top : top + h, left : left + w] = glyph.coverage
    return framed


def glyph_thumbnail(alphabet_name: str, style: tuple[int, int], image_size: int = 32) -> np.ndarray:
    """Undistorted ink image (1 = ink) of one style of a character, as the data set frames it.

    Returns:
        float64 ``[image_size, image_size]``.
    """
    bitmap = prototype_bitmap(alphabet_name, style)
    return 1.0 - render_instance(bitmap, IDENTITY_DISTORTION, None, DistortionConfig(), image_size)


def character_table(
    alphabets=None,
    *,
    max_per_alphabet: int = 55,
    duplicate_similarity: float = 0.9,
) -> tuple[Character, ...]:
    """The character classes of the rendered data set, verified against the shipped fonts.

    Alphabets are visited in table order; within one, code points in code order. A character is kept if
    some face draws it (``character_styles``) and its thumbnail in its first style has cosine similarity
    below ``duplicate_similarity`` with every character kept before it (the same shape in two classes
    would make one-shot episodes ambiguous and leak shapes across splits). An alphabet with more
    survivors than ``max_per_alphabet`` keeps that many, evenly spaced in code order.

    Args:
        alphabets: names of alphabets to use (default: all of ``ALPHABETS``).
        max_per_alphabet: the most classes one alphabet contributes (Omniglot's alphabets hold 14-55).
        duplicate_similarity: cosine-similarity threshold in (0, 1] above which a glyph is a duplicate.

    Returns:
        the kept characters, alphabet by alphabet.
    """
    if isinstance(alphabets, str):
        alphabets = (alphabets,)
    selected = ALPHABETS if alphabets is None else tuple(alphabet_by_name(name) for name in alphabets)
    positive_int(max_per_alphabet, "max_per_alphabet")
    if not 0 < duplicate_similarity <= 1:
        raise ValueError(f"duplicate_similarity must be in (0, 1], got {duplicate_similarity!r}")

    kept: list[Character] = []
    kept_thumbnails = np.zeros((0, 32 * 32))
    for alphabet in selected:
        candidates = []
        for codepoint in candidate_codepoints(alphabet):
            styles = character_styles(alphabet, codepoint)
            if styles:
                candidates.append(Character(alphabet.name, codepoint, alphabet.split, styles))
        if not candidates:
            continue
        thumbs = np.stack([glyph_thumbnail(alphabet.name, c.styles[0]).ravel() for c in candidates])
        thumbs /= np.linalg.norm(thumbs, axis=1, keepdims=True)
        clashes_earlier = (thumbs @ kept_thumbnails.T >= duplicate_similarity).any(axis=1)
        clashes_within = thumbs @ thumbs.T >= duplicate_similarity
        survivors: list[int] = []
        for i in range(len(candidates)):
            if not clashes_earlier[i] and not clashes_within[i, survivors].any():
                survivors.append(i)
        if len(survivors) > max_per_alphabet:
            spread = np.round(np.linspace(0, len(survivors) - 1, max_per_alphabet)).astype(int)
            survivors = [survivors[i] for i in np.unique(spread)]
        kept.extend(candidates[i] for i in survivors)
        kept_thumbnails = np.concatenate([kept_thumbnails, thumbs[survivors]])
    return tuple(kept)
