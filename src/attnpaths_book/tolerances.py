"""How far each number of a chapter may move on another machine: the reproducibility classes and their
tolerances, in one table (sec-repro-classes).

A number of the book belongs to one of four classes:

- **exact** (class a): integers, strings, verdict outcomes, choices among a few options, and on the same
  machine every number for any engine and worker count. On another machine exact numbers stay exact.
- **rounding** (class b): float64 computations from the same inputs (seeded data, shipped weights). Another CPU
  takes other summation orders and other vector kernels (BLAS, torch's ATen, numpy's SIMD loops), so the last
  bits move, amplified by the conditioning of the computation. Compared with a relative tolerance where the
  quantity is well conditioned, and with an absolute one on the scale of the terms where it is a difference of
  nearly equal numbers (which a relative tolerance would wrongly call a large change).
- **trained** (class c): a model trained on this machine is another model than the shipped one; with the shipped
  weights (the default) everything downstream is class b, except counts of float32 outputs near a decision
  boundary (an accuracy moves by whole test items when an output within float32 rounding of 0 changes sign).
- **monte carlo** (class d): posterior samples and simulations. A chain that differs in one bit diverges, so
  on another machine they agree within their Monte-Carlo error, not within rounding; a verdict computed from
  them keeps its outcome unless it sits at its threshold.

``TABLE`` lists, per chapter and results key, the class, the tolerance and the reason; the first rule
whose pattern matches a leaf decides. :func:`compare_results` compares two results files (or paper records)
by that table; the nbval test, the paper-record test and ``record-paper`` use it.
"""

from __future__ import annotations

import fnmatch
import math
import re
from dataclasses import dataclass

from attnpaths_book.numeric_diff import MISSING, NUMBER, flatten, is_number, is_volatile

CLASSES = ("exact", "rounding", "trained", "monte carlo")
"""The reproducibility classes (see the module docstring)."""


@dataclass(frozen=True)
class Tolerance:
    """One rule of ``TABLE``.

    Attributes:
        pattern: ``"<chapter>:<path>"`` with shell wildcards (``fnmatch``), matched against a leaf's path
            in the results file with its list indices removed (``values.grid.accuracy.test``).
        cls: one of :data:`CLASSES`.
        rtol, atol: a number ``new`` agrees with ``old`` when ``|new - old| <= atol + rtol |old| + floor s``.
        floor: the fraction ``floor`` of ``s``, the largest magnitude among the leaves of the same key (the
            entries of one array): an entry that is a small difference of large numbers carries rounding of the
            array's scale, not of its own.
        reason: why the tolerance is what it is.
        se: for a Monte-Carlo estimate, ``(regex, replacement)`` turning the leaf's path into the path of its
            standard error; the leaf then agrees within :data:`MC_Z` combined standard errors of the two versions
            (``None``: no standard error).
        words: whether a text leaf must keep its words (its numbers set apart, see :meth:`agrees`); False for
            a description of Monte-Carlo results whose words name what the draws decide (the entry where the
            largest deviation falls), which another machine's chains may place elsewhere.
    """

    pattern: str
    cls: str
    rtol: float
    atol: float
    floor: float
    reason: str
    se: tuple | None = None
    words: bool = True

    def __post_init__(self):
        if self.cls not in CLASSES:
            raise ValueError(f"cls must be one of {CLASSES}, got {self.cls!r}")
        if not (self.rtol >= 0 and self.atol >= 0 and self.floor >= 0):
            raise ValueError(f"rtol, atol and floor must be >= 0, got {self.rtol!r}, {self.atol!r}, {self.floor!r}")

    def bound(self, old: float, scale: float = 0.0) -> float:
        """The largest ``|new - old|`` that agrees with ``old`` (``scale``: see ``floor``)."""
        if math.isinf(self.atol) or math.isinf(self.rtol):
            return math.inf  # not compared (inf * 0 would be nan)
        return self.atol + self.rtol * abs(old) + self.floor * scale

    def agrees(self, old, new, scale: float = 0.0) -> bool:
        """Whether ``new`` agrees with ``old`` under this rule. Numbers: within :meth:`bound`. Text: equal once
        its numbers are set apart, and each number within :meth:`bound` plus one unit of its last printed digit
        (a printed number moves by a unit when its value crosses a rounding boundary); with ``words`` False, any
        text. Anything else: equal."""
        if is_number(old) and is_number(new):
            if math.isnan(old) or math.isnan(new):
                return math.isnan(old) and math.isnan(new)
            if math.isinf(old) or math.isinf(new):
                return old == new
            return abs(new - old) <= self.bound(old, scale)
        if isinstance(old, str) and isinstance(new, str) and old != new:
            return not self.words or self._same_text(old, new)
        return type(old) is type(new) and old == new

    def _same_text(self, old: str, new: str) -> bool:
        old_text, old_numbers = NUMBER.split(old), NUMBER.findall(old)
        new_text, new_numbers = NUMBER.split(new), NUMBER.findall(new)
        if old_text != new_text or len(old_numbers) != len(new_numbers) or self.cls == "exact":
            return False
        for a, b in zip(old_numbers, new_numbers):
            x, y = float(a), float(b)
            if not (math.isfinite(x) and math.isfinite(y)):
                if a != b:
                    return False
                continue
            if abs(y - x) > self.bound(x) + max(_last_digit_unit(a), _last_digit_unit(b)):
                return False
        return True


