"""The solver's doors: :func:`solve` from path features, :func:`solve_from_statistics` from their Gram statistics;
the route, the memory check, the options and the certificate of the minimisation (eq-action)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional  # Optional[ArrayLike]: autodoc_type_aliases cannot read ArrayLike | None

import numpy as np
import torch
from numpy.typing import ArrayLike

from .._validation import as_float64_tensor, check_memory, heads_tuple, positive_int, positive_real
from ..action import Architecture, EnergyEvaluator, EnergyPoint, gp_order_parameters, readout_order_parameter
from ..gram import DEFAULT_BLOCK_SIZE, GramStatistics
from ..kernels import kernel_from_scaled, shifted_cholesky
from ..paths import check_num_paths
from ._architecture import _layer_sizes, architecture
from ._coordinates import _Action
from ._newton import _infinite_start, _newton
from ._solution import TheorySolution


class CertificateWarning(UserWarning):
    """The minimiser stopped at a point that is not certified as a minimum of the action."""


ROUTES = (None, "sample", "feature", "gram")
"""The values of :func:`solve`'s ``route``."""


def _default_route(P: int, n0: int, n: int, arch: Architecture) -> str:
    """The route :func:`solve` takes: per Hessian, :meth:`attnpaths.action.EnergyEvaluator.cheaper_route`; in the
    GP limit (one evaluation, no Hessian) the Gram route where ``1.2 P D^2 + 4 D^3 + r^2 D`` (its Gram matrix,
    eigendecomposition and kernel of ``r = min(P, D)`` rows) is below the ``P^2 D`` of the ``[P, P]`` kernel."""
    if not arch.gp_limit:
        return EnergyEvaluator.cheaper_route(P, n0, n)
    D, r = n0 * n, min(P, n0 * n)
    return "gram" if 1.2 * P * D * D + 4.0 * D**3 + r * r * D < P * P * D else "feature"


SOLVER_OVERHEAD_BYTES = 192 * 2**20
"""Bytes that a solve needs beyond the arrays counted by ``_solver_memory``: 64 MiB of address space beyond
the resident peak (VmPeak over VmHWM: the allocator's arenas, the BLAS and LAPACK code and their workspaces, all
counted by ``RLIMIT_AS``), 96 MiB for the heap's fragmentation (glibc keeps freed blocks below its 32 MiB mmap
threshold in the heap: ``[P, P]`` matrices of ``P < 2048`` raise the peak of one solve by up to three of them,
92 MiB seen at ``P = 2000`` between runs of the same solve) and a 32 MiB margin."""


