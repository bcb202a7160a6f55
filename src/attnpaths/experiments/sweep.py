"""The theory over widths and temperatures: the one sweep of the book and its result, ``TheorySweep``.

:func:`theory_sweep` solves the theory (eq-action) at every width ``N`` (every layer) and every temperature ``T``
of a grid and evaluates the mean predictor (eq-predictor) on every evaluation split of a :class:`~.path_data.PathData`.
A task that uses one temperature passes a one-element grid. The widths run one after the other in this
process (``engine=HERE``, the default), or, on another engine, as one :func:`attnpaths.engine.map_tasks` task per
width (:func:`sweep_width`); within a width the temperatures are solved from the highest down, each optionally starting from the previous
certified minimiser.
"""

from __future__ import annotations

import math
import numbers
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import torch
from tqdm import tqdm

from .._validation import increasing_ints, increasing_reals, positive_int
from ..engine import HERE, map_tasks
from ..head_scoring import head_scores
from ..theory import CertificateWarning, classification_accuracy, solve
from .path_data import PathData, reorder


@dataclass(frozen=True, eq=False)
class TheorySweep:
    """The theory (eq-action) and its mean predictor (eq-predictor) at every (width, temperature) of a grid, on one training set.

    Attributes:
        widths: ``[n_w]`` widths ``N`` of every layer (``inf``: the GP limit, (eq-gp)); temperatures: ``[n_T]``.
        U: ``[n_w, n_T, n, n]`` the minimising ``U_1`` in flat path order (``h_1`` slowest).
        U_layers: one array per layer ``l``, ``[n_w, n_T, n_l, n_l]``, the minimising ``U_l``.
        U_a: ``[n_w, n_T]`` the readout order parameter (eq-readout); action: ``[n_w, n_T]`` ``S`` at the minimum.
        gradient_norm, hessian_min_eigenvalue, converged: ``[n_w, n_T]`` the solver's certificate.
        iterations: ``[n_w, n_T]`` Newton iterations; warm_started: ``[n_w, n_T]`` whether the point started
            from the next higher temperature's minimiser; solve_seconds: ``[n_w, n_T]``.
        means: ``{split: [n_w, n_T, B]}`` the mean predictor on each evaluation split.
        accuracy, mse: ``{split: [n_w, n_T]}`` its classification accuracy and mean squared error
            ``<(f - y)^2>``.
        names: path names in figure order; plot_order: the flat path indices in figure order.
        gp: the GP limit at the same temperatures (a sweep with ``widths = [inf]``), or None.
        variances: ``{split: [n_w, n_T, B]}`` the predictor's variance (eq-predictor) on each evaluation split,
            from the same solutions as :attr:`means` (no ``[P, P]`` matrix is kept); empty for a sweep solved
            without them (:func:`theory_sweep`).
    """

    widths: np.ndarray
    temperatures: np.ndarray
    U: np.ndarray
    U_layers: tuple
    U_a: np.ndarray
    action: np.ndarray
    gradient_norm: np.ndarray
    hessian_min_eigenvalue: np.ndarray
    converged: np.ndarray
    iterations: np.ndarray
    warm_started: np.ndarray
    solve_seconds: np.ndarray
    means: dict
    accuracy: dict
    mse: dict
    names: tuple
    plot_order: tuple
    gp: TheorySweep | None = None
    variances: dict = field(default_factory=dict)

    def index(self, width) -> int:
        """Position of ``width`` in :attr:`widths` (``ValueError`` if it was not solved)."""
        hits = np.flatnonzero(self.widths == width)
        if hits.size == 0:
            raise ValueError(f"width must be one of the solved widths {self.widths.tolist()}, got {width!r}")
        return int(hits[0])

    def temperature_index(self, temperature=None) -> int:
        """Position of ``temperature`` in ``temperatures``; ``None`` names the only one of a sweep at one
        temperature."""
        if temperature is None:
            if self.temperatures.size != 1:
                raise ValueError(
                    f"temperature must be given for a sweep at {self.temperatures.size} temperatures "
                    f"{self.temperatures.tolist()}"
                )
            return 0
        hits = np.flatnonzero(self.temperatures == temperature)
        if hits.size == 0:
            raise ValueError(f"temperature must be one of {self.temperatures.tolist()}, got {temperature!r}")
        return int(hits[0])

    @property
    def U_figure(self) -> np.ndarray:
        """``[n_w, n_T, n, n]``: :attr:`U` in figure order (``plot_order``)."""
        return reorder(self.U, self.plot_order)

    def U_at(self, width, temperature=None) -> np.ndarray:
        """``U_1`` in figure order at one solved width (and temperature; ``None`` for a sweep at one)."""
        return reorder(self.U[self.index(width), self.temperature_index(temperature)], self.plot_order)

    def variance_at(self, width, temperature=None, split: str = "test") -> np.ndarray:
        """``[B]`` the predictor's variance (eq-predictor) on the evaluation split ``split`` at one solved width
        (and temperature; ``None`` for a sweep at one)."""
        if not self.variances:
            raise ValueError("the sweep holds no variances: solve it with theory_sweep(..., variances=True)")
        if split not in self.variances:
            raise ValueError(
                f"split must be one of the sweep's evaluation splits {sorted(self.variances)}, got {split!r}"
            )
        return self.variances[split][self.index(width), self.temperature_index(temperature)]

    def upper_U_at(self, width, temperature=None) -> tuple[np.ndarray, ...]:
        """``(U_2, ..., U_L)`` in path order (``h_l`` slowest) at one solved width (and temperature): the order
        parameters of the layers above the first; empty for one layer."""
        k, j = self.index(width), self.temperature_index(temperature)
        return tuple(U[k, j] for U in self.U_layers[1:])


