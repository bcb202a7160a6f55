"""Character tables: coverage checked against the shipped fonts, duplicates dropped, fixed splits."""

import collections
import functools

import numpy as np
import pytest

from attnpaths.oneshot import glyphs

FT2Font = pytest.importorskip(
    "matplotlib.ft2font", reason="the glyphs are drawn from matplotlib's fonts: pip install 'attnpaths[tasks]'"
).FT2Font


@functools.cache
def charmap(face_index):
    # Read the character map independently of the module under test.
    return set(FT2Font(glyphs.FONT_FACES[face_index].path).get_charmap())


def face_named(name):
    return next(i for i, f in enumerate(glyphs.FONT_FACES) if f.name == name)


def test_faces_exist_and_exclude_the_last_resort_font():
    for face in glyphs.FONT_FACES:
        assert FT2Font(face.path).num_glyphs > 100
        assert "LastResort" not in face.filename


def test_missing_character_is_the_notdef_box_and_is_rejected():
    serif = face_named("DejaVu Serif")
    tifinagh_ya = 0x2D30
    assert tifinagh_ya not in charmap(serif)
    box = glyphs.notdef_bitmap(serif)
    assert glyphs.glyph_bitmap(serif, tifinagh_ya).shape == box.shape
    assert not glyphs.has_real_glyph(serif, tifinagh_ya)
    assert glyphs.has_real_glyph(face_named("DejaVu Sans"), tifinagh_ya)


def test_glyph_bitmap_is_cropped_coverage():
    bitmap = glyphs.glyph_bitmap(0, ord("H"))
    assert bitmap.min() >= 0 and bitmap.max() <= 1
    # cropped to the ink: every border row and column holds some ink
    assert bitmap[0].max() > 0 and bitmap[-1].max() > 0 and bitmap[:, 0].max() > 0 and bitmap[:, -1].max() > 0


def test_styles_are_really_in_the_fonts():
    table = glyphs.character_table(("Hebrew", "Mathematical Fraktur"), max_per_alphabet=8)
    assert table
    for character in table:
        assert character.styles
        for face, codepoint in character.styles:
            assert codepoint in charmap(face)
    fraktur = [c for c in table if c.alphabet == "Mathematical Fraktur"]
    # bold Fraktur (0x68 further on) is a style of the same class, not a class of its own
    assert all(any(cp == c.codepoint + 0x68 for _, cp in c.styles) for c in fraktur)
    assert all(c.codepoint < 0x1D56C for c in fraktur)


def test_shapes_shared_across_scripts_appear_once():
    table = glyphs.character_table(("Latin", "Greek", "Cyrillic"))
    codepoints = {c.codepoint for c in table}
    assert ord("A") in codepoints
    assert 0x391 not in codepoints  # GREEK CAPITAL LETTER ALPHA draws like Latin A
    assert 0x410 not in codepoints  # CYRILLIC CAPITAL LETTER A
    assert 0x3BB in codepoints  # GREEK SMALL LETTER LAMDA has its own shape
    assert 0x416 in codepoints  # CYRILLIC CAPITAL LETTER ZHE


def test_braille_keeps_dot_positions():
    # One dot top-left and one dot bottom-right differ only by position in the cell.
    top_left = glyphs.glyph_thumbnail("Braille", (0, 0x2801))
    bottom_right = glyphs.glyph_thumbnail("Braille", (0, 0x2880))
    rows, cols = np.nonzero(top_left > 0.5)
    rows2, cols2 = np.nonzero(bottom_right > 0.5)
    assert rows.mean() < rows2.mean() - 8 and cols.mean() < cols2.mean() - 4


def test_max_per_alphabet_spreads_over_the_block():
    full = glyphs.character_table(("Armenian",), max_per_alphabet=1000)
    capped = glyphs.character_table(("Armenian",), max_per_alphabet=10)
    assert len(capped) == 10 < len(full)
    assert {c.codepoint for c in capped} <= {c.codepoint for c in full}
    assert capped[0].codepoint == full[0].codepoint and capped[-1].codepoint == full[-1].codepoint


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"alphabets": ("Klingon",)}, "alphabet"),
        ({"max_per_alphabet": 0}, "max_per_alphabet"),
        ({"duplicate_similarity": 1.5}, "duplicate_similarity"),
    ],
)
def test_bad_arguments_name_themselves(kwargs, name):
    with pytest.raises(ValueError, match=name):
        glyphs.character_table(**kwargs)


@pytest.mark.usefixtures("long_computation")
def test_full_table_meets_the_omniglot_like_sizes():
    table = glyphs.character_table()
    by_split = collections.defaultdict(set)
    for c in table:
        by_split[c.split].add(c.alphabet)
    assert len({c.alphabet for c in table}) >= 20
    assert len(table) >= 600
    assert len({c.codepoint for c in table}) == len(table)
    # splits are disjoint by alphabet, as Omniglot's background / evaluation folders
    assert set(by_split) == {"train", "validation", "test"}
    assert not (by_split["train"] & by_split["validation"] or by_split["train"] & by_split["test"])
    assert not by_split["validation"] & by_split["test"]
    assert all(len([c for c in table if c.alphabet == a.name]) <= 55 for a in glyphs.ALPHABETS)