def _solver_memory(P: int, n0: int, n: int, arch: Architecture, route: str | None = None) -> tuple[float, str]:
    """Bytes that :func:`solve` needs at its peak for ``P`` examples of ``[N0, n_paths] = [n0, n]`` path features,
    about, and the route's description (``route``: ``"sample"``, ``"feature"``, ``"gram"``; default
    :func:`_default_route`). ``D = n0 n``, ``m = n (n + 1) / 2``.

    Measured, as the growth of ``VmHWM`` (resident) and ``VmPeak`` (virtual, what ``RLIMIT_AS`` limits) of a fresh
    process over a forced solve (``P`` from 500 to 4000, ``N0`` from 60 to 500, ``n = 4``; the fits are within
    15 MiB of the smallest peak of each; e.g. 93, 264 and 474 MiB resident at ``P`` = 1000, 2000, 3000 and
    ``N0 = 231``, where three ``[P, P]`` matrices are 23, 92 and 206 MiB): the feature-space route
    ``5.1 P^2 + 5.0 P D + 2.2 D^2`` float64 numbers (the current point's Cholesky factor with the trial point's
    kernel, its shifted copy and factor held at once, and ``[P, D]`` products of the features); the sample-space
    route the same and its three ``[P, P, m]`` stores of the basis kernels; the GP limit ``4 P^2 + P D``; the Gram
    route ``14 D^2`` and a block of ``attnpaths.gram.DEFAULT_BLOCK_SIZE`` examples (the Gram matrix, its
    eigenvectors and the ``r <= D`` equivalent rows, then the contraction on those rows: a ``P = D`` solve). The
    estimate rounds each coefficient up to the next integer or more (``6 P^2``: one ``[P, P]`` matrix beyond the
    five held at once, 20 % at large ``P``) and adds :data:`SOLVER_OVERHEAD_BYTES`: a solve under the estimate
    fits, with a few tens of MiB to spare at its worst measured peak."""
    route = _default_route(P, n0, n, arch) if route is None else route
    D, m = n0 * n, n * (n + 1) // 2
    if route == "gram":
        # the contraction on r <= D rows (the sample-space one keeps its stores), the Gram matrix, its copy while a
        # chunk is added and the equivalent rows, and two blocks of examples (the buffer and the one being filled)
        stores = 3 * D * D * m if EnergyEvaluator.cheaper_route(D, n0, n, direct_only=True) == "sample" else 0
        numbers = 18 * D * D + stores + 2 * DEFAULT_BLOCK_SIZE * D
        what = (
            f"solve with P = {P} examples (gram route: eighteen [D, D] float64 matrices, D = N0 n_paths = {D}, "
            f"for the features [P, N0, n_paths] = [{P}, {n0}, {n}])"
        )
        return 8.0 * numbers + SOLVER_OVERHEAD_BYTES, what
    if arch.gp_limit:
        route, kernels, numbers = "GP-limit", "five", 5 * P * P + 2 * P * D
    else:
        route, kernels = route + "-space", "six"
        numbers = 6 * P * P + 6 * P * D + 3 * D * D
        if route == "sample-space":
            numbers += 3 * P * P * m
    what = (
        f"solve with P = {P} examples ({route} route: {kernels} [P, P] float64 matrices and the features "
        f"[P, N0, n_paths] = [{P}, {n0}, {n}])"
    )
    return 8.0 * numbers + SOLVER_OVERHEAD_BYTES, what


def classification_accuracy(mean, labels) -> float:
    """Fraction of examples with ``sign(<f>) == y`` (eq-predictor); an exactly zero prediction counts as wrong."""
    mean, labels = np.asarray(mean), np.asarray(labels)
    if mean.shape != labels.shape:
        raise ValueError(f"mean and labels must have the same shape, got {mean.shape} and {labels.shape}")
    return float(np.mean(np.sign(mean) == labels))


