"""The scorecard of the paper's claims (attnpaths_book.scorecard): answers computed from the verdicts only, every
claim of the paper tied to chapter claims that exist, and the Markdown it writes."""

import json

import pytest
from helpers import ROOT
from helpers import verdict as stand_in_verdict

from attnpaths.claims import Outcome, Verdict
from attnpaths_book import scorecard
from attnpaths_book.report import ChapterClaims


def verdict(claim: str, outcome: Outcome, measured: str = "measured") -> Verdict:
    return stand_in_verdict(claim, outcome, measured=measured)


H, NS, C = Outcome.HOLDS, Outcome.NOT_SIGNIFICANT, Outcome.CONTRADICTED
CLAIM = scorecard.PaperClaim("P", "finite width wins", "abstract", (("hmc", "1"), ("depth", "b")), caveat="why")


def test_a_selector_picks_the_claim_and_its_cases_only():
    assert scorecard.selects("1", "1") and scorecard.selects("1", "1 (4 paths)")
    assert not scorecard.selects("1", "1b") and not scorecard.selects("1", "11 (x)") and not scorecard.selects("2", "1")
    assert scorecard.selects("2 (N=10)", "2 (N=10)")


@pytest.mark.parametrize(
    "outcomes, expected",
    [
        ((H, H, H), scorecard.REPRODUCED),
        ((H, NS, H), scorecard.MOSTLY),
        ((H, C, H), scorecard.PARTLY),
        ((H, NS, NS), scorecard.PARTLY),
        ((H, C, NS), scorecard.CONTRADICTED),
        ((NS, C, NS), scorecard.CONTRADICTED),
        ((NS, NS, NS), scorecard.NOT_REPRODUCED),
    ],
)
def test_the_answer_follows_from_the_outcomes(outcomes, expected):
    verdicts = {
        "hmc": [verdict("1 (4 paths)", outcomes[0]), verdict("1 (2 paths)", outcomes[1]), verdict("1b", C)],
        "depth": [verdict("b", outcomes[2])],
    }
    answer = scorecard.answer(CLAIM, verdicts)
    assert answer.answer == expected
    assert [v.claim for _, v in answer.tests] == ["1 (4 paths)", "1 (2 paths)", "b"]  # "1b" is another claim
    counts = answer.counts()
    assert sum(counts.values()) == 3 and counts["holds"] == sum(o is H for o in outcomes)


@pytest.mark.parametrize(
    "holds, contradicted, total, expected",
    [
        (18, 0, 18, scorecard.REPRODUCED),
        (2, 0, 3, scorecard.MOSTLY),  # two thirds exactly
        (1, 0, 2, scorecard.PARTLY),  # short of two thirds
        (18, 1, 19, scorecard.PARTLY),  # a contradiction bars "mostly" whatever the share
        (2, 5, 18, scorecard.CONTRADICTED),  # two of eighteen do not read like eighteen of nineteen
        (1, 1, 3, scorecard.CONTRADICTED),  # a tie goes against the claim
        (0, 0, 4, scorecard.NOT_REPRODUCED),
        (0, 0, 0, scorecard.NOT_TESTED),
    ],
)
def test_the_grade_follows_the_share_of_tests_that_hold(holds, contradicted, total, expected):
    assert scorecard.grade(holds, contradicted, total) == expected


def test_the_grade_refuses_counts_that_do_not_add_up():
    with pytest.raises(ValueError, match="holds \\+ contradicted must be at most total"):
        scorecard.grade(2, 2, 3)
    with pytest.raises(ValueError, match="holds must be an integer >= 0"):
        scorecard.grade(-1, 0, 3)


COUNTER = scorecard.PaperClaim(
    "P", "finite width wins", "abstract", (("lc", "a"),), against=(("lc", "r"),), caveat="reverses near P = D"
)