def _last_digit_unit(text: str) -> float:
    """The value of one unit in the last digit of a printed number (``"0.125"`` -> 0.001, ``"1.5e-03"`` -> 1e-4)."""
    mantissa, _, exponent = text.lower().partition("e")
    decimals = len(mantissa.split(".", 1)[1]) if "." in mantissa else 0
    return 10.0 ** (int(exponent or 0) - decimals)


ROUNDING_RTOL = 1e-9
"""The relative tolerance of class b, for float64 results of Newton solves, Cholesky factors and kernel sums from the
same inputs. Rounding contributes ~1e-16 per operation; another summation order moves results by the condition
number times that (measured between two CPU dispatches: at most 2e-12 relative on the theory's U, 5e-11 on
finite-width shifts), so 1e-9 leaves a wide margin while a real change (a factor, a sign, another minimum) is
many orders larger."""

ROUNDING_FLOOR = 1e-12
"""Entries of an array may also move by this fraction of the array's largest magnitude (an off-diagonal U near the
GP limit, a small PC overlap: differences of large numbers carry rounding of the array's scale)."""

ROUNDING_ATOL = 1e-12
"""The absolute floor of class b, for numbers that are zero up to rounding and so have no relative scale."""

MC_Z = 5.0
"""The z threshold of a Monte-Carlo estimate against its other version, ``|a - b| <= MC_Z sqrt(se_a^2 + se_b^2)``.
A false alarm has probability 5.7e-7 per entry for normal estimates, under 1e-3 for the few hundred compared."""

NOT_COMPARED = math.inf
"""The tolerance of a number whose other version carries no information beyond what is compared elsewhere."""

_SAMPLED_VERDICTS = (
    "Claims on posterior samples move with the chains (their inputs are compared within "
    "Monte-Carlo error above); what must not move is the outcome, compared exactly (the numbers "
    "in a verdict's words are not compared)"
)


def _estimate(pattern: str, what: str, se: tuple) -> Tolerance:
    """A Monte-Carlo estimate with its standard error at the path ``se`` gives (class d)."""
    return Tolerance(pattern, "monte carlo", 0.0, 0.0, 0.0, f"{what}: within MC_Z combined standard errors", se=se)


def _rules(cls: str, rtol: float, atol: float, floor: float, reason: str, *patterns: str) -> tuple[Tolerance, ...]:
    """One rule per pattern, all alike."""
    return tuple(Tolerance(p, cls, rtol, atol, floor, reason) for p in patterns)


def _not_compared(reason: str, *patterns: str) -> tuple[Tolerance, ...]:
    """Monte-Carlo numbers that are not compared (class d), for ``reason``."""
    return _rules("monte carlo", NOT_COMPARED, NOT_COMPARED, 0.0, reason, *patterns)


