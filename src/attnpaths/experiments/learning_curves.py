"""Learning curves of the theory: test accuracy and the order parameter against the number of training examples
``P`` (sec-learning-curves), on any task whose training set is a stream of chunks, and the claims that the curves
of independently drawn training sets test.

The training sets of a curve are nested: the set of ``P`` examples is the first ``P / p`` chunks of one stream
(chunks of ``p`` examples, each made from its own seed, e.g. :class:`attnpaths.hmc.streams.HMCChunks`), so the
Gram statistics of every ``P`` come from one pass over the largest set
(:func:`attnpaths.streaming.gram_statistics_at`), and each point is a solve whose cost does not
grow with ``P`` (:func:`attnpaths.theory.solve_from_statistics`). A curve is a rule for the width at each ``P``:
a fixed width ``N``, a fixed load ``alpha = P / N`` (``N = P / alpha``), or the GP limit (``N = inf``, eq-gp).
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from tqdm import tqdm

from .._validation import as_float64_array, increasing_ints, positive_int, positive_real
from ..claims import Verdict, replicate_t
from ..streaming import gram_statistics_at
from ..theory import CertificateWarning, classification_accuracy, solve_from_statistics

#: The source named by the claims of the learning curves (not a claim of the paper).
SOURCE = "this book (learning curves of the theory, beyond the paper)"

GP_CURVE = "GP"
"""Name of the GP-limit curve in a :class:`LearningCurve`."""


def fixed_width_curve(width: float) -> str:
    """Name of the curve at fixed width ``N`` (``"N = 10"``)."""
    return f"N = {width:g}"


def fixed_load_curve(alpha: float) -> str:
    """Name of the curve at fixed load ``alpha = P / N`` (``"alpha = 10"``)."""
    return f"alpha = {alpha:g}"


@dataclass(frozen=True)
class LearningCurve:
    """The theory's curves against ``P`` on one training stream and one test set.

    Attributes:
        sizes: ``[n_P]`` numbers of training examples ``P``, increasing.
        curves: the curves' names (:func:`fixed_width_curve`, :func:`fixed_load_curve`, :data:`GP_CURVE`).
        widths: ``[n_curves, n_P]`` the width ``N`` of every layer and the readout at each point (``inf``: GP).
        accuracy: ``[n_curves, n_P]`` test accuracy of the predictor's mean (eq-predictor).
        U: ``[n_curves, n_P, n_paths, n_paths]`` the order parameter ``U_1`` (eq-action; the GP value ``I`` times the
            prior variance on the GP curve), path order of the features.
        converged: ``[n_curves, n_P]`` the solver's certificate (always True on the GP curve, which is not solved).
        num_test: the test examples.
    """

    sizes: np.ndarray
    curves: tuple[str, ...]
    widths: np.ndarray
    accuracy: np.ndarray
    U: np.ndarray
    converged: np.ndarray
    num_test: int

    def index(self, curve: str) -> int:
        """Row of ``curve`` in the arrays (ValueError naming the curves for another name)."""
        if curve not in self.curves:
            raise ValueError(f"curve must be one of {list(self.curves)}, got {curve!r}")
        return self.curves.index(curve)

    def size_index(self, size: int) -> int:
        """Column of ``P = size`` (ValueError naming the sizes for another ``P``)."""
        found = np.flatnonzero(self.sizes == size)
        if isinstance(size, bool) or not isinstance(size, numbers.Integral) or found.size != 1:
            raise ValueError(f"size must be one of the curve's P {self.sizes.tolist()}, got {size!r}")
        return int(found[0])

    def path_share(self, curve: str, path: int) -> np.ndarray:
        """``[n_P]`` the share ``U_pp / tr U`` of path ``path`` in the diagonal of ``U`` along ``curve``."""
        U = self.U[self.index(curve)]
        if isinstance(path, bool) or not isinstance(path, numbers.Integral) or not 0 <= path < U.shape[-1]:
            raise ValueError(f"path must be a path index in [0, {U.shape[-1]}), got {path!r}")
        return U[:, path, path] / np.trace(U, axis1=1, axis2=2)

    def correlations(self, curve: str) -> np.ndarray:
        """``[n_P, n_paths, n_paths]`` ``U_pq / sqrt(U_pp U_qq)`` along ``curve``: the path-path structure of ``U``
        without its scale (ones on the diagonal)."""
        U = self.U[self.index(curve)]
        d = np.sqrt(np.einsum("kii->ki", U))
        return U / (d[:, :, None] * d[:, None, :])

    def to_record(self) -> dict:
        """The curves as plain lists for a results file, one entry per curve."""
        return {
            "sizes": self.sizes.tolist(),
            "num_test": self.num_test,
            "curves": {
                name: {
                    "N": [w if math.isfinite(w) else "inf" for w in self.widths[i].tolist()],
                    "accuracy": self.accuracy[i].tolist(),
                    "U": self.U[i].tolist(),
                    "converged": self.converged[i].tolist(),
                }
                for i, name in enumerate(self.curves)
            },
        }


def _curve_widths(sizes: np.ndarray, widths, alphas, gp: bool) -> tuple[list[str], np.ndarray]:
    names, rows = [], []
    for width in widths:
        width = positive_real(width, "widths (each a width N > 0)")
        names.append(fixed_width_curve(width))
        rows.append(np.full(sizes.size, width))
    for alpha in alphas:
        alpha = positive_real(alpha, "alphas (each a load P / N > 0)")
        names.append(fixed_load_curve(alpha))
        rows.append(sizes / alpha)
    if gp:
        names.append(GP_CURVE)
        rows.append(np.full(sizes.size, math.inf))
    if not names:
        raise ValueError("give at least one curve: widths, alphas or gp=True")
    if len(set(names)) != len(names):
        raise ValueError(f"the curves must differ, got {names}")
    return names, np.array(rows)


def learning_curve(
    make_chunk: Callable,
    chunk_size: int,
    sizes: Sequence[int],
    test_features,
    test_targets,
    *,
    heads: int | Sequence[int],
    temperature: float,
    widths: Sequence[float] = (),
    alphas: Sequence[float] = (),
    gp: bool = True,
    variances: float | Sequence[float] = 1.0,
    engine=None,
    chunks_per_task: int = 10,
    progress: bool = True,
) -> LearningCurve:
    """Test accuracy and ``U`` of the theory (eq-action, eq-predictor) against ``P`` (sec-learning-curves).

    Args:
        make_chunk: the training stream, ``make_chunk(k) = (features [chunk_size, N0, n_paths], y [chunk_size])``
            (:func:`attnpaths.streaming.gram_statistics_at`): the training set of ``P`` examples is
            its first ``P / chunk_size`` chunks.
        chunk_size: examples per chunk, an integer >= 1.
        sizes: the ``P`` of the curve, strictly increasing multiples of ``chunk_size``.
        test_features, test_targets: ``[P_test, N0, n_paths]`` and ``[P_test]`` (labels +-1) of the test set.
        heads, temperature, variances: as in :func:`attnpaths.theory.solve`.
        widths: fixed widths ``N`` (one curve each); alphas: fixed loads ``P / N`` (one curve each, ``N = P /
            alpha``); gp: add the GP limit (eq-gp).
        engine, chunks_per_task: where and in what pieces the statistics are accumulated
            (:func:`attnpaths.streaming.gram_statistics_at`; the numbers do not depend on them).
        progress: tqdm bars over the chunks and the solves.

    Returns:
        a :class:`LearningCurve`; points whose solve is not certified keep their numbers and
        ``converged = False`` (the warning is not repeated: the caller decides).

    Raises:
        ValueError: an argument out of range, sizes that are not multiples of ``chunk_size`` or chunks of another
            size, test data of another shape than the training features.
    """
    chunk_size = positive_int(chunk_size, "chunk_size")
    sizes = increasing_ints(sizes, "sizes (numbers of training examples P)", 1)
    if np.any(sizes % chunk_size):
        raise ValueError(f"sizes must be multiples of chunk_size = {chunk_size}, got {sizes.tolist()}")
    temperature = positive_real(temperature, "temperature")
    names, curve_widths = _curve_widths(sizes, widths, alphas, bool(gp))
    test_targets = as_float64_array(test_targets, "test_targets")
    statistics = gram_statistics_at(
        make_chunk,
        (sizes // chunk_size).tolist(),
        engine=engine,
        chunks_per_task=chunks_per_task,
        progress=progress,
        description="learning curve: Gram statistics",
    )
    for P, stats in zip(sizes.tolist(), statistics):
        if stats.num_examples != P:
            raise ValueError(
                f"make_chunk must return chunks of chunk_size = {chunk_size} examples: the first "
                f"{P // chunk_size} chunks hold {stats.num_examples} examples, not P = {P}"
            )
    n_paths = statistics[0].num_paths
    shape = (len(names), sizes.size)
    accuracy, converged = np.zeros(shape), np.zeros(shape, dtype=bool)
    U = np.zeros((*shape, n_paths, n_paths))
    with tqdm(total=len(names) * sizes.size, desc="learning curve: solves", disable=not progress, leave=False) as bar:
        for j, stats in enumerate(statistics):
            for i in range(len(names)):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", CertificateWarning)  # recorded in `converged`
                    sol = solve_from_statistics(
                        stats, heads=heads, width=float(curve_widths[i, j]), temperature=temperature,
                        variances=variances,
                    )  # fmt: skip
                mean = sol.predict_mean(test_features)
                if mean.shape != test_targets.shape:
                    raise ValueError(
                        f"test_targets must have shape [P_test] = [{mean.shape[0]}], got {test_targets.shape}"
                    )
                accuracy[i, j] = classification_accuracy(mean, test_targets)
                U[i, j] = sol.U
                converged[i, j] = bool(sol.converged)
                bar.update()
    return LearningCurve(sizes, tuple(names), curve_widths, accuracy, U, converged, int(test_targets.size))


# --------------------------------------------------------------------------------------------------------
# claims over independently drawn training sets


def _replicates(**arrays) -> list[np.ndarray]:
    """The keyword arrays, each ``[n_sets]`` with ``n_sets >= 2`` (one per training set), all of one shape."""
    values = []
    for name, value in arrays.items():
        value = as_float64_array(value, name)
        if value.ndim != 1 or value.size < 2:
            raise ValueError(
                f"{name} must be [n_sets] with n_sets >= 2 (one per training set), got shape {value.shape}"
            )
        values.append(value)
    if len({v.shape for v in values}) != 1:
        raise ValueError(f"{', '.join(arrays)} must have one shape, got {[v.shape for v in values]}")
    return values


def _t(claim: str, statement: str, statistic: str, differences, level: float, num_tests: int = 1) -> Verdict:
    return replicate_t(
        claim, statement, source=SOURCE, statistic=statistic, differences=differences, level=level, num_tests=num_tests
    )


def small_sample_advantage(claim: str, *, theory, gp, size: int, level: float = 0.01) -> Verdict:
    """Claim: with few examples (``P = size``) the finite-width theory's test accuracy beats the GP limit's.

    Args:
        theory, gp: ``[n_sets]`` accuracies at ``P = size``, one per independently drawn training set (the same
            test set for both).

    Test: one-sided t-test over the training sets of mean ``A_N - A_GP > 0`` (:func:`attnpaths.claims.replicate_t`).
    """
    theory, gp = _replicates(theory=theory, gp=gp)
    statement = f"with P = {size} examples the finite-width theory is more accurate than the GP limit"
    return _t(claim, statement, f"A_N - A_GP at P = {size}", theory - gp, level)


def advantage_closes(claim: str, *, theory_small, gp_small, theory_large, gp_large, sizes, level: float = 0.01):
    """Claim: the finite-width theory's difference from the GP limit shrinks from ``P = sizes[0]`` to
    ``P = sizes[1]`` (with many examples both kernels' predictors approach the same regression on the features).

    Args:
        theory_small, gp_small, theory_large, gp_large: ``[n_sets]`` accuracies at the two sizes.

    Test: one-sided t-test over the training sets of mean ``|A_N - A_GP|(P_small) - |A_N - A_GP|(P_large) > 0``.
    """
    ts, gs, tl, gl = _replicates(
        theory_small=theory_small, gp_small=gp_small, theory_large=theory_large, gp_large=gp_large
    )
    small, large = (int(s) for s in sizes)
    return _t(
        claim,
        f"the difference between the finite-width theory and the GP limit shrinks from P = {small} to P = {large}",
        f"|A_N - A_GP|(P={small}) - |A_N - A_GP|(P={large})",
        np.abs(ts - gs) - np.abs(tl - gl),
        level,
    )


def path_concentration(claim: str, *, share_small, share_large, sizes, path: str, level: float = 0.01) -> Verdict:
    """Claim: the order parameter concentrates on one path as ``P`` grows: its share ``U_pp / tr U`` is larger at
    ``P = sizes[1]`` than at ``P = sizes[0]``.

    Args:
        share_small, share_large: ``[n_sets]`` shares at the two sizes (:meth:`LearningCurve.path_share`).
        path: the path's name.

    Test: one-sided t-test over the training sets of mean ``share(P_large) - share(P_small) > 0``.
    """
    small_share, large_share = _replicates(share_small=share_small, share_large=share_large)
    small, large = (int(s) for s in sizes)
    return _t(
        claim,
        f"U concentrates on path {path} as P grows: its share of tr U is larger at P = {large} than at P = {small}",
        f"U_{path}{path} / tr U at P = {large} minus at P = {small}",
        large_share - small_share,
        level,
    )


def pointwise_advantage(theory, gp, sizes, *, level: float = 0.01) -> list[Verdict]:
    """The finite-width advantage at every ``P``, a description of the curves rather than a claim: one
    :func:`attnpaths.claims.replicate_t` per size of ``mean A_N - A_GP > 0`` (Bonferroni over the sizes), whose
    outcome says where the advantage holds, where it is reversed and where it is not resolved.

    Args:
        theory, gp: ``[n_sets, n_P]`` accuracies; sizes: ``[n_P]``.
    """
    theory, gp = as_float64_array(theory, "theory"), as_float64_array(gp, "gp")
    sizes = increasing_ints(sizes, "sizes", 1)
    if theory.shape != gp.shape or theory.ndim != 2 or theory.shape[1] != sizes.size or theory.shape[0] < 2:
        raise ValueError(
            f"theory and gp must be [n_sets, n_P] = [>= 2, {sizes.size}] arrays of one shape, got "
            f"{theory.shape} and {gp.shape}"
        )
    return [
        _t(
            f"P = {P}",
            f"the finite-width theory is more accurate than the GP limit at P = {P}",
            f"A_N - A_GP at P = {P}",
            theory[:, j] - gp[:, j],
            level,
            sizes.size,
        )
        for j, P in enumerate(sizes.tolist())
    ]


def curve_claims(
    curves: Sequence[LearningCurve],
    *,
    theory: str,
    path: int,
    path_name: str,
    gp: str = GP_CURVE,
    level: float = 0.01,
    labels: Sequence[str] = ("a", "b", "c"),
) -> list[Verdict]:
    """The three claims of the learning curves over independently drawn training sets (one
    :class:`LearningCurve` each, the same sizes and curves): :func:`small_sample_advantage` at the smallest ``P``,
    :func:`advantage_closes` from the smallest to the largest ``P`` and :func:`path_concentration` of path ``path``
    (named ``path_name``) along the curve ``theory``.

    Given ``theory = gp`` (the GP kernel in place of the renormalised one, a wrong theory), none of the three can
    hold: the differences they test are then zero.
    """
    curves = list(curves)
    if len(curves) < 2 or not all(isinstance(c, LearningCurve) for c in curves):
        raise ValueError(f"curves must be >= 2 LearningCurve objects (one per training set), got {len(curves)}")
    first = curves[0]
    if any(not np.array_equal(c.sizes, first.sizes) or c.curves != first.curves for c in curves):
        raise ValueError("curves must share their sizes and curve names (one training stream per set, same options)")
    if first.sizes.size < 2:
        raise ValueError(f"the curves need at least two sizes P, got {first.sizes.tolist()}")
    t, g = first.index(theory), first.index(gp)
    acc = np.array([c.accuracy for c in curves])  # [n_sets, n_curves, n_P]
    small, large = int(first.sizes[0]), int(first.sizes[-1])
    shares = np.array([c.path_share(theory, path) for c in curves])  # [n_sets, n_P]
    a, b, c = labels
    return [
        small_sample_advantage(a, theory=acc[:, t, 0], gp=acc[:, g, 0], size=small, level=level),
        advantage_closes(
            b,
            theory_small=acc[:, t, 0],
            gp_small=acc[:, g, 0],
            theory_large=acc[:, t, -1],
            gp_large=acc[:, g, -1],
            sizes=(small, large),
            level=level,
        ),
        path_concentration(
            c, share_small=shares[:, 0], share_large=shares[:, -1], sizes=(small, large), path=path_name, level=level
        ),
    ]
