"""Claims as statistical tests: one verdict type for every chapter.

A claim of the book is a statement about a measured quantity together with a test that a wrong result
would fail. Every check of every chapter returns a :class:`Verdict`: what is claimed, where the claim comes
from, the statistic, the test and its criterion, the level with its multiple-comparison correction, the
measured value with its p-value or z-score, and one of three outcomes (:class:`Outcome`):

* ``holds``: the claim is supported at the stated level;
* ``not significant``: the data neither support nor contradict it at that level;
* ``contradicted``: the data contradict it at that level.

Constructors for the tests the book uses, each described on its own: :func:`directional_z` (one-sided z-test of
an estimate's sign), :func:`replicate_t` (one-sided t-test over independent replicates), :func:`permutation`,
:func:`equivalence` and :func:`replicate_equivalence` (agreement within a margin, TOST), :func:`exact` (a
deterministic inequality), :func:`positive_difference` (:func:`exact` on one data set, :func:`replicate_t` over
several) and :func:`all_of` (parts that must all hold).

Power checks say how likely a test is to hold when its claim is true: :func:`detectable_effect`,
:func:`equivalence_power`, :func:`replicate_equivalence_power`, and :func:`power_check` with its sentence
(:class:`PowerCheck`); :func:`agreement_power` and :func:`verdict_detectable_effect` read them from a recorded
verdict's inputs (below ``MIN_POWER`` an agreement test is a diagnostic, not a claim).

:func:`rederive` decides a recorded verdict again from the numbers stored with it (``Verdict.inputs``).
:func:`enforce` turns the verdicts a profile requires into a single :class:`ClaimViolation`;
:func:`by_outcome` picks the words of a sentence by a verdict's outcome; :func:`outcome_counts` counts them. The
book renders verdicts as Markdown tables with its companion (``attnpaths_book.claims_markdown``).
"""

from ._power import (
    MIN_POWER,
    PowerCheck,
    agreement_power,
    detectable_effect,
    equivalence_power,
    power_check,
    replicate_equivalence_power,
    verdict_detectable_effect,
)
from ._tests import (
    all_of,
    directional_z,
    equivalence,
    exact,
    monte_carlo_draws,
    permutation,
    permutation_p_values,
    positive_difference,
    rederive,
    replicate_equivalence,
    replicate_t,
)
from ._verdict import LEVEL, ClaimViolation, Outcome, Verdict, bonferroni_z, by_outcome, enforce, outcome_counts

__all__ = [
    "LEVEL",
    "MIN_POWER",
    "ClaimViolation",
    "Outcome",
    "PowerCheck",
    "Verdict",
    "agreement_power",
    "all_of",
    "bonferroni_z",
    "by_outcome",
    "detectable_effect",
    "directional_z",
    "enforce",
    "equivalence",
    "equivalence_power",
    "exact",
    "monte_carlo_draws",
    "outcome_counts",
    "permutation",
    "permutation_p_values",
    "positive_difference",
    "power_check",
    "rederive",
    "replicate_equivalence",
    "replicate_equivalence_power",
    "replicate_t",
    "verdict_detectable_effect",
]
