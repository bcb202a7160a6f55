"""The finite-width advantage near the interpolation threshold ``P = D`` (sec-learning-threshold): the theory and
the GP limit with a temperature tuned on validation data, the finite network's posterior sampled exactly, the
minimum of the advantage against ``D``, and the claims that test them.

The kernel ``K(U)`` of (eq-kernel) has rank at most ``D = N0 n_paths``; near ``P = D`` a nearly unregularised
kernel regression interpolates its training labels, and its test error peaks. Every function here works from the
Gram statistics of the training sets (:class:`attnpaths.gram.GramStatistics`), so it costs the same at any ``P``.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from tqdm import tqdm

from .._validation import as_float64_array, increasing_ints, int_at_least, positive_int, positive_real, torch_generator
from ..claims import Verdict, all_of, directional_z, equivalence, replicate_equivalence, replicate_t
from ..gram import GramStatistics
from ..order_parameter_posterior import predictive_means, sample_order_parameters
from ..streaming import gram_statistics_at
from ..theory import CertificateWarning, classification_accuracy, solve_from_statistics

SOURCE = "derived in this book (the interpolation threshold of the theory's kernel, beyond the paper)"
"""Named as the source of these claims (the paper's experiments all sit at ``P < D``)."""


def _statistics(statistics, name: str = "statistics") -> list[GramStatistics]:
    statistics = list(statistics)
    if not statistics or not all(isinstance(s, GramStatistics) and s.num_examples >= 1 for s in statistics):
        raise ValueError(f"{name} must be a non-empty sequence of GramStatistics (attnpaths.gram) of P >= 1 examples")
    return statistics


@dataclass(frozen=True)
class TemperatureScan:
    """The theory's curves over a grid of temperatures on one training stream.

    Attributes:
        sizes: ``[n_P]`` the ``P`` of the statistics; widths: ``[n_curves, n_P]`` the width of each point
            (``inf``: the GP limit); temperatures: ``[n_T]`` the grid, increasing.
        validation, test: ``[n_curves, n_P, n_T]`` accuracies of the predictor's mean (eq-predictor).
        trace_U: ``[n_curves, n_P, n_T]`` ``tr U_1`` at each solution.
        converged: ``[n_curves, n_P, n_T]`` the solver's certificates.
    """

    sizes: np.ndarray
    widths: np.ndarray
    temperatures: np.ndarray
    validation: np.ndarray
    test: np.ndarray
    trace_U: np.ndarray
    converged: np.ndarray

    @property
    def chosen(self) -> np.ndarray:
        """``[n_curves, n_P]`` index of the temperature with the best validation accuracy (the smallest of tied
        ones)."""
        return np.argmax(self.validation, axis=-1)

    @property
    def tuned_test(self) -> np.ndarray:
        """``[n_curves, n_P]`` test accuracy at the temperature chosen on the validation set."""
        return np.take_along_axis(self.test, self.chosen[..., None], axis=-1)[..., 0]

    def at_temperature(self, temperature: float) -> np.ndarray:
        """``[n_curves, n_P]`` test accuracy at one temperature of the grid (ValueError for another)."""
        found = np.flatnonzero(np.isclose(self.temperatures, temperature, rtol=1e-12, atol=0.0))
        if found.size != 1:
            raise ValueError(f"temperature must be one of the grid {self.temperatures.tolist()}, got {temperature!r}")
        return self.test[..., int(found[0])]


def temperature_scan(
    statistics: Sequence[GramStatistics],
    widths,
    temperatures: Sequence[float],
    validation: tuple,
    test: tuple,
    *,
    heads,
    variances=1.0,
    progress: bool = True,
) -> TemperatureScan:
    """Accuracy of the theory over a grid of temperatures, at every ``P`` of one training stream.

    Each curve is solved at the temperatures in increasing order, each solve started from the order parameters of
    the one before (the minimum moves little from one temperature to the next; the certificate decides each
    point).

    Args:
        statistics: the :class:`attnpaths.gram.GramStatistics` of the nested training sets, in increasing ``P``.
        widths: ``[n_curves, n_P]`` the width of each point (``inf``: the GP limit, solved without iterations).
        temperatures: the grid, increasing, each > 0.
        validation, test: ``(features [P_v, N0, n_paths], y [P_v])`` of the validation and the test set.
        heads, variances: as in :func:`attnpaths.theory.solve`.
        progress: a tqdm bar over the solves.
    """
    statistics = _statistics(statistics)
    sizes = increasing_ints([s.num_examples for s in statistics], "statistics (their P must increase)", 1)
    widths = np.asarray(widths, dtype=np.float64)
    if widths.ndim != 2 or widths.shape[1] != sizes.size or not np.all(widths > 0):
        raise ValueError(f"widths must be [n_curves, n_P = {sizes.size}] positive widths, got shape {widths.shape}")
    grid = as_float64_array(temperatures, "temperatures")
    if grid.ndim != 1 or grid.size < 2 or not np.all(grid > 0) or not np.all(np.diff(grid) > 0):
        raise ValueError(f"temperatures must be >= 2 increasing positive numbers, got {grid.tolist()}")
    shape = (widths.shape[0], sizes.size, grid.size)
    accuracy = {"validation": np.zeros(shape), "test": np.zeros(shape)}
    trace_U, converged = np.zeros(shape), np.zeros(shape, dtype=bool)
    with tqdm(total=int(np.prod(shape)), desc="temperature scan", disable=not progress, leave=False) as bar:
        for c in range(shape[0]):
            for j, stats in enumerate(statistics):
                initial = None
                for k, temperature in enumerate(grid.tolist()):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", CertificateWarning)  # recorded in `converged`
                        sol = solve_from_statistics(
                            stats, heads=heads, width=float(widths[c, j]), temperature=temperature,
                            variances=variances, initial=initial,
                        )  # fmt: skip
                    for name, (features, y) in (("validation", validation), ("test", test)):
                        accuracy[name][c, j, k] = classification_accuracy(sol.predict_mean(features), y)
                    trace_U[c, j, k] = float(np.trace(sol.U))
                    converged[c, j, k] = bool(sol.converged)
                    initial = None if math.isinf(widths[c, j]) or not sol.converged else sol.U_layers
                    bar.update()
    return TemperatureScan(sizes, widths, grid, accuracy["validation"], accuracy["test"], trace_U, converged)


def rescaled_accuracy(statistics: GramStatistics, U, trace: float, test: tuple, *, temperature: float, variances=1.0):
    """Test accuracy of the predictor (eq-predictor) at the kernel ``K(c U)`` with ``c = trace / tr U``: the
    order parameter's shape at another scale, at the same temperature. The predictor's mean depends on ``K`` and
    ``T`` through ``K / T`` only, so rescaling ``U`` is changing the regression's ridge: at the GP limit's trace,
    what remains of the theory is the shape of ``U``."""
    U = as_float64_array(U, "U")
    if U.ndim != 2 or U.shape[0] != U.shape[1]:
        raise ValueError(f"U must be a square [n_paths, n_paths] matrix, got shape {U.shape}")
    trace = positive_real(trace, "trace")
    scaled = torch.from_numpy(U * (trace / np.trace(U)))[None, None]
    features, y = test
    mean = predictive_means(statistics, scaled, features, temperature=temperature, variances=variances)[0]
    return classification_accuracy(mean, y)


@dataclass(frozen=True)
class SampledAccuracy:
    """The finite network's test accuracy from its exact posterior (:func:`sampled_network_accuracy`).

    Attributes:
        accuracy: of the posterior predictive mean over every chain's draws.
        se: its Monte-Carlo standard error (jackknife over the chains).
        trace_U, trace_U_se: the posterior mean of ``tr U_1`` and its Monte-Carlo error.
        max_rhat, min_ess: diagnostics of ``U_1``'s entries; acceptance: the Metropolis rate.
        wall_time_s: the sampling and the predictions.
    """

    accuracy: float
    se: float
    trace_U: float
    trace_U_se: float
    max_rhat: float
    min_ess: float
    acceptance: float
    wall_time_s: float

    def to_dict(self) -> dict:
        """The fields as floats (for a results file)."""
        return {k: float(v) for k, v in self.__dict__.items()}


def sampled_network_accuracy(
    statistics: GramStatistics,
    test: tuple,
    *,
    heads,
    width: float,
    temperature: float,
    generator: torch.Generator,
    variances=1.0,
    num_chains: int = 8,
    num_warmup: int = 100,
    num_samples: int = 25,
    thin: int = 2,
    progress: bool = False,
) -> SampledAccuracy:
    """Test accuracy of the width-``N`` network's posterior predictive mean: draws of ``U_1`` from the exact density
    (eq-exact-density, :func:`attnpaths.order_parameter_posterior.sample_order_parameters` from the statistics),
    and at each draw the predictor's mean at ``K(U_1)``, averaged
    (:func:`attnpaths.order_parameter_posterior.predictive_means`). Exact for the network, up to Monte-Carlo error;
    the saddle point is its large-``N`` approximation.

    The Monte-Carlo error is the jackknife over the chains of the accuracy of the pooled mean (chains are
    independent; the accuracy is a non-linear function of the mean, so the chains' accuracies alone would not do).
    """
    torch_generator(generator)
    num_chains = int_at_least(num_chains, "num_chains (at least 2: the error is a jackknife over chains)", 2)
    started = time.perf_counter()
    draws = sample_order_parameters(
        statistics=statistics, heads=heads, width=width, temperature=temperature, generator=generator,
        variances=variances, num_chains=num_chains, num_warmup=num_warmup, num_samples=num_samples, thin=thin,
        progress=progress,
    )  # fmt: skip
    features, y = test
    means = predictive_means(statistics, draws.U, features, temperature=temperature, variances=variances)
    pooled = means.mean(axis=0)
    leave_one_out = np.array([classification_accuracy((pooled * num_chains - m) / (num_chains - 1), y) for m in means])
    jackknife = math.sqrt((num_chains - 1) / num_chains * np.sum((leave_one_out - leave_one_out.mean()) ** 2))
    traces = np.trace(draws.U, axis1=2, axis2=3)  # [C, S]
    return SampledAccuracy(
        accuracy=classification_accuracy(pooled, y),
        se=jackknife,
        trace_U=float(traces.mean()),
        trace_U_se=float(traces.mean(axis=1).std(ddof=1) / math.sqrt(num_chains)),
        max_rhat=float(draws.rhat.max()),
        min_ess=float(draws.ess.min()),
        acceptance=float(draws.acceptance),
        wall_time_s=time.perf_counter() - started,
    )


def dip_position(sizes, advantage) -> float:
    """Where ``advantage`` (``[n_P]``, e.g. ``A_N - A_GP``) is smallest along ``sizes``: the vertex of the parabola
    in ``log P`` through the smallest point and its two neighbours (the smallest point itself at an end of the
    sizes, or where the three points do not open upwards). Returns ``P_min``."""
    sizes = increasing_ints(sizes, "sizes", 1)
    advantage = as_float64_array(advantage, "advantage")
    if advantage.shape != sizes.shape or sizes.size < 3:
        raise ValueError(f"advantage must be [n_P] with n_P = {sizes.size} >= 3 values, got shape {advantage.shape}")
    k = int(np.argmin(advantage))
    if k in (0, sizes.size - 1):
        return float(sizes[k])
    x, a = np.log(sizes[k - 1 : k + 2].astype(np.float64)), advantage[k - 1 : k + 2]
    curvature, slope, _ = np.polyfit(x, a, 2)
    if not curvature > 0:
        return float(sizes[k])
    return float(np.exp(np.clip(-slope / (2 * curvature), x[0], x[2])))


# --------------------------------------------------------------------------------------------------------
# claims over independently drawn training sets


def gp_wins_at(claim: str, *, theory, gp, size: int, dimension: int, what: str, level: float = 0.01) -> Verdict:
    """Claim: at ``P = size`` (near ``D``) the GP limit is more accurate than ``what`` (the theory at a fixed
    temperature, or the sampled networks): a one-sided t-test over the training sets of ``A_GP - A > 0``."""
    return _more_accurate(claim, "the GP limit", what, size, dimension, level, *reversed(_pair(theory, gp)))


def theory_wins_at(claim: str, *, theory, gp, size: int, dimension: int, what: str, level: float = 0.01) -> Verdict:
    """Claim: at ``P = size`` ``what`` (e.g. the theory with its temperature tuned on validation) is more accurate
    than the GP limit (likewise tuned): a one-sided t-test over the training sets of ``A - A_GP > 0``."""
    return _more_accurate(claim, what, "the GP limit", size, dimension, level, *_pair(theory, gp))


def _more_accurate(claim, better, worse, size, dimension, level, better_accuracy, worse_accuracy) -> Verdict:
    statistic = "A_GP - A" if better == "the GP limit" else "A - A_GP"
    return replicate_t(
        claim,
        f"at P = {size} (P / D = {size / dimension:.2f}) {better} is more accurate than {worse}",
        source=SOURCE,
        statistic=f"{statistic} at P = {size}",
        differences=better_accuracy - worse_accuracy,
        level=level,
    )


def _pair(theory, gp) -> tuple[np.ndarray, np.ndarray]:
    theory, gp = as_float64_array(theory, "theory").ravel(), as_float64_array(gp, "gp").ravel()
    if theory.shape != gp.shape or theory.size < 2:
        raise ValueError(f"theory and gp must be [n_sets] of one shape, n_sets >= 2, got {theory.shape}, {gp.shape}")
    return theory, gp


def networks_agree(
    claim: str,
    *,
    theory,
    sampled,
    size: int,
    margin: float,
    level: float = 0.01,
    what: str = "the theory's test accuracy",
    quantity: str = "A",
) -> Verdict:
    """Claim: at ``P = size`` ``what`` equals the sampled networks' within ``margin``: two one-sided t-tests over
    the training sets of the differences ``theory - sampled`` (the Monte-Carlo error of the samples is part of
    their spread). ``quantity`` names the compared number in the statistic (``"A"``, ``"tr U"``)."""
    theory, sampled = _pair(theory, sampled)
    margin = positive_real(margin, "margin")
    return replicate_equivalence(
        claim,
        f"at P = {size} {what} equals the sampled networks' (within {margin:g})",
        source=SOURCE,
        statistic=f"|{quantity}(theory) - {quantity}(sampled)| / margin at P = {size}",
        replicates=theory - sampled,
        reference=0.0,
        margin=margin,
        level=level,
    )


def curve_agrees(claim: str, *, theory, sampled, se, margin: float, resolution: float, level: float = 0.01) -> Verdict:
    """Claim: along a learning curve the theory's test accuracy equals its sampled network's within ``margin`` at
    every sampled point (training set, width, ``P``): each point on its own, against the network's Monte-Carlo
    error there, so that no point can make up for another (:func:`attnpaths.claims.equivalence`, Bonferroni over
    the points).

    Args:
        theory, sampled: ``[n]`` accuracies at the points; se: ``[n]`` the sampled accuracies' Monte-Carlo errors
            (:class:`SampledAccuracy`), floored at ``resolution`` (one test example's share of the accuracy: a
            jackknife over a few chains can return 0).
    """
    theory, sampled = as_float64_array(theory, "theory").ravel(), as_float64_array(sampled, "sampled").ravel()
    se = as_float64_array(se, "se").ravel()
    if not theory.shape == sampled.shape == se.shape or theory.size < 1:
        raise ValueError(f"theory, sampled and se must be [n >= 1] of one shape, got {theory.shape}, {sampled.shape}, "
                         f"{se.shape}")  # fmt: skip
    margin, resolution = positive_real(margin, "margin"), positive_real(resolution, "resolution")
    if not np.all(np.isfinite(se) & (se >= 0)):
        raise ValueError(f"se must hold finite Monte-Carlo errors >= 0, got {se.tolist()}")
    return equivalence(
        claim,
        f"at every sampled point of the learning curves the theory's test accuracy equals its sampled network's "
        f"(within {margin:g})",
        source=SOURCE,
        statistic="largest |A(theory) - A(sampled)| / margin over the sampled points",
        deviation=theory - sampled,
        se=np.maximum(se, resolution),
        margin=margin,
        level=level,
        measured=f"{theory.size} points, largest |A(theory) - A(sampled)| = {np.abs(theory - sampled).max():.4f}, "
        f"Monte-Carlo errors up to {se.max():.4f}.",
    )


def dip_follows_dimension(claim: str, *, dimensions, positions, margin: float = 0.5, level: float = 0.01) -> Verdict:
    """Claim: the ``P`` at which the advantage is smallest grows in proportion to ``D``: the least-squares slope of
    ``log P_min`` against ``log D`` is 1 within ``margin``: two one-sided t-tests on the slope (its standard error
    from the residuals, ``n - 2`` degrees of freedom), both at ``level / 2``. A dip at a fixed ``P`` has slope 0; one at a fixed load ``P / N`` likewise.

    Args:
        dimensions: ``[n]`` the ``D`` of each measurement (at least two distinct values); positions: ``[n]`` its
            ``P_min`` (:func:`dip_position`), one per training set and ``D``.
    """
    D, P = as_float64_array(dimensions, "dimensions").ravel(), as_float64_array(positions, "positions").ravel()
    if D.shape != P.shape or D.size < 3 or np.unique(D).size < 2 or not (np.all(D > 0) and np.all(P > 0)):
        raise ValueError(f"dimensions and positions must be [n >= 3] positive, with >= 2 distinct D; got {D}, {P}")
    x, z = np.log(D), np.log(P)
    slope, intercept = np.polyfit(x, z, 1)
    residual = z - (intercept + slope * x)
    se = math.sqrt(residual @ residual / (D.size - 2) / np.sum((x - x.mean()) ** 2))
    df = D.size - 2
    se = max(se, 1e-12)
    measured = f"slope {slope:.3f} +- {se:.3f} ({df} degrees of freedom) at D = {sorted(set(D.astype(int).tolist()))}"
    parts = [
        directional_z(claim, f"the slope of log P_min on log D is {side} {bound:g}", source=SOURCE,
                      statistic=statistic, estimate=sign * (slope - bound), se=se, level=level, num_tests=2, df=df,
                      measured=measured)
        for side, bound, sign, statistic in (
            ("above", 1.0 - margin, 1.0, f"slope - {1.0 - margin:g}"),
            ("below", 1.0 + margin, -1.0, f"{1.0 + margin:g} - slope"),
        )
    ]  # fmt: skip
    return all_of(
        claim,
        f"the P at which the finite-width advantage is smallest grows like D (slope of log P_min on log D = 1 within "
        f"{margin:g})",
        source=SOURCE,
        parts=parts,
        measured=measured,
    )


# --------------------------------------------------------------------------------------------------------
# the study of one task: what the claims above read, as plain numbers (a results file, or shipped)


def threshold_study(
    streams: Sequence,
    chunk_size: int,
    sizes: Sequence[int],
    validation: tuple,
    test: tuple,
    *,
    heads,
    width: float,
    alpha: float,
    temperature: float,
    temperatures: Sequence[float],
    threshold_size: int,
    wrong_widths: Sequence[float],
    sampler: dict,
    seed: int,
    sampled_sets: int = 0,
    variances=1.0,
    progress: bool = True,
) -> dict:
    """Everything the threshold's claims read, for independently drawn training streams, as JSON-ready lists.

    Per stream (``make_chunk(k) -> (features, y)``, the set of ``P`` examples its first ``P / chunk_size``
    chunks): the Gram statistics at ``sizes``; :func:`temperature_scan` of the curves at fixed width ``width``,
    fixed load ``alpha`` and the GP limit over ``temperatures`` (which must hold ``temperature``); at
    ``P = threshold_size``, at ``temperature``: the accuracy and ``tr U`` of the theory at ``wrong_widths`` (a wrong
    entropy weight is a wrong width), of the theory's ``U`` rescaled to the GP limit's trace
    (:func:`rescaled_accuracy`), and of the sampled networks (:func:`sampled_network_accuracy` with the keyword
    arguments ``sampler``) of the two finite curves (width ``width``, width ``P / alpha``): at ``threshold_size`` on
    every stream, at every ``P`` of ``sizes`` on the first ``sampled_sets`` streams. Each draw has a generator of
    its own, seeded from ``(seed, stream, curve, index of P in sizes)``; the width-``width`` network at the
    threshold is seeded ``seed + s`` on stream ``s``.

    Returns:
        a dict with the keys ``sizes``, ``temperatures``, ``curves`` (the widths of each curve), ``threshold_size``
        and ``streams``, one dict per stream with ``validation``, ``test``, ``trace_U``, ``converged`` (each
        ``[n_curves, n_P, n_T]``), ``theory``, ``gp`` and ``wrong`` (per width ``accuracy``, ``trace_U``,
        ``converged`` at the threshold), ``rescaled``, ``sampled`` (:meth:`SampledAccuracy.to_dict`, the
        width-``width`` network at the threshold) and ``sampled_curves`` (``[2][n_P]``: per finite curve and ``P``
        a :meth:`SampledAccuracy.to_dict`, or None where not sampled).
    """
    sizes = increasing_ints(sizes, "sizes", 1)
    chunk_size = positive_int(chunk_size, "chunk_size")
    if np.any(sizes % chunk_size) or threshold_size not in sizes.tolist():
        raise ValueError(f"sizes must be multiples of chunk_size = {chunk_size} holding threshold_size, got {sizes}")
    grid = as_float64_array(temperatures, "temperatures")
    if not np.any(np.isclose(grid, temperature, rtol=1e-12, atol=0.0)):
        raise ValueError(f"temperatures must hold the fixed temperature {temperature:g}, got {grid.tolist()}")
    widths = np.array([np.full(sizes.size, float(width)), sizes / float(alpha), np.full(sizes.size, math.inf)])
    j = int(np.flatnonzero(sizes == threshold_size)[0])
    sampled_sets = int_at_least(sampled_sets, "sampled_sets", 0)
    per_stream = []
    for s, make_chunk in enumerate(tqdm(list(streams), desc="threshold study", disable=not progress)):
        statistics = gram_statistics_at(make_chunk, (sizes // chunk_size).tolist(), progress=False)
        scan = temperature_scan(statistics, widths, grid, validation, test, heads=heads, variances=variances,
                                progress=False)  # fmt: skip
        at = statistics[j]
        solutions = {}
        for w in (float(width), *map(float, wrong_widths), math.inf):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", CertificateWarning)  # the fixed-T scan records the certificate
                solutions[w] = solve_from_statistics(at, heads=heads, width=w, temperature=temperature,
                                                     variances=variances)  # fmt: skip

        def summary(sol):
            return {
                "accuracy": classification_accuracy(sol.predict_mean(test[0]), test[1]),
                "trace_U": float(np.trace(sol.U)),
                "converged": bool(sol.converged),
            }

        gp_trace = float(np.trace(solutions[math.inf].U))
        sampled_curves = [[None] * sizes.size for _ in range(2)]
        for c in range(2):
            for k in range(sizes.size) if s < sampled_sets else [j]:
                # the width-N network at the threshold keeps the seed it has always had (seed + s)
                key = (
                    seed + s if (c, k) == (0, j) else int(np.random.SeedSequence([seed, s, c, k]).generate_state(1)[0])
                )
                sampled_curves[c][k] = sampled_network_accuracy(
                    statistics[k], test, heads=heads, width=float(widths[c, k]), temperature=temperature,
                    variances=variances, generator=torch.Generator().manual_seed(key), **sampler,
                ).to_dict()  # fmt: skip
        per_stream.append({
            "validation": scan.validation.tolist(),
            "test": scan.test.tolist(),
            "trace_U": scan.trace_U.tolist(),
            "converged": scan.converged.tolist(),
            "theory": summary(solutions[float(width)]),
            "gp": summary(solutions[math.inf]),
            "wrong": {f"{w:g}": summary(solutions[float(w)]) for w in wrong_widths},
            "rescaled": rescaled_accuracy(at, solutions[float(width)].U, gp_trace, test, temperature=temperature,
                                          variances=variances),
            "sampled": sampled_curves[0][j],
            "sampled_curves": sampled_curves,
        })  # fmt: skip
    return {
        "sizes": sizes.tolist(),
        "temperatures": grid.tolist(),
        "curves": [[w if math.isfinite(w) else "inf" for w in row] for row in widths.tolist()],
        "threshold_size": int(threshold_size),
        "streams": per_stream,
    }


def dip_curve(make_chunk, chunk_size: int, sizes, test: tuple, *, heads, width: float, temperature: float,
              variances=1.0) -> list[float]:  # fmt: skip
    """The finite-width advantage ``A_N - A_GP`` at every ``P`` of ``sizes`` on one training stream, at one
    temperature (the input of :func:`dip_position`)."""
    sizes = increasing_ints(sizes, "sizes", 1)
    advantage = []
    for statistics in gram_statistics_at(make_chunk, (sizes // positive_int(chunk_size, "chunk_size")).tolist(),
                                         progress=False):  # fmt: skip
        accuracy = []
        for w in (float(width), math.inf):
            # an uncertified minimum stops the curve: its advantage would be a number of no solution
            sol = solve_from_statistics(
                statistics, heads=heads, width=w, temperature=temperature, variances=variances, on_failure="raise"
            )
            accuracy.append(classification_accuracy(sol.predict_mean(test[0]), test[1]))
        advantage.append(accuracy[0] - accuracy[1])
    return advantage