def solve(
    features: ArrayLike,
    targets: ArrayLike,
    *,
    heads: int | Sequence[int],
    width: float | Sequence[float],
    temperature: float,
    variances: float | Sequence[float] = 1.0,
    initial: Optional[Sequence[ArrayLike]] = None,
    gradient_tolerance: float = 1e-8,
    max_iterations: int = 200,
    on_failure: str = "warn",
    route: str | None = None,
) -> TheorySolution:
    """Minimise the action S(U) (eq-action) and return the order parameters and the predictor (eq-predictor).

    Args:
        features: ``[P, N0, n_paths]`` path features ``xi_pi(x^mu)`` (numpy or torch), no normalisation;
            ``n_paths = H_1 ... H_L``, path index ``h_1`` slowest.
        targets: ``[P]`` the training targets (real numbers, e.g. ``+-1`` labels as floats; booleans are refused).
        heads: ``(H_1, ..., H_L)``. Only ``H_1 ... H_L == n_paths`` can be checked: the features carry the
            paths in one flat axis, so heads with the same product (``(4,)`` and ``(2, 2)``) are
            indistinguishable from them, and the caller must give the heads the features were built with.
        width: the theory's width ``N``, a number (every layer) or ``(N_1, ..., N_L, N_a)``; ``float('inf')`` gives
            the GP limit (eq-gp).
        temperature: likelihood variance ``T > 0``.
        variances: a number or ``(s0, s1, ..., sL, sa)``.
        initial: optional starting point ``[U_1, ..., U_L]`` (positive definite); default: the GP values.
        gradient_tolerance: stop when the gradient norm in log-Cholesky coordinates is below this (finite, > 0).
        max_iterations: Newton iteration cap (an integer >= 1).
        on_failure: ``"warn"`` (:class:`CertificateWarning`) or ``"raise"`` (``RuntimeError``) when the result
            is not certified as a minimum (not converged, or the Hessian is not positive definite).
        route: the energy's route, ``"sample"``, ``"feature"``, ``"gram"`` or None (the one with fewer operations:
            the Gram route, whose cost does not grow with ``P`` after one pass over the features, where there are
            enough more examples than ``D = N0 n_paths`` features; :class:`attnpaths.action.EnergyEvaluator`). The
            routes agree up to rounding.

    Returns:
        :class:`TheorySolution`.

    Raises:
        ValueError: an argument out of its range; also where the action is not finite at the starting point.
        TypeError: complex, boolean or object ``features`` or ``targets``.
        MemoryError: before any large allocation, where the solver's arrays (about six ``[P, P]`` float64
            matrices; on the Gram route some ``[D, D]``) would not fit in the available memory.
    """
    X_raw = as_float64_tensor(features, "features")
    if X_raw.ndim != 3 or X_raw.shape[0] < 1:
        raise ValueError(f"features must have shape [P, N0, n_paths] with P >= 1, got {tuple(X_raw.shape)}")
    heads = check_num_paths(X_raw.shape[2], heads)
    arch = architecture(heads, width, variances)
    labels = as_float64_tensor(targets, "targets", labels=True)
    if labels.shape != (X_raw.shape[0],):
        raise ValueError(f"targets must have shape [P] = [{X_raw.shape[0]}], got {tuple(labels.shape)}")
    options = _Options.checked(temperature, gradient_tolerance, max_iterations, on_failure)
    temperature = options.temperature
    if route not in ROUTES:
        raise ValueError(f"route must be 'sample', 'feature', 'gram' or None, got {route!r}")
    P, n0, n = X_raw.shape
    route = _default_route(P, n0, n, arch) if route is None else route
    check_memory(*_solver_memory(P, n0, n, arch, route))
    scale = (arch.variances[0] / (n0 * n)) ** 0.5  # scaled_features, validated above

    if route == "gram":  # the statistics of the raw features, scaled by the evaluator: no scaled copy of the features
        statistics = GramStatistics.of_checked(X_raw, labels)
        evaluator = EnergyEvaluator.from_statistics(statistics, temperature, s0=arch.variances[0])
        return _minimise(evaluator, arch, initial, options, {"y": labels, "raw": (X_raw, scale)})
    X = X_raw * scale
    if arch.gp_limit:
        return _gp_solution(
            arch, temperature, lambda U1: _kernel_point(X, labels, U1, temperature), {"X": X, "y": labels}
        )
    return _minimise(
        EnergyEvaluator(X, labels, temperature, route=route), arch, initial, options, {"X": X, "y": labels}
    )


def solve_from_statistics(
    statistics: GramStatistics,
    *,
    heads: int | Sequence[int] | None = None,
    width: float | Sequence[float],
    temperature: float,
    variances: float | Sequence[float] = 1.0,
    initial: Optional[Sequence[ArrayLike]] = None,
    gradient_tolerance: float = 1e-8,
    max_iterations: int = 200,
    on_failure: str = "warn",
) -> TheorySolution:
    """:func:`solve` from the data's sufficient statistics instead of its features (eq-action, eq-predictor): the
    Gram matrix ``F^T F``, ``F^T y``, ``y^T y`` and ``P`` of ``attnpaths.gram.GramStatistics``, accumulated
    over chunks of examples, so that ``P`` is limited by time, not memory.

    The action, the order parameters, the certificate and the predictor (:meth:`TheorySolution.predict`) are those
    of :func:`solve` on the same examples with ``route="gram"`` (equal to the other routes up to rounding); the
    solution holds no training examples (:attr:`TheorySolution.training_features`, ``training_labels``,
    ``kernel_cholesky`` and ``dual_weights`` raise ``ValueError``).

    Args:
        statistics: ``attnpaths.gram.GramStatistics`` of ``P >= 1`` examples of raw (unscaled) path features
            ``[P, N0, n_paths]``.
        heads: as in :func:`solve`; may be left out where the statistics record their heads
            (the ``heads`` of :class:`attnpaths.gram.GramStatistics`), and must equal them where given.
        width, temperature, variances, initial, gradient_tolerance, max_iterations, on_failure: as in
            :func:`solve`.

    Returns:
        :class:`TheorySolution` (``route == "gram"``).
    """
    if not isinstance(statistics, GramStatistics):
        raise ValueError(f"statistics must be a GramStatistics (attnpaths.gram), got {type(statistics).__name__}")
    if statistics.num_examples < 1:
        raise ValueError(f"statistics must hold P >= 1 examples, got {statistics.num_examples}")
    heads = check_num_paths(statistics.num_paths, _recorded_heads(statistics, heads))
    arch = architecture(heads, width, variances)
    options = _Options.checked(temperature, gradient_tolerance, max_iterations, on_failure)
    check_memory(*_solver_memory(statistics.num_examples, statistics.input_width, statistics.num_paths, arch, "gram"))
    evaluator = EnergyEvaluator.from_statistics(statistics, options.temperature, s0=arch.variances[0])
    return _minimise(evaluator, arch, initial, options, {})