@pytest.mark.parametrize(
    "counter, counted, expected",
    [(H, C, scorecard.CONTRADICTED), (C, H, scorecard.REPRODUCED), (NS, NS, scorecard.PARTLY)],
)
def test_a_counter_test_counts_reversed(counter, counted, expected):
    answer = scorecard.answer(COUNTER, {"lc": [verdict("a", H), verdict("r", counter), verdict("s", H)]})
    assert answer.answer == expected
    assert [v.claim for _, v in answer.tests] == ["a"] and [v.claim for _, v in answer.against] == ["r"]
    assert answer.counts()[counted.value] == 1 + (counted is H)
    assert "(counter-tests included: 1)" in answer.summary()
    table = scorecard.scorecard_table([answer])
    assert f"{{doc}}`lc` r (counter-test): **{counter.value}**, counts as {counted.value}" in table
    assert [t["counter_test"] for t in answer.to_dict()["tests"]] == [False, True]
    listing = scorecard.reproduction_list([answer])
    assert ("counter-test r" in listing and "reverses near P = D" in listing) is (counted is not H)


def test_the_finite_width_advantage_is_tested_against_the_reversal_near_p_equal_d():
    claims = {c.key: c for c in scorecard.PAPER_CLAIMS}
    p1 = claims["P1"]
    assert p1.tests == (
        ("hmc", "1"),
        ("oneshot", "1"),
        ("depth", "b"),
        ("learning_curves", "a"),
        ("learning_curves", "t"),
    )
    assert p1.against == (("learning_curves", "r"), ("learning_curves", "s"), ("learning_curves", "sa"))
    assert "{doc}`learning_curves`" in p1.caveat and "P = D" in p1.caveat
    assert ("learning_curves", "n") in claims["P2"].tests and ("learning_curves", "nu") in claims["P2"].tests
    # the reversal holding at P = D makes the advantage contradicted as often as it holds there
    verdicts = {"learning_curves": [verdict("a", H), verdict("t", NS), verdict("r", H), verdict("s", NS)]}
    answer = scorecard.answer(p1, verdicts)
    assert answer.answer == scorecard.CONTRADICTED and answer.counts() == {
        "holds": 1,
        "not significant": 2,
        "contradicted": 1,
    }


def test_the_gp_limit_claim_counts_the_prior_kernel_and_not_the_structural_check():
    p5 = next(c for c in scorecard.PAPER_CLAIMS if c.key == "P5")
    assert p5.tests == (("theory", "T4"),) and "structural check" in p5.note
    assert not any(("hmc", "3") in c.tests + c.against for c in scorecard.PAPER_CLAIMS)
    listing = scorecard.reproduction_list([scorecard.answer(p5, {"theory": [verdict("T4", H)]})])
    assert "reproduced: 1 of 1 tests hold" in listing and p5.note in listing


def test_the_real_world_row_is_answered_by_the_pretrained_transformer_and_says_what_stands_in():
    row = next(c for c in scorecard.PAPER_CLAIMS if "real-world" in c.statement)
    assert row.tests == (("pretrained", "M1"), ("pretrained", "P1")) and row.against == ()
    assert "Omniglot" in row.note and "synthetic" in row.note and "{doc}`pretrained`" in row.caveat
    # the other chapters' verdicts do not answer it; the pretrained chapter's two claims do, and only they
    every = {chapter: [verdict(s, H) for s in "1 2 3 4 5 6 7 8 a b c M2 P2".split()] for chapter in ("hmc", "oneshot")}
    assert scorecard.answer(row, every).answer == scorecard.NOT_TESTED
    mixed = {**every, "pretrained": [verdict("M1", H), verdict("P1", NS), verdict("P2", H), verdict("P1L", H)]}
    answer = scorecard.answer(row, mixed)
    assert (
        answer.counts() == {"holds": 1, "not significant": 1, "contradicted": 0} and answer.answer == scorecard.PARTLY
    )
    listing = scorecard.reproduction_list([answer])
    assert row.note in listing and row.caveat in listing