def _widths(widths) -> tuple:
    """Strictly increasing integer widths >= 1, optionally followed by ``inf`` (the GP limit)."""
    try:
        items = list(widths)
    except TypeError as err:
        raise ValueError(
            f"widths must be a sequence of integer widths >= 1 (inf: the GP limit), got {widths!r}"
        ) from err
    gp = (
        bool(items)
        and isinstance(items[-1], numbers.Real)
        and not isinstance(items[-1], bool)
        and items[-1] == math.inf
    )
    finite = items[:-1] if gp else items
    out = tuple(int(w) for w in increasing_ints(finite, "widths")) if finite or not gp else ()
    return out + ((math.inf,) if gp else ())


def _solve(data: PathData, width, temperature: float, initial, max_iterations: int, strict: bool):
    with warnings.catch_warnings():
        # an uncertified point that may be kept is marked in `converged` (strict: the solver raises instead)
        warnings.simplefilter("ignore", CertificateWarning)
        return solve(
            data.features,
            data.y,
            heads=data.network.heads,
            width=width,
            temperature=temperature,
            initial=initial,
            max_iterations=max_iterations,
            on_failure="raise" if strict else "warn",
        )


def sweep_width(
    data: PathData,
    width,
    temperatures,
    warm_start: bool,
    keep_uncertified: bool,
    max_iterations: int,
    variances: bool = True,
) -> dict:
    """The theory at one width and every temperature (one task of :func:`theory_sweep`).

    The temperatures are solved from the highest down: the minimiser moves smoothly with ``T``, so with
    ``warm_start`` each point starts from the previous certified minimiser (a start that fails to certify is
    retried from the GP values, the solver's default start).

    Returns:
        a dict with ``"U": [n_T, n, n]``, ``"U_layers": [[n_T, n_l, n_l] per layer]``, the ``[n_T]`` arrays
        ``"U_a"``, ``"action"``, ``"gradient_norm"``, ``"hessian_min_eigenvalue"``, ``"converged"``,
        ``"iterations"``, ``"warm_started"``, ``"solve_seconds"``, and ``"means"``, ``"variances"``:
        ``{split: [n_T, B]}`` the predictor's mean and variance (:meth:`attnpaths.theory.TheorySolution.predict`);
        without ``variances`` the means alone (:meth:`~attnpaths.theory.TheorySolution.predict_mean`, no kernel
        between the splits and the training set) and ``"variances"`` empty."""
    points = [None] * len(temperatures)
    previous = None
    for j in reversed(range(len(temperatures))):
        start = time.perf_counter()
        initial = previous if (warm_start and math.isfinite(width)) else None
        sol = _solve(
            data, width, temperatures[j], initial, max_iterations, strict=not keep_uncertified and initial is None
        )
        if initial is not None and not sol.converged:
            initial = None
            sol = _solve(data, width, temperatures[j], None, max_iterations, strict=not keep_uncertified)
        seconds = time.perf_counter() - start
        previous = [torch.as_tensor(u) for u in sol.U_layers] if sol.converged else None
        points[j] = {key: getattr(sol, key) for key in ("U", "U_layers", *_SCALARS[:-2])}
        points[j].update(warm_started=initial is not None, solve_seconds=seconds)
        predict = sol.predict if variances else lambda features: (sol.predict_mean(features),)
        points[j]["predicted"] = {s: predict(features) for s, (features, _) in data.evaluation.items()}
    row = {key: np.array([p[key] for p in points]) for key in _SCALARS}
    row["U"] = np.stack([p["U"] for p in points])
    row["U_layers"] = [np.stack([p["U_layers"][l] for p in points]) for l in range(len(points[0]["U_layers"]))]
    for i, key in enumerate(("means", "variances")[: 2 if variances else 1]):
        row[key] = {s: np.stack([p["predicted"][s][i] for p in points]) for s in data.evaluation}
    row.setdefault("variances", {})
    return row