def _recorded_heads(statistics: GramStatistics, heads):
    """``heads`` checked against the heads that ``statistics`` record: the same paths in another order of layers
    (``(2, 3)`` for a ``(3, 2)`` model) have the same number of paths but another theory."""
    if heads is None:
        if statistics.heads is None:
            raise ValueError("heads must be given: these statistics do not record the heads of their features")
        return statistics.heads
    if statistics.heads is not None and heads_tuple(heads) != statistics.heads:
        raise ValueError(f"heads must be the statistics' recorded heads {statistics.heads}, got {heads_tuple(heads)}")
    return heads


@dataclass(frozen=True)
class _Options:
    """The minimisation's options of :func:`solve`, checked."""

    temperature: float
    gradient_tolerance: float
    max_iterations: int
    on_failure: str

    @classmethod
    def checked(cls, temperature, gradient_tolerance, max_iterations, on_failure) -> _Options:
        several = (isinstance(temperature, (list, tuple)) and len(temperature) > 1) or (
            isinstance(temperature, (np.ndarray, torch.Tensor)) and temperature.ndim > 0 and len(temperature) > 1
        )
        if isinstance(temperature, str) or several:
            raise ValueError(
                f"temperature must be one real number > 0 here, got {temperature!r}: a grid of temperatures or "
                "'auto' (the one of smallest action) is chosen by attnpaths.theory_from_attention, "
                "theory_from_statistics and rank_heads"
            )
        temperature = positive_real(temperature, "temperature")
        gradient_tolerance = positive_real(gradient_tolerance, "gradient_tolerance")
        max_iterations = positive_int(max_iterations, "max_iterations")
        if on_failure not in ("warn", "raise"):
            raise ValueError(f"on_failure must be 'warn' or 'raise', got {on_failure!r}")
        return cls(temperature, gradient_tolerance, max_iterations, on_failure)


def _kernel_point(X: torch.Tensor, y: torch.Tensor, U1: torch.Tensor, temperature: float) -> EnergyPoint | None:
    """``S_en`` (eq-action) at ``U1`` from the ``[P, P]`` kernel formed directly (:func:`attnpaths.action.energy`'s
    operations), with its factorisation; None where it is not finite."""
    try:
        chol = shifted_cholesky(kernel_from_scaled(X, U1, X), temperature)
    except torch.linalg.LinAlgError:
        return None
    alpha = torch.cholesky_solve(y.reshape(-1, 1), chol).reshape(-1)
    value = float(2.0 * torch.log(torch.diagonal(chol)).sum() + y @ alpha)
    return EnergyPoint(value, chol, alpha) if math.isfinite(value) else None


def _gp_solution(arch: Architecture, temperature: float, energy_at, training: dict) -> TheorySolution:
    """The GP limit (eq-gp): the GP values and ``energy_at(U_1)`` (an :class:`attnpaths.action.EnergyPoint` or
    None) there; no minimisation."""
    U_layers, U_a = gp_order_parameters(arch)
    point = energy_at(U_layers[0])
    if point is None:
        raise ValueError(_infinite_start(float(U_layers[0][0, 0]), temperature, gp_limit=True))
    return _solution(arch, temperature, U_layers, U_a, point, **training)