def test_the_headline_is_said_from_the_answers():
    mechanism = scorecard.PaperClaim("P4", "paths are combined", "abstract", (("hmc", "I"),))
    verdicts = {"hmc": [verdict("1 (4 paths)", H), verdict("b", H), verdict("I (4 paths)", NS)]}
    answers = [scorecard.answer(CLAIM, verdicts), scorecard.answer(mechanism, verdicts)]
    text = scorecard.headline(answers, ("P", "P4"))
    assert text.startswith("The paper's claim that finite width wins (P) is reproduced: 1 of 1 tests hold")
    assert "that paths are combined (P4) is not reproduced: 0 of 1 tests hold" in text
    assert text.endswith("not holding: {doc}`hmc` I (4 paths) (not significant).")
    verdicts["hmc"][2] = verdict("I (4 paths)", H)
    held = scorecard.headline([scorecard.answer(mechanism, verdicts)], ("P4",))
    assert (
        held
        == "The paper's claim that paths are combined (P4) is reproduced: 1 of 1 tests hold, 0 not significant, 0 contradicted."
    )
    with pytest.raises(ValueError, match="unknown \\['P9'\\]"):
        scorecard.headline(answers, ("P9",))


def test_the_intro_glues_its_headline_from_the_scorecard():
    """The book's opening result is said from the verdicts: the intro glues the scorecard's headline of the
    finite-width advantage and of the path-combination mechanism instead of typing a conclusion."""
    intro = (ROOT / "book" / "intro.md").read_text()
    one_line = intro[intro.index("## The result in one line") : intro.index("## What this book computes")]
    assert "{glue:md}`intro_headline_answers:myst`" in one_line  # MyST: its {doc} roles link
    assert 'recorder.markdown("headline_answers", scorecard.headline(answers, ("P1", "P4")))' in intro
    assert "learns which\npaths to combine" not in intro and "learns which paths to combine" not in intro


def test_a_not_significant_test_in_the_list_states_the_effect_it_detects():
    from attnpaths.claims import directional_z

    quiet = directional_z("1", "s", estimate=0.1, se=1.0, source="x", statistic="gain")
    answer = scorecard.answer(CLAIM, {"hmc": [quiet], "depth": [verdict("b", H)]})
    assert "Its test detects a true gain of" in scorecard.reproduction_list([answer])


def test_a_claim_without_verdicts_is_not_tested_and_says_so():
    answer = scorecard.answer(CLAIM, {"oneshot": [verdict("1", H)]})
    assert answer.answer == scorecard.NOT_TESTED and "no chapter of this run tests it" in answer.summary()


def test_the_markdown_names_every_test_and_what_the_failing_ones_measured():
    claims = [ChapterClaims("hmc", "paper", [verdict("1 (4 paths)", H), verdict("1 (2 paths)", C, "drop of 3 % | *")])]
    answers = scorecard.answer_claims(claims, claims=(CLAIM,))
    table = scorecard.scorecard_table(answers)
    assert table.count("\n") == 2 and "{doc}`hmc` 1 (4 paths): **holds**" in table
    assert "contradicted: 1 of 2 tests hold, 0 not significant, 1 contradicted" in table  # a tie goes against it
    listing = scorecard.reproduction_list(answers)
    assert "drop of 3 % \\| \\*" not in listing  # the list is not a table: only Markdown is escaped
    assert "drop of 3 % | \\*" in listing and listing.endswith("why")
    assert "1 (4 paths)" not in listing  # a test that holds is not repeated in the list
    assert json.dumps(answers[0].to_dict())


def test_every_selector_names_a_claim_that_its_chapter_records():
    """Each test a paper claim names is a claim or a diagnostic of the chapter's committed paper record (or a case
    of one), so a renamed claim cannot drop out of the scorecard unnoticed."""
    missing = []
    for claim in scorecard.PAPER_CLAIMS:
        for chapter, selector in claim.tests + claim.against:
            record = json.loads((ROOT / "tests" / "paper_records" / f"{chapter}.json").read_text())
            values = record["results"]["values"]
            # a diagnostic (an agreement test without power in that run) is a claim of runs with more power
            recorded = [v["claim"] for v in values["verdicts"] + values.get("diagnostics", [])]
            if not any(scorecard.selects(selector, name) for name in recorded):
                missing.append(f"{claim.key}: {chapter} {selector}")
    assert not missing, f"paper claims name tests that no record holds: {missing}"
