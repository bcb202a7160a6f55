"""The theory of the one-shot task over widths and temperatures (Fig. 3b; sec-oneshot-theory): the grid of the theory
(eq-action, eq-predictor) and of its GP limit (eq-gp), the temperature chosen per width on one split (the validation
episodes in the chapter; the test episodes reproduce the authors' choice), the posterior samples at the chosen
temperatures, and what the chapter reads from them: checks of the minimisers, the label fraction of the leading kernel
PCs (sec-oneshot-pcs), the ablations of ``U`` (sec-oneshot-interplay) and the saddle point at neighbouring entropy
weights (sec-oneshot-saddle).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .._validation import as_float64_array
from ..experiments import sampling
from ..experiments.kernel_pcs import label_fraction, mean_predictor
from ..experiments.path_data import PathData
from ..experiments.sweep import TheorySweep, theory_sweep
from ..kernels import gp_kernel, pc_label_overlap, renormalized_kernel
from ..paths import path_features
from ..theory import solve
from .episodes import class_sorted_sequences

#: Widths of Fig. 3b (sec-oneshot-theory; the authors' config.csv).
PAPER_WIDTHS = (10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)
#: Temperatures of the authors' grid (sec-oneshot-temperatures; their config.csv).
PAPER_TEMPERATURES = (0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5)
#: Temperatures among which the authors pick the GP line's (sec-oneshot-temperatures, ``forced_temperature``).
PAPER_GP_TEMPERATURES = (0.025, 0.05, 0.075, 0.1, 0.25)


def theory_grid(
    data: PathData,
    widths=PAPER_WIDTHS,
    temperatures=PAPER_TEMPERATURES,
    *,
    warm_start: bool = True,
    max_iterations: int = 200,
    progress: bool = True,
    engine=None,
) -> TheorySweep:
    """The theory (eq-action) at every width and temperature, with the mean predictor (eq-predictor) on every split: the
    :func:`~attnpaths.experiments.sweep.theory_sweep` of the one-shot chapter, one engine task per width on
    ``engine`` (None: the default engine; :data:`attnpaths.engine.HERE`: a loop in this process).

    With ``warm_start`` the temperatures of one width are solved from the highest down, each starting from the
    previous certified minimiser (the chapter checks the selected points against a start from the GP values,
    :func:`warm_start_differences`). A point whose minimiser is not certified keeps the solver's last iterate and is
    marked ``False`` in ``converged``; :func:`selected` never chooses it. The grid holds the predictor's means, not
    its variances (``variances`` empty: the chapter reads accuracies and errors).
    """
    return theory_sweep(
        data,
        widths,
        temperatures,
        warm_start=warm_start,
        keep_uncertified=True,
        max_iterations=max_iterations,
        variances=False,
        engine=engine,
        description="theory (N, T)",
        progress=progress,
    )


def gp_grid(data: PathData, temperatures=PAPER_GP_TEMPERATURES, *, engine=None) -> TheorySweep:
    """The GP limit (eq-gp), ``U = I`` at every temperature, as a one-width :class:`~attnpaths.experiments.sweep.TheorySweep`
    (``engine``: as :func:`theory_grid`; means without variances, as there)."""
    return theory_sweep(
        data,
        (math.inf,),
        temperatures,
        keep_uncertified=True,
        max_iterations=1,
        variances=False,
        engine=engine,
        description="GP",
        progress=False,
    )


def select_temperature(accuracy, mse=None, allowed=None) -> np.ndarray:
    """Index of the chosen temperature for every width: the highest accuracy; ties go to the lower mean
    squared error (if given), then to the lower temperature.

    Args:
        accuracy: ``[n_w, n_T]`` accuracies on the selection split; mse: ``[n_w, n_T]`` or None.
        allowed: bool ``[n_w, n_T]`` the points that may be chosen (default all); every width needs one.

    Returns:
        int ``[n_w]``.
    """
    acc = as_float64_array(accuracy, "accuracy")
    if acc.ndim != 2 or acc.shape[1] < 1:
        raise ValueError(f"accuracy must have shape [n_w, n_T], got {acc.shape}")
    err = np.zeros_like(acc) if mse is None else as_float64_array(mse, "mse")
    if err.shape != acc.shape:
        raise ValueError(f"mse must have the shape of accuracy {acc.shape}, got {err.shape}")
    ok = np.ones(acc.shape, dtype=bool) if allowed is None else np.asarray(allowed, dtype=bool)
    if ok.shape != acc.shape:
        raise ValueError(f"allowed must have the shape of accuracy {acc.shape}, got {ok.shape}")
    if not ok.any(axis=1).all():
        raise ValueError(
            f"allowed must leave at least one temperature for every width (none for rows "
            f"{np.flatnonzero(~ok.any(axis=1)).tolist()})"
        )
    chosen = []
    for a, e, m in zip(acc, err, ok):
        # lexicographic: highest accuracy, then lowest mse, then lowest temperature index
        chosen.append(min(np.flatnonzero(m), key=lambda j: (-a[j], e[j], j)))
    return np.array(chosen, dtype=int)


def selected(grid: TheorySweep, on: str = "validation") -> dict:
    """The grid at the temperature chosen on split ``on`` for every width (:func:`select_temperature`),
    among the certified points.

    Returns:
        A dict with the keys ``on`` (the split), ``index`` and ``temperature`` (``[n_w]``), ``accuracy`` and
        ``mse`` (each ``{split: [n_w]}``), ``U`` (``[n_w, n, n]``) and ``means`` (``{split: [n_w, B]}``).
    """
    if on not in grid.accuracy:
        raise ValueError(f"on must be one of the evaluated splits {tuple(grid.accuracy)}, got {on!r}")
    idx = select_temperature(grid.accuracy[on], grid.mse[on], grid.converged)
    rows = np.arange(len(idx))
    return {
        "on": on,
        "index": idx,
        "temperature": grid.temperatures[idx],
        "accuracy": {s: a[rows, idx] for s, a in grid.accuracy.items()},
        "mse": {s: m[rows, idx] for s, m in grid.mse.items()},
        "U": grid.U[rows, idx],
        "means": {s: m[rows, idx] for s, m in grid.means.items()},
    }


def selection_summary(
    widths, selection: dict, test_selection: dict, gp_selection: dict, gp_test_selection: dict
) -> dict:
    """The numbers that the one-shot chapter's prose quotes of the selected grid (sec-oneshot-theory), accuracies on
    the test episodes in %: ``N_small`` and ``N_large`` (the smallest and largest width), ``acc_small``, ``acc_large``
    and ``T_small`` (the theory's accuracy there, and its temperature at the smallest), ``gp_acc`` and ``gp_T`` (the
    GP limit), ``gp_test_rule`` and ``gp_T_test_rule`` (the GP limit with its temperature chosen on the test
    episodes) and ``test_rule_gain`` (the theory's mean gain over the widths from that rule, in points).

    Args:
        widths: ``[n_w]`` the grid's widths; selection, test_selection: :func:`selected` ``(grid, "validation")`` and
            ``(grid, "test")``; gp_selection, gp_test_selection: the same of the GP grid (:func:`gp_grid`).

    Returns:
        ``{name: int | float}``.
    """
    test = selection["accuracy"]["test"]
    return {
        "N_small": int(widths[0]),
        "N_large": int(widths[-1]),
        "acc_small": 100 * test[0],
        "acc_large": 100 * test[-1],
        "T_small": float(selection["temperature"][0]),
        "gp_acc": 100 * float(gp_selection["accuracy"]["test"][0]),
        "gp_T": float(gp_selection["temperature"][0]),
        "gp_test_rule": 100 * float(gp_test_selection["accuracy"]["test"][0]),
        "gp_T_test_rule": float(gp_test_selection["temperature"][0]),
        "test_rule_gain": 100 * float(np.mean(test_selection["accuracy"]["test"] - test)),
    }


def sample_widths(
    data: PathData, widths, temperatures, seed: int, *, warmup, draws, chains, progress: bool = True, device="cpu"
) -> dict:
    """Posterior samples of the network at every sampled width and its selected temperature
    (:func:`attnpaths.experiments.sampling.sample_widths`, one engine task per width, the generator of width ``N``
    seeded with ``task_seed(seed, N)``): ``{width: SampledPoint}`` in the order of ``widths``.

    Args:
        widths, temperatures, warmup, draws, chains: one entry per sampled width.
        device: where the sampler's linear algebra runs (``"cpu"`` or ``"cuda"``).
    """
    columns = (widths, temperatures, warmup, draws, chains)
    if len({len(c) for c in columns}) != 1:
        raise ValueError(
            "widths, temperatures, warmup, draws and chains must have one entry per sampled width, got "
            f"lengths {[len(c) for c in columns]}"
        )
    plans = [sampling.SamplingPlan(int(w), int(a), int(b), int(c)) for w, a, b, c in zip(widths, warmup, draws, chains)]
    points, _ = sampling.sample_widths(
        data, plans, [float(T) for T in temperatures], seed, progress=progress, device=device
    )
    return points


def warm_start_differences(data: PathData, grid: TheorySweep, selection: dict, widths) -> dict[int, float]:
    """How far the warm-started minimiser of :func:`theory_grid` lies from the one reached from the GP values
    (the solver's default start), at the selected point of every width in ``widths`` (sec-oneshot-temperatures).

    Args:
        selection: :func:`selected` ``(grid, ...)``; widths: solved widths of ``grid``.

    Returns:
        ``{width: max_ij |U_ij(from GP values) - U_ij(selected)|}``; the solve from the GP values must certify
        its minimiser (``on_failure="raise"``).
    """
    out = {}
    for w in widths:
        k = grid.index(w)
        T = float(selection["temperature"][k])
        reference = solve(data.features, data.y, heads=data.network.heads, width=w, temperature=T, on_failure="raise")
        out[int(w)] = float(np.abs(reference.U - selection["U"][k]).max())
    return out


def order_parameter_summary(U) -> dict:
    """Where ``U`` lies relative to its GP value ``I`` (eq-gp, sec-oneshot-order-parameter).

    Args:
        U: ``[n, n]`` order parameter.

    Returns:
        ``{"diagonal_min", "diagonal_max", "offdiagonal_min", "offdiagonal_max", "distance_to_gp"}``, the last
        ``||U - I||_F``.
    """
    U = as_float64_array(U, "U")
    if U.ndim != 2 or U.shape[0] != U.shape[1] or U.shape[0] < 2:
        raise ValueError(f"U must be a square matrix of size >= 2, got shape {U.shape}")
    diagonal, off = np.diag(U), U[~np.eye(U.shape[0], dtype=bool)]
    return {
        "diagonal_min": float(diagonal.min()),
        "diagonal_max": float(diagonal.max()),
        "offdiagonal_min": float(off.min()),
        "offdiagonal_max": float(off.max()),
        "distance_to_gp": float(np.linalg.norm(U - np.eye(U.shape[0]))),
    }


def gp_approach_ratios(grid: TheorySweep) -> dict[float, float]:
    """``||U(N_max) - I||_F / ||U(N_min) - I||_F`` between the grid's largest and smallest width, at every
    temperature whose points are certified at every width (sec-oneshot-temperatures).

    Any action of the form ``E(U) + N s(U)`` (eq-action) whose entropy term ``s`` is smallest at the GP value
    ``I`` moves its minimiser towards ``I`` as ``N`` grows, so a ratio below 1 is a check of the solver, not
    a finding about the data.

    Returns:
        ``{T: ratio}``; raises ``ValueError`` when no temperature is certified at every width.
    """
    if not isinstance(grid, TheorySweep):
        raise ValueError(f"grid must be a TheorySweep, got {type(grid).__name__}")
    eye = np.eye(grid.U.shape[-1])
    out = {
        float(T): float(np.linalg.norm(grid.U[-1, j] - eye) / np.linalg.norm(grid.U[0, j] - eye))
        for j, T in enumerate(grid.temperatures)
        if grid.converged[:, j].all()
    }
    if not out:
        raise ValueError("grid must have a temperature with certified points at every width")
    return out


def label_fraction_draws(
    classes, encoder, attention, rngs, *, num_train: int, width: float, temperature: float, num_components: int
) -> dict:
    """:func:`label_fractions` at the minimiser of eq-action at ``width``, on one independently drawn set of
    ``num_train`` class-sorted training episodes of ``classes`` (``dataset.train``) per generator of ``rngs`` (at least
    2), encoded by ``encoder`` and read through ``attention`` (sec-oneshot-pcs).

    Returns:
        ``{"finite_width": [n_draws], "gp": [n_draws]}``; a draw whose minimiser is not certified raises
        ``RuntimeError``.
    """
    rngs = list(rngs)
    if len(rngs) < 2 or any(not isinstance(r, np.random.Generator) for r in rngs):
        raise ValueError(f"rngs must hold at least 2 numpy Generators, got {len(rngs)} entries")
    fw, gp = [], []
    for rng in rngs:
        episodes = class_sorted_sequences(classes, num_train, encoder, rng)
        features = path_features(episodes.x, attention)
        y = episodes.y.to(features.dtype)
        solution = solve(features, y, heads=attention.heads, width=width, temperature=temperature, on_failure="raise")
        fractions = label_fractions(features, y, solution.U, num_components)
        fw.append(fractions["finite_width"])
        gp.append(fractions["gp"])
    return {"finite_width": np.array(fw), "gp": np.array(gp)}


def label_fractions(features, y, U, num_components: int) -> dict[str, float]:
    """The fraction of ``|y|^2`` carried by the first ``num_components`` principal components of the training
    kernel at the order parameter ``U`` (``K(U)``, eq-kernel) and of the GP kernel (eq-gp), on one training set
    (sec-oneshot-pcs).

    Args:
        features: ``[P, N0, n]`` training path features; y: ``[P]``; U: ``[n, n]`` (flat path order).

    Returns:
        ``{"finite_width": float, "gp": float}``.
    """
    y = torch.as_tensor(y, dtype=torch.float64)
    K = renormalized_kernel(features, torch.as_tensor(as_float64_array(U, "U")))
    return {
        "finite_width": label_fraction(pc_label_overlap(K, y, num_components)[0], num_components),
        "gp": label_fraction(pc_label_overlap(gp_kernel(features), y, num_components)[0], num_components),
    }


# --------------------------------------------------------------------------------------------------------
# what the theory's U does for the predictor, and the saddle point at neighbouring entropy weights


def ablation_means(
    data: PathData, U, temperature: float, *, gp_temperature: float | None = None
) -> dict[str, np.ndarray]:
    """The mean predictor (eq-predictor) on the test episodes with the theory's ``U`` and with two ablations of it
    (sec-oneshot-interplay).

    Args:
        U: ``[n, n]`` the theory's order parameter (flat path order) at one width, and temperature its temperature.
        gp_temperature: the temperature of the GP limit (e.g. its own, chosen on the validation episodes); ``None``:
            ``temperature``.

    Returns:
        ``{"theory", "diagonal", "gp"}``, each ``[B]``: with ``U``; with ``U``'s cross-path entries set to zero
        (its diagonal kept: the paths re-weighted, no cross-path kernels), both at ``temperature``; with the GP value
        ``I`` at ``gp_temperature``.
    """
    U = as_float64_array(U, "U")
    n = data.network.num_paths
    if U.ndim != 2 or U.shape != (n, n):
        raise ValueError(f"U must be [{n}, {n}] (flat path order), got shape {U.shape}")
    orders = {
        "theory": (U, temperature),
        "diagonal": (np.diag(np.diag(U)), temperature),
        "gp": (np.eye(n), temperature if gp_temperature is None else gp_temperature),
    }
    return {
        name: mean_predictor(data.features, data.y, data.features_test, order, T) for name, (order, T) in orders.items()
    }


def scaled_saddle_points(data: PathData, widths, temperatures, scales) -> dict[int, dict[float, np.ndarray]]:
    """The theory's ``U`` (flat path order) at width ``c N`` for every scale ``c`` of ``scales``: the saddle point of
    the action (eq-action) with its entropy weighted by ``c`` at width ``N``
    (:func:`attnpaths.experiments.sampling.scaled_width`), at each width's own temperature.

    Args:
        widths, temperatures: one temperature per width (e.g. the sampled widths and their selected temperatures).
        scales: entropy weights ``c`` (``c N`` must be an integer for every width).

    Returns:
        ``{N: {c: [n, n]}}``.
    """
    widths, temperatures = list(widths), [float(t) for t in temperatures]
    if len(widths) != len(temperatures):
        raise ValueError(f"temperatures must give one temperature per width, got {len(temperatures)} for {len(widths)}")
    scales = sorted({float(c) for c in scales})
    if not scales:
        raise ValueError("scales must hold at least one entropy weight")
    out = {}
    for w, T in zip(widths, temperatures):
        scaled = [sampling.scaled_width(w, c) for c in scales]
        # raises where a minimiser is not certified
        sweep = theory_sweep(data, scaled, [T], variances=False, progress=False)
        out[int(w)] = {c: sweep.U[k, 0] for k, c in enumerate(scales)}
    return out


def fixed_temperature_samples(
    data: PathData,
    grid: TheorySweep,
    samples: dict,
    sample_temperatures,
    temperature: float,
    seed: int,
    *,
    warmup,
    draws,
    chains,
    progress: bool = False,
    device="cpu",
) -> tuple[dict, dict]:
    """Posterior samples at every width of ``samples`` at ONE temperature of the grid, and the saddle point there
    (sec-oneshot-saddle): how the samples approach the saddle point as ``N`` grows is a statement at fixed ``T``,
    while each width's samples are drawn at its own selected temperature.

    Args:
        samples: ``{width: SampledPoint}`` (:func:`sample_widths`) and sample_temperatures, the temperature of
            each: a width sampled at ``temperature`` is reused, the others are drawn afresh with ``seed``.
        temperature: one of the grid's temperatures; warmup, draws, chains: one entry per width of ``samples``.

    Returns:
        ``({width: SampledPoint}, {width: [n, n] the grid's U at that width and temperature})``.
    """
    j = grid.temperature_index(float(temperature))
    widths = list(samples)
    if not (len(warmup) == len(draws) == len(chains) == len(sample_temperatures) == len(widths)):
        raise ValueError(
            f"sample_temperatures, warmup, draws and chains must give one entry per sampled width {widths}"
        )
    redo = [k for k, T in enumerate(sample_temperatures) if float(T) != float(temperature)]
    out = dict(samples)
    if redo:
        out |= sample_widths(
            data,
            [widths[k] for k in redo],
            [float(temperature)] * len(redo),
            seed,
            warmup=[warmup[k] for k in redo],
            draws=[draws[k] for k in redo],
            chains=[chains[k] for k in redo],
            progress=progress,
            device=device,
        )
    out = {w: out[w] for w in widths}
    return out, {w: grid.U[grid.index(w), j] for w in widths}