TABLE: tuple[Tolerance, ...] = (
    # class d: estimates with their standard error beside them
    _estimate(
        "*:values*.U_sampled.*",
        "posterior mean of U from the network's samples (its se: the sampler's U_mc_se)",
        (r"U_sampled\.([^.\[]+)", r"sampler.\1.U_mc_se"),
    ),
    _estimate(
        "*:values*_exact.*.U",
        "exact finite-width mean of U from the order-parameter sampler",
        (r"\.U(\[|$)", r".U_mc_se\1"),
    ),
    _estimate("*:values*_sampled.*.U", "posterior mean of U from the network's samples", (r"\.U(\[|$)", r".U_mc_se\1")),
    _estimate(
        "*:values*sampled_accuracy.accuracy",
        "accuracy of the sampled predictor (its se: mc_sd)",
        (r"\.accuracy(\[|$)", r".mc_sd\1"),
    ),
    _estimate(
        "*:values*_sampled.*.accuracy", "accuracy of the sampled predictor (its se: mc_sd)", (r"\.accuracy$", ".mc_sd")
    ),
    _estimate(
        "hmc:values.finite_width_shift.exact_relative_diagonal_shift",
        "finite-width shift of the exact mean",
        ("exact_relative_diagonal_shift", "exact_relative_mc_se"),
    ),
    _estimate(
        "hmc:values.predictor_variance.*.sampled",
        "test-set average of the sampled networks' predictive variance (its se: sampled_mc_se)",
        (r"\.sampled$", ".sampled_mc_se"),
    ),
    _estimate(
        "hmc:values.predictor_variance.*.exact",
        "test-set average of the predictive variance from the exact order-parameter density (its se: exact_mc_se)",
        (r"\.exact$", ".exact_mc_se"),
    ),
    _estimate(
        "hmc:values.finite_width_shift.relative_diagonal_shift",
        "finite-width shift of the sampled mean",
        ("relative_diagonal_shift", "relative_mc_se"),
    ),
    # class d: diagnostics and statistics of one chain
    *_not_compared(
        "diagnostic of one chain (effective sample size, R-hat, acceptance, Monte-Carlo error): another "
        "chain, e.g. on another machine, gives another estimate; the claims that use it are compared by "
        "their outcome",
        *("*_ess", "*rhat", "*acceptance", "*_mc_se", "*.mc_sd", "*.relative_mc_se"),
    ),
    *_not_compared(
        "a statistic of posterior samples against the theory (z of U, the pattern's correlation, sampled "
        "copies of glued numbers, the power of a claim on samples): it moves with the chains; the verdict "
        "that uses it is compared by its outcome",
        "hmc:values.saddle_U_z_max.*",
        "hmc:values.glued.Us_*",
        "*:values.glued.max_sampled_diff",
        "hmc:values.power_checks.2*",
        "depth:values.claim_*_power.*",
        "hmc:values.predictor_variance.*.relative_deviation",
        "hmc:values.predictor_variance.*.exact_relative_deviation",
        "hmc:values.glued.variance_exact_dev_*",
        "hmc:values.glued.variance_saddle_exact_*",
        "oneshot:values.exact_widths.samples_distance*",
        "oneshot:values.exact_widths.saddle_distance*",
        "oneshot:values.exact_widths.claim2e_power*",
        "hmc:values.glued.variance_dev_*",
        "hmc:values.glued.variance_z_*",
        "hmc:values.glued.saddle_ratio",
        "oneshot:values.glued.U_theory_sampled_r",
        "oneshot:values.U_pattern_theory_vs_sampled.*",
        "oneshot:values.claim2_power.*",
        "oneshot:values.saddle_deviation.r",
        "oneshot:values.saddle_deviation.se",
        "oneshot:values.entropy_weight.wrong.*",
    ),
    *_not_compared(
        "draws per chain that a sampler kept when its precision target stopped it (sequential stopping, "
        "attnpaths.experiments.sampling.PrecisionTarget): another chain meets the target at another look; "
        "the precision reached is compared through the standard errors above",
        "hmc:values*sampler.*.num_samples",
        "depth:values.*_sampled.*.num_samples",
        "depth:values.*_exact.*num_samples",
    ),
    *(
        Tolerance(
            f"{chapter}:values.{key}.*measured",
            "monte carlo",
            NOT_COMPARED,
            NOT_COMPARED,
            0.0,
            "the measured numbers of a claim on posterior samples, in words that name where the chains put the "
            "largest deviation (another CPU's chains may put it on another entry of U); the claim's outcome is "
            "compared exactly below",
            words=False,
        )
        for chapter in ("hmc", "depth", "oneshot")
        for key in ("verdicts", "diagnostics", "wrong_action_checks")
    ),
    *_not_compared(
        _SAMPLED_VERDICTS,  # a diagnostic is a verdict set aside
        *(
            f"{chapter}:values.{key}.*"
            for chapter in ("hmc", "depth", "oneshot")
            for key in ("verdicts", "diagnostics", "wrong_action_checks")
        ),
    ),
    # class c, downstream of the shipped weights
    Tolerance(
        "oneshot:values.gd_accuracy.*",
        "trained",
        0.0,
        0.005,
        0.0,
        "accuracy of the float32 network (shipped weights): an output within float32 rounding of 0 may "
        "change sign on another CPU and move the accuracy by one episode of the smallest split (200)",
    ),
    Tolerance(
        "oneshot:values.glued.gd_*", "trained", 0.0, 0.5, 0.0, "the same accuracies in percent: one episode of 200"
    ),
    Tolerance(
        "oneshot:values.pruning.*",
        "trained",
        0.0,
        0.005,
        0.0,
        "accuracies of the float32 network with heads dropped: one episode of the smallest split (200)",
    ),
    Tolerance(
        "oneshot:values.little_loss.tuned_df",
        "trained",
        1.0,
        0.0,
        0.0,
        "Welch-Satterthwaite degrees of freedom of the fine-tuned models' standard error (sec-oneshot-little-loss): "
        "where the seeds' share of the variance is near 0 one episode that changes its outcome after fine-tuning on "
        "another CPU can move it from near the number of episodes to near the number of seeds; the verdict that "
        "uses it is compared by its outcome",
    ),
    *(
        Tolerance(
            pattern,
            "trained",
            0.0,
            atol,
            0.0,
            "brief fine-tuning of the shipped model with heads pruned (sec-oneshot-little-loss): float32 Adam steps "
            "run on this machine, so another CPU fine-tunes another model. Measured on the paper profile (100 steps "
            "from the shipped weights, every weight moved by one float32 rounding, 2^-24 relative, three times): "
            "no episode of 4000 changed its outcome and the losses moved by at most 2.4e-7; the tolerance allows "
            "one episode of the smallest split (200) on accuracies and their differences, 1e-3 on the losses"
            + (" (percent: 0.5)" if atol == 0.5 else ""),
        )
        for pattern, atol in (
            ("oneshot:values.little_loss.final_loss.*", 1e-3),
            ("oneshot:values.little_loss.tuned_*", 0.005),
            ("oneshot:values.little_loss.control_*", 0.005),
            ("oneshot:values.glued.ll_control*", 0.5),
        )
    ),
    Tolerance(
        "oneshot:values.little_loss.*",
        "trained",
        0.0,
        0.005,
        0.0,
        "accuracies of the float32 network (shipped weights) with heads pruned, their differences and standard "
        "errors (sec-oneshot-little-loss): an output within float32 rounding of 0 may change sign on another CPU "
        "and move an accuracy by one episode of the smoke profile's 200; for the paper profile's 4000 episodes the "
        "same absolute tolerance allows 20 episodes, a margin kept for float32 outputs near 0",
    ),
    Tolerance(
        "oneshot:values.glued.ll_base",
        "trained",
        0.0,
        0.5,
        0.0,
        "the unpruned model's accuracy on the pruning episodes in percent: one episode of 200",
    ),
    Tolerance(
        "own_model:values.*",
        "trained",
        3e-5,
        1e-9,
        3e-5,
        "a float64 model trained in the chapter by Adam (no shipped weights: it trains in seconds, and the "
        "page shows the training a practitioner writes): the last-bit differences of another CPU grow "
        "through the training steps. Measured spread, as the largest |difference| over the largest entry of "
        "the same key: 150 steps, two CPU dispatches of one machine (AVX-512 and AVX2): 8e-10 on U; 600 "
        "steps (the paper profile), the two dispatches: 9.4e-7 on U, 2.9e-6 on the training loss, 4.8e-7 on "
        "the head scores; 600 steps on an AMD EPYC against the recording Intel Xeon: 2.6e-6 on U. The "
        "tolerance, relative and on the entries' scale, is ten times the largest of these; counts of test "
        "images would move only if an output that close to 0 changed sign",
    ),
    # class b with a reason of its own
    Tolerance(
        "pruning:values.*.scores.theory_removal",
        "rounding",
        ROUNDING_RTOL,
        1e-9,
        ROUNDING_FLOOR,
        "the removal score is a difference of two held-out mean squared losses of order 1 (labels +-1), "
        "r_h = L_h - L (eq-removal-score): it carries the rounding of the losses, ROUNDING_RTOL of their scale, "
        "not of the difference, so ROUNDING_RTOL of that scale (1) is its absolute tolerance. Measured: the "
        "solver's Gram route against its feature route moves it by at most 2.9e-11 absolute (1.4e-9 of a score "
        "of 0.021)",
    ),
    *_rules(
        "rounding",
        0.0,
        1e-10,
        0.0,
        "the largest relative difference between the Gram route and the P x P route: rounding noise of two "
        "computations (4.8e-12 on one dispatch, 9.1e-12 under AVX2), whose digits mean nothing; only that it "
        "stays below the structural check's tolerance (1e-10) does",
        "learning_curves:values.route_checks.*",
        "learning_curves:values.glued.route_worst",
        "learning_curves:values.structural_checks*",
    ),
    Tolerance(
        "*gradient_norm*",
        "rounding",
        0.0,
        1e-8,
        0.0,
        "the gradient norm at a certified minimum is zero up to rounding (1e-13 .. 1e-9): only that it is "
        "below the solver's tolerance (1e-8) means anything, not its digits",
    ),
    Tolerance("theory:values.glued.max_grad", "rounding", 0.0, 1e-8, 0.0, "the largest gradient norm: as above"),
    *_rules(
        "rounding",
        ROUNDING_RTOL,
        1e-8,
        0.0,
        "the theory chapter's verdicts: claim T1's value (and the number in its words) is the largest gradient "
        "norm, as above (9.5e-10 on one dispatch, 9.8e-10 under the portable one); claim T4's is a deviation of "
        "order 0.1, which 1e-8 still holds to 1e-7 relative (list indices are not part of a rule's path, so "
        "one rule covers both)",
        "theory:values.verdicts.value",
        "theory:values.verdicts.inputs.value",
        "theory:values.verdicts.measured",
    ),
    Tolerance(
        "*iterations*",
        "rounding",
        0.0,
        1.0,
        0.0,
        "Newton iterations until the gradient norm falls below the solver's tolerance: where the last step "
        "lands near that tolerance, rounding decides whether one more is taken (one-shot grid: +-1 seen "
        "between CPU dispatches)",
    ),
    Tolerance(
        "*perm_diff*",
        "rounding",
        0.0,
        ROUNDING_ATOL,
        0.0,
        "change of a prediction under a permutation of the tokens: zero up to rounding",
    ),
    *_rules(
        "rounding",
        0.0,
        ROUNDING_ATOL,
        0.0,
        "a deviation that is zero up to rounding (uniform attention against 1/T, two equal posteriors' "
        "weights and outputs): no relative scale",
        "model:values.uniform_deviation",
        "related:values.R5_bayes.max_weight_diff",
        "related:values.R5_bayes.max_output_diff",
    ),
    Tolerance(
        "related:values.R1_rank_collapse.residual_pure",
        "rounding",
        0.0,
        1e-14,
        0.0,
        "residual of pure attention after collapse: zero up to the rounding of unit-scale vectors",
    ),
    Tolerance(
        "related:values.R4_measures.duplication_diff",
        "rounding",
        0.0,
        1e-14,
        0.0,
        "difference of two equal measures: zero up to the rounding of unit-scale numbers",
    ),
    *_rules(
        "rounding",
        1e-6,
        1e-6,
        0.0,
        "logs of ratios of residuals that shrink towards rounding (to ~1e-10): a residual's relative "
        "precision, hence the log's absolute one, is the rounding of unit-scale vectors over the residual",
        "related:values.R1_rank_collapse.log_ratios",
        "related:values.glued.r1_*",
        "related:values.verdicts.*",
        "related:values.diagnostics.*",
    ),
    *_rules(
        "rounding",
        0.0,
        1e-8,
        0.0,
        "empirical risk minimisers found by a trust-region method to a gradient norm of 1e-9: on another "
        "machine it stops at another point within that tolerance, moving risks by ~1e-9 on a unit scale "
        "(absolute: the excess risk is a difference of two nearly equal risks, where a relative "
        "tolerance is the wrong yardstick)",
        "exchangeability:values.E3_erm.*",
        "exchangeability:values.glued.e3_*",
    ),
    *(
        Tolerance(
            f"exchangeability:values.{key}.*",
            "rounding",
            1e-5,
            1e-12,
            0.0,
            "statistics of tests on the minimisers' excess risks, which carry the solver's tolerance (1e-8 on "
            "risks of ~1e-3: 1e-5 relative)",
        )
        for key in ("verdicts", "diagnostics")
    ),
    Tolerance(
        "*",
        "rounding",
        ROUNDING_RTOL,
        ROUNDING_ATOL,
        ROUNDING_FLOOR,
        "float64 from the same inputs (ROUNDING_RTOL, ROUNDING_FLOOR)",
    ),
)
"""The rules, most specific first; the last one is the default of every number (shown as a table in the
reproducibility chapter, not on the API page: its regular expressions would read as TeX there)."""


