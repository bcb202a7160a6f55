"""The scorecard of the paper's claims (attnpaths_book.scorecard): answers computed from the verdicts only, every
claim of the paper tied to chapter claims that exist, and the Markdown it writes."""

import json

import pytest
from helpers import ROOT

from attnpaths.claims import Outcome, Verdict
from attnpaths_book import scorecard
from attnpaths_book.report import ChapterClaims


def verdict(claim: str, outcome: Outcome, measured: str = "measured") -> Verdict:
    return Verdict(
        claim, "statement", "source", "difference", "test", 0.01, "none", 0.25, 0.001, 3.0, outcome, measured
    )


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
        ((H, NS, H), scorecard.PARTLY),
        ((H, C, H), scorecard.PARTLY),
        ((NS, C, NS), scorecard.NOT_REPRODUCED),
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


def test_a_claim_without_verdicts_is_not_tested_and_says_so():
    answer = scorecard.answer(CLAIM, {"oneshot": [verdict("1", H)]})
    assert answer.answer == scorecard.NOT_TESTED and "no chapter of this run tests it" in answer.summary()


def test_the_markdown_names_every_test_and_what_the_failing_ones_measured():
    claims = [ChapterClaims("hmc", "paper", [verdict("1 (4 paths)", H), verdict("1 (2 paths)", C, "drop of 3 % | *")])]
    answers = scorecard.answer_claims(claims, claims=(CLAIM,))
    table = scorecard.scorecard_table(answers)
    assert table.count("\n") == 2 and "{doc}`hmc` 1 (4 paths): **holds**" in table
    assert "partly reproduced: 1 of 2 tests hold, 0 not significant, 1 contradicted" in table
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
        for chapter, selector in claim.tests:
            record = json.loads((ROOT / "tests" / "paper_records" / f"{chapter}.json").read_text())
            values = record["results"]["values"]
            # a diagnostic (an agreement test without power in that run) is a claim of runs with more power
            recorded = [v["claim"] for v in values["verdicts"] + values.get("diagnostics", [])]
            if not any(scorecard.selects(selector, name) for name in recorded):
                missing.append(f"{claim.key}: {chapter} {selector}")
    assert not missing, f"paper claims name tests that no record holds: {missing}"
