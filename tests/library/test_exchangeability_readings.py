"""The sentences the exchangeability chapter states from its E3 and E4 verdicts
(attnpaths.exchangeability.claims.length_reading and transfer_reading) follow the verdicts' outcomes."""

from types import SimpleNamespace

from attnpaths.claims import Outcome
from attnpaths.exchangeability import claims as V

HOLDS, NS, CONTRADICTED = Outcome.HOLDS, Outcome.NOT_SIGNIFICANT, Outcome.CONTRADICTED


def verdict(claim, outcome):
    return SimpleNamespace(claim=claim, outcome=outcome)


def test_the_length_reading_names_the_objectives_of_each_outcome_in_order():
    both = V.length_reading({"supervised": verdict("E3.3-supervised", HOLDS), "masked": verdict("E3.3-masked", HOLDS)})
    assert both == (
        "It holds here for the supervised and the masked objective: the excess is lower at the largest L in this "
        "instance, which does not show that the paper's bound holds, or how it depends on N."
    )
    mixed = V.length_reading(
        {"supervised": verdict("E3.3-supervised", CONTRADICTED), "masked": verdict("E3.3-masked", NS)}
    )
    assert mixed == (
        "It is not significant for the masked objective: the data do not show a difference either way, and cannot "
        "show that the paper's bound holds, or how it depends on N. It is contradicted for the supervised "
        "objective: the excess grows with L in this instance, against this consequence of the claim."
    )


def test_the_transfer_reading_concludes_only_when_both_claims_hold():
    assert V.transfer_reading(verdict("E4.1", HOLDS), verdict("E4.2", HOLDS)) == (
        "Both hold: a good pretraining loss hides a poorly conditioned downstream problem in this instance."
    )
    assert V.transfer_reading(verdict("E4.1", HOLDS), verdict("E4.2", NS)) == (
        "Not both hold in this run (E4.1 holds, E4.2 not significant), so it does not show that a good "
        "pretraining loss hides a poorly conditioned downstream problem."
    )