_SCALARS = ("U_a", "action", "gradient_norm", "hessian_min_eigenvalue", "converged", "iterations")
_SCALARS += ("warm_started", "solve_seconds")  # the sweep's own, not the solution's


def theory_sweep(
    data: PathData,
    widths,
    temperatures,
    *,
    gp_limit: bool = False,
    warm_start: bool = False,
    keep_uncertified: bool = False,
    max_iterations: int = 200,
    variances: bool = True,
    engine=HERE,
    description: str = "theory (N, T)",
    progress: bool = True,
) -> TheorySweep:
    """Solve the theory (eq-action) at every width and temperature and evaluate the mean predictor (eq-predictor) on every
    evaluation split of ``data``.

    Args:
        data: path features of the network on a training set and its evaluation splits.
        widths: strictly increasing integer widths ``N >= 1`` (every layer has width ``N``), optionally ending
            with ``inf`` (the GP limit, (eq-gp)).
        temperatures: strictly increasing likelihood variances ``T > 0`` (one element for one temperature).
        gp_limit: also solve the GP limit at every temperature (:attr:`TheorySweep.gp`).
        warm_start: start each temperature below the highest from the previous certified minimiser
            (:func:`sweep_width`); the minimiser is the same when the action has one minimum.
        keep_uncertified: keep a point whose minimiser is not certified (the solver's gradient or Hessian test
            fails): its last iterate, marked ``False`` in ``converged``; otherwise the sweep raises.
        max_iterations: the solver's Newton iteration cap.
        variances: also the predictor's variances (:attr:`TheorySweep.variances`); without them the means take
            ``B N0 n`` products per split and point rather than a ``[B, P]`` kernel and a solve with ``B``
            right-hand sides.
        engine: where the widths run: :data:`attnpaths.engine.HERE` (the default), a loop in this process; else
            one :func:`attnpaths.engine.map_tasks` task per width on ``engine`` (None: the default engine, an
            :class:`attnpaths.engine.Engine` or a ``dask.distributed`` client). The same numbers wherever they run.
        description: the sweep's name on its progress bar (and in the engine's errors).
        progress: a tqdm bar over widths.
    """
    if not isinstance(data, PathData):
        raise ValueError(f"data must be a PathData (path features of a network), got {type(data).__name__}")
    widths = _widths(widths)
    temperatures = tuple(float(T) for T in increasing_reals(temperatures, "temperatures"))
    max_iterations = positive_int(max_iterations, "max_iterations")
    shared = dict(
        data=data,
        temperatures=list(temperatures),
        warm_start=bool(warm_start),
        keep_uncertified=bool(keep_uncertified),
        max_iterations=max_iterations,
        variances=bool(variances),
    )
    if engine is not HERE:
        rows = map_tasks(
            sweep_width,
            [dict(width=width) for width in widths],
            description=description,
            progress=progress,
            shared=shared,
            engine=engine,
        )
    else:
        rows = [
            sweep_width(width=width, **shared)
            for width in tqdm(widths, desc=description, disable=not progress, leave=False)
        ]
    means = {s: np.stack([r["means"][s] for r in rows]) for s in data.evaluation}
    spreads = {s: np.stack([r["variances"][s] for r in rows]) for s in data.evaluation} if variances else {}
    labels = {s: y.numpy() for s, (_, y) in data.evaluation.items()}
    accuracy = {s: np.array([[classification_accuracy(m, labels[s]) for m in row] for row in means[s]]) for s in means}
    mse = {s: np.mean((means[s] - labels[s]) ** 2, axis=-1) for s in means}
    stacked = {key: np.stack([r[key] for r in rows]) for key in ("U", *_SCALARS)}
    U_layers = tuple(np.stack([r["U_layers"][l] for r in rows]) for l in range(len(rows[0]["U_layers"])))
    gp = None
    if gp_limit:
        gp = theory_sweep(
            data,
            (math.inf,),
            temperatures,
            max_iterations=max_iterations,
            variances=variances,
            engine=engine,
            description=f"{description}, GP limit",
            progress=False,
        )
    return TheorySweep(
        widths=np.array(widths),
        temperatures=np.array(temperatures),
        U_layers=U_layers,
        means=means,
        accuracy=accuracy,
        mse=mse,
        names=data.network.plot_names,
        plot_order=data.network.plot_order,
        gp=gp,
        variances=spreads,
        **stacked,
    )


def head_score_curve(sweep: TheorySweep, heads, temperature=None) -> np.ndarray:
    """Normalised head scores (sec-head-scores) at every width of ``sweep`` (at one of its temperatures; ``None`` for a sweep
    at one): ``[n_w, L, max(H)]`` from the flat-order ``U``."""
    j = sweep.temperature_index(temperature)
    return np.stack([head_scores(U, heads) for U in sweep.U[:, j]])