def _minimise(evaluator: EnergyEvaluator, arch: Architecture, initial, options: _Options, training: dict):
    """The minimisation of :func:`solve` on the energy ``evaluator`` (the GP limit: the GP values); ``training``
    holds the solution's training set (``X``, ``y``, ``raw``: :class:`TheorySolution`)."""
    temperature = options.temperature
    training = {"route": evaluator.route, "rows": evaluator.X if evaluator.route == "gram" else None, **training}
    if arch.gp_limit:
        return _gp_solution(arch, temperature, lambda U1: evaluator.point(torch.linalg.cholesky(U1)), training)
    action = _Action(None, None, arch, temperature, evaluator=evaluator)
    start = gp_order_parameters(arch)[0] if initial is None else _check_initial(initial, arch)
    point, iterations, success, message, derivatives = _newton(
        action,
        action.coords.coordinates(start),
        options.gradient_tolerance,
        options.max_iterations,
        initial_given=initial is not None,
    )
    U_layers = [torch.from_numpy(F @ F.T) for F in point.factors]
    grad_norm, min_eig = action.certificate(derivatives)
    U_a = float(readout_order_parameter(U_layers[-1], arch))
    converged = success and min_eig > 0
    if not converged:
        message = (
            f"the action's minimiser is not certified ({message}; gradient norm {grad_norm:.3g}, "
            f"smallest Hessian eigenvalue {min_eig:.3g}) at widths={arch.widths}, temperature={temperature}"
        )
        if options.on_failure == "raise":
            raise RuntimeError(message)
        warnings.warn(message, CertificateWarning, stacklevel=3)
    return _solution(
        arch,
        temperature,
        U_layers,
        U_a,
        point.energy,
        entropy=point.entropy,
        gradient_norm=grad_norm,
        hessian_min_eigenvalue=min_eig,
        converged=converged,
        iterations=iterations,
        **training,
    )


def _check_initial(initial, arch: Architecture) -> list[torch.Tensor]:
    sizes = _layer_sizes(arch)
    if len(initial) != arch.num_layers:
        raise ValueError(f"initial must hold L = {arch.num_layers} matrices [U_1, ..., U_L], got {len(initial)}")
    out = []
    for layer, (U, n) in enumerate(zip(initial, sizes), start=1):
        U = as_float64_tensor(U, f"initial[{layer - 1}]")
        if U.shape != (n, n) or not torch.allclose(U, U.T):
            raise ValueError(f"initial[{layer - 1}] (U_{layer}) must be a symmetric [{n}, {n}] matrix")
        if torch.linalg.eigvalsh(U)[0] <= 0:
            raise ValueError(f"initial[{layer - 1}] (U_{layer}) must be positive definite")
        out.append(U)
    return out


def _solution(
    arch: Architecture,
    temperature: float,
    U_layers,
    U_a,
    point: EnergyPoint,
    *,
    entropy: float = math.inf,
    gradient_norm: float = math.nan,
    hessian_min_eigenvalue: float = math.nan,
    converged: bool = True,
    iterations: int = 0,
    route: str = "feature",
    rows=None,
    X=None,
    y=None,
    raw=None,
) -> TheorySolution:
    """The :class:`TheorySolution` at ``U_layers`` whose energy (with the factorisation of ``K + T I``) is
    ``point``; the defaults are the GP limit's (no minimisation)."""
    return TheorySolution(
        U=U_layers[0].numpy().copy(),
        U_layers=[U.numpy().copy() for U in U_layers],
        U_a=float(U_a),
        action=point.value + entropy,
        energy=point.value,
        entropy=entropy,
        gradient_norm=gradient_norm,
        hessian_min_eigenvalue=hessian_min_eigenvalue,
        converged=converged,
        iterations=int(iterations),
        arch=arch,
        temperature=temperature,
        _X=X,
        _y=y,
        _chol=point.chol,
        _alpha=point.alpha,
        route=route,
        _rows=rows,
        _raw=raw,
    )
