"""The book's Markdown of verdicts (attnpaths_book.claims_markdown): tables whose cells keep their separators
escaped, sentences and tables whose text renders as written, the structural and sanity tables."""

import pytest

from attnpaths import claims as c
from attnpaths.claims import directional_z
from attnpaths.exchangeability import claims as V
from attnpaths_book.claims_markdown import (
    claims_table,
    markdown_claims_table,
    markdown_sentence,
    sanity_table,
    structural_table,
)

COMMON = dict(source="test", statistic="x")


def test_claims_table_escapes_pipes_and_counts():
    v = directional_z("A|1", "|x| grows", estimate=3.0, se=1.0, measured="|dev| = 3", **COMMON)
    others = [
        directional_z("B", "b", estimate=0.0, se=1.0, **COMMON),
        directional_z("C", "c", estimate=-3.0, se=1.0, **COMMON),
    ]
    table = claims_table([v] + others)
    lines = table.splitlines()
    assert len(lines) == 5 and lines[0].startswith("| claim |")
    # every row has the same number of unescaped cell separators as the header
    header_cells = lines[0].count("|")
    for line in lines[2:]:
        assert line.replace("\\|", "").count("|") == header_cells
    assert "A\\|1" in lines[2] and "\\|x\\| grows" in lines[2] and "**holds**" in lines[2]


def test_structural_table_shows_checks_apart_from_claims():
    holds = c.exact("h", "s", source="x", statistic="v", value=1.0, criterion="v > 0", satisfied=True)
    fails = c.exact("f", "s|t", source="x", statistic="v", value=-1.0, criterion="v > 0", satisfied=False)
    table = structural_table([holds, fails])
    assert "not a claim" in table and "s\\|t" in table and "**contradicted**" in table


def test_markdown_text_is_escaped():
    v = V.softer_temperature_verdict(1.0, 1.1, 0.0, 0.01, 0.01, beta=0.8, length=64)
    text = markdown_sentence(v.__class__(**{**v.__dict__, "statement": "W*_L and $x$ [a]"}))
    assert "W\\*\\_L" in text and "\\$x\\$" in text and "\\[a\\]" in text
    table = markdown_claims_table([v])
    assert table.count("\n") == 2 and f"**{v.outcome.value}**" in table


def test_sanity_table():
    table = sanity_table([("identity", 1.1e-16, 1e-12)])
    assert "| identity | 1.1e-16 | 1e-12 |" in table


def test_wrong_theory_sentence_says_which_mistakes_are_caught():
    from attnpaths.claims import equivalence
    from attnpaths_book.claims_markdown import wrong_theory_sentence

    def verdict(deviation):
        return equivalence(
            "2", "s", source="x", statistic="largest |d| / margin", deviation=[deviation], se=[0.01], margin=[0.1]
        )

    caught = wrong_theory_sentence({"none": verdict(0.0), "GP kernel (U = I)": verdict(0.5)})
    assert "every mistake is caught" in caught and "holds (0.00)" in caught
    missed = wrong_theory_sentence({"none": verdict(0.0), "a": verdict(0.5), "b": verdict(0.05)})
    assert "not caught: b" in missed and "every mistake" not in missed
    with pytest.raises(ValueError, match="none"):
        wrong_theory_sentence({"a": verdict(0.5)})


def test_a_not_significant_directional_claim_states_the_effect_its_test_detects():
    quiet = directional_z("D", "d", estimate=0.5, se=1.0, level=0.01, source="test", statistic="gain_x")
    effect = f"{c.detectable_effect(1.0, 0.01, 0.8):.3g}"
    words = f"detects a true gain_x of {effect} or more with probability 0.8"
    assert words in claims_table([quiet])
    escaped = words.replace("_", "\\_")  # Markdown: the statistic's underscore is escaped where it is named
    assert escaped in markdown_claims_table([quiet]) and escaped in markdown_sentence(quiet)
    # a claim that holds or is contradicted, and an agreement test, say nothing of it
    held = directional_z("H", "h", estimate=5.0, se=1.0, source="test", statistic="gain")
    agreement = c.equivalence("E", "e", deviation=[0.3], se=[0.2], margin=[0.5], source="test", statistic="dev")
    assert agreement.outcome.value == "not significant"
    for v in (held, agreement):
        assert "detects" not in markdown_sentence(v) and "detects" not in claims_table([v])
