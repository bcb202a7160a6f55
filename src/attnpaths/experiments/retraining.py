"""Claim R: a model trained again from the same seeds is another draw of the same training (sec-repro-classes).

The book's chapters use shipped trained weights. A reader who retrains (the ``retrain`` parameter of the
chapters that train) gets other float32 rounding, hence another model; what can be promised is that the
retrained models are as good as the shipped ones *within the spread between training seeds*. The test pairs
each retrained model with the shipped model of the same seed and compares a statistic of the two (e.g. test
accuracy): :func:`attnpaths.claims.replicate_equivalence` of the paired differences against a margin of
``margin_sd`` times the measured standard deviation of that statistic across the shipped seeds.

Identical models (retrained on the machine that trained the shipped ones, same process layout) give zero
differences and the claim holds exactly; a retrained set that is systematically worse (another training, a
changed model) is contradicted once its shift exceeds the margin by the test's threshold.
"""

from __future__ import annotations

import numpy as np

from .._validation import as_float64_array, int_at_least, numpy_generator, positive_real, probability
from ..claims import Outcome, Verdict, exact, replicate_equivalence

SOURCE = "derived in this book (reproducibility of trained models)"


def _paired(shipped, retrained) -> tuple[np.ndarray, np.ndarray]:
    a = as_float64_array(shipped, "shipped", ndim=1)
    b = as_float64_array(retrained, "retrained", ndim=1)
    if a.size < 2:
        raise ValueError(f"shipped must hold the statistic of at least 2 seeds, got {a.size}")
    if b.shape != a.shape:
        raise ValueError(f"retrained must have the shape of shipped {a.shape} (one value per seed), got {b.shape}")
    return a, b


def seed_spread(shipped) -> float:
    """The standard deviation (``ddof = 1``) of a statistic across the shipped seeds' models ``[S]``."""
    a = as_float64_array(shipped, "shipped", ndim=1)
    if a.size < 2:
        raise ValueError(f"shipped must hold the statistic of at least 2 seeds, got {a.size}")
    return float(a.std(ddof=1))


def retraining_agreement(
    claim: str, *, shipped, retrained, statistic: str, margin_sd: float = 1.0, level: float = 0.05, what: str = "models"
) -> Verdict:
    """Claim: retrained models agree with the shipped ones of the same seeds within the spread across seeds.

    Args:
        shipped, retrained: ``[S]`` (``S >= 2``) the statistic of each seed's shipped and retrained model, in
            the same seed order.
        statistic: its name (e.g. ``"test accuracy"``).
        margin_sd: the margin in units of :func:`seed_spread` of ``shipped`` (> 0).
        level: the level of each of the two one-sided tests.
        what: the models in words, for the statement.

    Test: :func:`attnpaths.claims.replicate_equivalence` of ``retrained - shipped`` (one replicate per seed)
    against reference 0 and margin ``margin_sd * seed_spread(shipped)``. Identical models (all differences 0)
    hold; when the shipped seeds do not differ at all (zero spread), only identical models can hold.
    """
    a, b = _paired(shipped, retrained)
    margin_sd = positive_real(margin_sd, "margin_sd")
    spread = seed_spread(a)
    statement = (
        f"{what} retrained from the shipped models' seeds agree with them in {statistic} within "
        f"{margin_sd:g} standard deviation(s) across seeds"
    )
    d = b - a
    if spread == 0 or np.all(d == 0):
        identical = bool(np.all(d == 0))
        return exact(
            claim,
            statement,
            source=SOURCE,
            statistic=f"max |retrained - shipped {statistic}|",
            value=float(np.abs(d).max()),
            satisfied=identical,
            criterion="every retrained value equals its shipped value (identical models, no sampling error)",
            measured=f"{'every' if identical else 'not every'} retrained {statistic} equals the shipped one "
            f"({a.size} seeds; spread across seeds {spread:.3g}).",
        )
    return replicate_equivalence(
        claim,
        statement,
        source=SOURCE,
        statistic=f"retrained - shipped {statistic}",
        replicates=d,
        reference=0.0,
        margin=margin_sd * spread,
        level=level,
        measured=(
            f"mean retrained - shipped {statistic} = {d.mean():+.4g} (sd {d.std(ddof=1):.3g} over {d.size} "
            f"seeds); spread of the shipped models across seeds {spread:.3g}, margin {margin_sd * spread:.3g}."
        ),
    )


def retraining_power(
    num_seeds: int,
    *,
    shift_sd: float,
    margin_sd: float = 1.0,
    level: float = 0.05,
    draws: int = 2000,
    rng: np.random.Generator,
) -> dict:
    """The power check of :func:`retraining_agreement`, by simulation: shipped and retrained statistics of
    ``num_seeds`` seeds drawn as independent Gaussians of one standard deviation across seeds (the retrained
    ones shifted by ``shift_sd`` standard deviations), the claim decided on each of ``draws`` draws.

    Returns:
        ``{"contradicted": fraction of draws contradicted, "holds": fraction holding}``; at ``shift_sd = 0``
        the first is the false-alarm rate of a correct retraining, at a shift it is the power.
    """
    num_seeds = int_at_least(num_seeds, "num_seeds", 2)
    shift_sd = float(as_float64_array(shift_sd, "shift_sd"))
    draws = int_at_least(draws, "draws", 1)
    rng = numpy_generator(rng, "rng")
    probability(level, "level", open_interval=True)
    counts = {Outcome.CONTRADICTED: 0, Outcome.HOLDS: 0, Outcome.NOT_SIGNIFICANT: 0}
    for _ in range(draws):
        shipped = rng.standard_normal(num_seeds)
        retrained = rng.standard_normal(num_seeds) + shift_sd
        verdict = retraining_agreement(
            "R", shipped=shipped, retrained=retrained, statistic="x", margin_sd=margin_sd, level=level
        )
        counts[verdict.outcome] += 1
    return {"contradicted": counts[Outcome.CONTRADICTED] / draws, "holds": counts[Outcome.HOLDS] / draws}


__all__ = ["SOURCE", "retraining_agreement", "retraining_power", "seed_spread"]