_INDEX = re.compile(r"\[\d+\]")


def rule_for(chapter: str, path: str, table=None) -> Tolerance:
    """The first rule of ``table`` (default ``TABLE``) whose pattern matches ``<chapter>:<path>`` (list indices removed)."""
    key = f"{chapter}:{_INDEX.sub('', path)}"
    for rule in TABLE if table is None else table:
        if fnmatch.fnmatchcase(key, rule.pattern):
            return rule
    raise ValueError(f"table has no rule for {key!r}: its last rule must match everything")


@dataclass(frozen=True)
class Disagreement:
    """A leaf that moved beyond its rule: its ``path``, the ``old`` and ``new`` values and the ``rule``."""

    path: str
    old: object
    new: object
    rule: Tolerance

    def describe(self) -> str:
        """One line: path, values, the class and tolerance, and its reason."""
        old = "missing" if self.old is MISSING else repr(self.old)
        new = "missing" if self.new is MISSING else repr(self.new)
        return (
            f"{self.path}: {old} -> {new} (class {self.rule.cls}, rtol {self.rule.rtol:g}, atol "
            f"{self.rule.atol:g}: {self.rule.reason})"
        )


def compare_results(chapter: str, old: dict, new: dict, table=None) -> list[Disagreement]:
    """The leaves of two versions of a chapter's results (``values`` and ``parameters`` of a results file or a
    paper record's ``results``) that disagree beyond their rule; run times, memory, timestamps and environment
    (volatile keys, ``attnpaths_book.numeric_diff.is_volatile``) are left out."""
    a, b = flatten(old), flatten(new)
    scales: dict[str, float] = {}
    for path, value in a.items():
        if is_number(value) and math.isfinite(value):
            key = _INDEX.sub("", path)
            scales[key] = max(scales.get(key, 0.0), abs(value))
    out = []
    for path in list(a) + [p for p in b if p not in a]:
        key = _INDEX.sub("", path)
        if any(is_volatile(part) for part in key.split(".")):
            continue
        before, after = a.get(path, MISSING), b.get(path, MISSING)
        rule = rule_for(chapter, path, table)
        if before is MISSING or after is MISSING:
            out.append(Disagreement(path, before, after, rule))
        elif rule.se is not None and is_number(before) and is_number(after):
            se_path = re.sub(rule.se[0], rule.se[1], path)
            se = [version.get(se_path) for version in (a, b)]
            if not all(is_number(x) for x in se):
                out.append(Disagreement(path, before, after, rule))  # no standard error: not comparable
            elif abs(after - before) > MC_Z * math.hypot(*se) + ROUNDING_ATOL:
                out.append(Disagreement(path, before, after, rule))
        elif not rule.agrees(before, after, scales.get(key, 0.0)):
            out.append(Disagreement(path, before, after, rule))
    return out


__all__ = [
    "CLASSES",
    "Disagreement",
    "MC_Z",
    "NOT_COMPARED",
    "ROUNDING_ATOL",
    "ROUNDING_FLOOR",
    "ROUNDING_RTOL",
    "Tolerance",
    "compare_results",
    "rule_for",
]
