"""Claims as statistical tests: one verdict type for every chapter.

A claim of the book is a statement about a measured quantity together with a test that a wrong result
would fail. Every check of every chapter returns a :class:`Verdict`: what is claimed, where the claim comes
from, the statistic, the test and its criterion, the level with its multiple-comparison correction, the
measured value with its p-value or z-score, and one of three outcomes (:class:`Outcome`):

* ``holds``: the claim is supported at the stated level;
* ``not significant``: the data neither support nor contradict it at that level;
* ``contradicted``: the data contradict it at that level.

Constructors for the tests the book uses:

* :func:`directional_z`: a one-sided z-test of the sign of an estimate with a standard error (e.g. a paired
  accuracy difference on one test set);
* :func:`replicate_t`: a one-sided t-test of the mean of independent replicates (e.g. one difference per
  independently drawn data set);
* :func:`permutation`: a claim decided by two one-sided permutation p-values (greater, smaller);
* :func:`equivalence`: agreement of estimates with references within a stated margin, entry by entry
  (two one-sided tests, TOST, with a Bonferroni correction over the entries);
* :func:`replicate_equivalence`: agreement of the mean of a few independent replicates with a reference
  within a stated margin (TOST with Student's t);
* :func:`exact`: a deterministic inequality between numbers that carry no sampling error at fixed inputs;
* :func:`positive_difference`: a difference that is positive, by :func:`exact` on one data set and by
  :func:`replicate_t` over several;
* :func:`all_of`: a claim whose parts must all hold.

Power checks say how likely a test is to hold when its claim is true: :func:`detectable_effect` (the smallest
effect a directional test detects with a stated power), :func:`equivalence_power` (the chance that an agreement
test holds at zero deviation) and :func:`power_check`, which states either of them, for one case or several, as a
:class:`PowerCheck` with its sentence. :func:`agreement_power` reads the power of a recorded agreement verdict for a
correct result from its inputs: below ``MIN_POWER`` the test is a diagnostic, not a claim;
:func:`verdict_detectable_effect` reads the detectable effect of a recorded directional verdict from its inputs.

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
