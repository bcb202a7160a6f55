"""Deeper and wider networks on the hidden-Markov-chain task (sec-depth-networks), built from the task's heads.

Every head is one of :mod:`attnpaths.hmc.heads` and has a one-letter code within its layer; a path is named by
the codes of its heads, layer 1 first (``"ssu"``: layer-1 head ``s``, layer-2 head ``s``, layer-3 head ``u``).

Three layers, two heads each (:func:`three_layer_network`, 8 paths):

==========  =====================================================  =========================================
layer       heads (code: builder)                                  role on the good path ``ssu``
==========  =====================================================  =========================================
1           ``s``: same-token, its BOS query attends to BOS;       passes ``x_{t-1}`` when ``s_{t-1} = s_t``,
            ``b``: blank, perturbed (seed 147)                     else BOS (zero features)
2           ``s``: same-token; ``d``: different-token              same gate one token later
3           ``u``: uniform; ``b``: blank, perturbed (seed 247)     pools over the sequence
==========  =====================================================  =========================================

The good path ``ssu`` reads ``x_{t-2}`` into the query ``t`` of layer 2 exactly when the hidden state stayed
twice, ``s_{t-2} = s_{t-1} = s_t`` (else BOS), and the uniform head sums over ``t``: its feature along
``v_+ + v_-`` counts runs of three equal states, which occur with probability ``p^2`` per position (0.49 in
class ``y = +1``, 0.09 in class ``y = -1``). The count needs two gates and a pooling head: a path that swaps
one of them for the other head of its layer loses it (:func:`path_class_separation` measures it; the depth
chapter shows it). The layer-1 gate must send its BOS query to BOS: the authors' same-token head attends
uniformly from the BOS query, so every time the layer-2 gate falls back to BOS the path would add the mean of
the whole sequence, whose component along ``v_+ + v_-`` grows with the number of switches and cancels, on
average, the count of runs (``bos_to_bos=False`` builds that variant for comparison).

Two layers, four heads in layer 1 (:func:`wide_network`, 8 paths): layer 1 = [``s`` same-token, ``b`` blank
(seed 147), ``d`` different-token, ``u`` uniform], layer 2 = [``u`` uniform, ``b`` blank (seed 247)]. Its paths
``su``, ``bu``, ``sb``, ``bb`` are the 4-path network's ``g``, ``d``, ``a1``, ``a2``; ``du`` counts switches
(the mirror image of ``su``), ``uu`` is the mean of the sequence, ``db`` and ``ub`` end in the random head.

Blank heads are perturbed with ``p_I = p_P = p_O = perturbation`` (the 4-path network's convention), all
heads are multiplied by ``beta``, and the readout is the last token.

One network's results (sec-depth-theory): :func:`network_record` (its results-file record),
:func:`network_summary` (the numbers the chapter quotes) and :func:`sampler_table` (its sampler diagnostics).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..._validation import nonnegative_real, positive_real
from ...attention import Attention
from ...experiments import sampling
from ...experiments.path_data import PathNetwork
from ...experiments.sweep import TheorySweep
from ...paths import all_paths
from ..anatomy import class_separation, project_path_features
from ..data import HMCTask
from ..heads import HEAD_VERSIONS, PAPER_BETA, _as_task, default_bos_strength, hmc_head
from ..networks import LAYER1_BLANK_SEED, LAYER2_BLANK_SEED, LAYER2_MAIN_SEED, _last_token_attention, _perturbed_head
from .claims import largest_cross_weight


def bos_closed_same_token(task, *, beta: float = PAPER_BETA, bos_self_strength: float | None = None) -> torch.Tensor:
    """The ``same_token`` head (:func:`attnpaths.hmc.heads.hmc_head`, ``shift = -1``) whose BOS query attends to
    BOS (sec-depth-networks).

    The authors' head gives the BOS query no score on any key (BOS has zero features and no previous token),
    so it attends uniformly. Here the position block gets the score ``bos_self_strength`` (default
    :func:`~attnpaths.hmc.heads.default_bos_strength`, 1.5) on the BOS key for the BOS query, before ``beta``:
    with ``beta = 10`` the BOS query puts ``1 / (1 + 30 e^-15)`` of its weight on BOS. Every other query attends
    as in the authors' head.

    Args:
        task: the :class:`~attnpaths.hmc.data.HMCTask` (or an :class:`~attnpaths.hmc.data.HMCDataset`).
        beta: inverse softmax temperature (> 0).
        bos_self_strength: BOS score of the BOS query before ``beta`` (> 0).

    Returns:
        ``W`` ``[N0, N0]`` (key on the left, query on the right), float64.
    """
    task = _as_task(task)
    beta = positive_real(beta, "beta")
    strength = (
        default_bos_strength() if bos_self_strength is None else positive_real(bos_self_strength, "bos_self_strength")
    )
    weights = hmc_head("same_token", task, beta=beta)
    bos = task.feature_width  # the first row and column of the position block
    weights[bos, bos] = beta * strength
    return weights


@dataclass(frozen=True)
class HeadSpec:
    """One head of a coded network.

    Attributes:
        code: one letter, unique within its layer (a path's name joins its heads' codes).
        version: the builder's version (:data:`attnpaths.hmc.heads.HEAD_VERSIONS`).
        name: the head's name in figures and prose.
        seed: seed of a perturbed head's own generator (``None`` for an unperturbed head).
        bos_to_bos: a ``same_token`` head whose BOS query attends to BOS (:func:`bos_closed_same_token`).
    """

    code: str
    version: str
    name: str
    seed: int | None = None
    bos_to_bos: bool = False

    def __post_init__(self):
        if not (isinstance(self.code, str) and len(self.code) == 1 and self.code.isalpha()):
            raise ValueError(f"code must be one letter, got {self.code!r}")
        if self.version not in HEAD_VERSIONS:
            raise ValueError(f"version must be one of {HEAD_VERSIONS}, got {self.version!r}")
        if self.bos_to_bos and self.version != "same_token":
            raise ValueError(f"bos_to_bos applies to the same_token head only, got version {self.version!r}")

    def weights(self, task: HMCTask, beta: float, perturbation: float) -> torch.Tensor:
        """``W`` ``[N0, N0]`` of this head; blank heads are perturbed by ``perturbation`` (``p_I = p_P = p_O``)."""
        if self.bos_to_bos:
            return bos_closed_same_token(task, beta=beta)
        return _perturbed_head(task, beta, perturbation, self.version, self.seed)


@dataclass(frozen=True, eq=False)
class CodedHMCNetwork(PathNetwork):
    """An HMC attention network whose heads have one-letter codes and whose paths are named by them (a
    :class:`~attnpaths.experiments.path_data.PathNetwork`).

    Attributes:
        name: identifier, e.g. ``"three_layer"``.
        label: its name in figures, e.g. ``"3 layers x 2 heads"``.
        attention: the fixed attention (W form, readout ``last_token``).
        layers: per layer, the :class:`HeadSpec` of each head.
        good_path: the name of the path designed to carry the label.
        beta: inverse softmax temperature of every head; perturbation: ``p_I = p_P = p_O`` of the blank heads.
    """

    name: str
    label: str
    attention: Attention
    layers: tuple[tuple[HeadSpec, ...], ...]
    good_path: str
    beta: float
    perturbation: float

    @property
    def path_names(self) -> tuple[str, ...]:
        """Path names in flat path order (``h_1`` slowest), e.g. ``("ssu", "ssb", "sdu", ...)``."""
        return tuple("".join(self.layers[l][h].code for l, h in enumerate(path)) for path in all_paths(self.heads))

    @property
    def head_versions(self) -> tuple[tuple[str, ...], ...]:
        """Per layer, the builder version of each head."""
        return tuple(tuple(spec.version for spec in layer) for layer in self.layers)

    @property
    def head_names(self) -> tuple[tuple[str, ...], ...]:
        """Per layer, ``"code: name"`` of each head."""
        return tuple(tuple(f"{spec.code}: {spec.name}" for spec in layer) for layer in self.layers)

    def path_heads(self, path: str) -> tuple[HeadSpec, ...]:
        """The heads of the path named ``path``, layer 1 first."""
        if path not in self.path_names:
            raise ValueError(f"path must be one of {self.path_names}, got {path!r}")
        return tuple(next(s for s in layer if s.code == code) for layer, code in zip(self.layers, path))

    def neighbours(self, path: str) -> dict[str, list[str]]:
        """The paths that differ from ``path`` in exactly one layer: ``{"layer l": [names]}``."""
        self.path_heads(path)
        out = {}
        for l, layer in enumerate(self.layers):
            out[f"layer {l + 1}"] = [path[:l] + spec.code + path[l + 1 :] for spec in layer if spec.code != path[l]]
        return out


def coded_network(
    dataset, name: str, label: str, layers, good_path: str, *, beta: float = PAPER_BETA, perturbation: float = 1.0
) -> CodedHMCNetwork:
    """A :class:`CodedHMCNetwork` from its layers of :class:`HeadSpec` (readout: last token).

    Args:
        dataset: an :class:`~attnpaths.hmc.data.HMCDataset` (or its ``HMCTask``).
        layers: per layer, a non-empty sequence of :class:`HeadSpec` with distinct codes.
        good_path: the name of one of the network's paths.
        beta: inverse softmax temperature (> 0); perturbation: ``p_I = p_P = p_O`` of the blank heads (>= 0).
    """
    task = _as_task(dataset)
    beta = positive_real(beta, "beta")
    perturbation = nonnegative_real(perturbation, "perturbation")
    layers = tuple(tuple(layer) for layer in layers)
    if not layers or any(not layer or not all(isinstance(s, HeadSpec) for s in layer) for layer in layers):
        raise ValueError("layers must be a non-empty sequence of non-empty sequences of HeadSpec")
    for l, layer in enumerate(layers):
        codes = [s.code for s in layer]
        if len(set(codes)) != len(codes):
            raise ValueError(f"layers: the heads of layer {l + 1} must have distinct codes, got {codes}")
    attention = _last_token_attention(layers, lambda spec: spec.weights(task, beta, perturbation))
    network = CodedHMCNetwork(
        name=name,
        label=label,
        attention=attention,
        layers=layers,
        good_path=good_path,
        beta=beta,
        perturbation=perturbation,
    )
    if good_path not in network.path_names:
        raise ValueError(f"good_path must be one of the network's paths {network.path_names}, got {good_path!r}")
    return network


def three_layer_network(
    dataset, *, beta: float = PAPER_BETA, perturbation: float = 1.0, bos_to_bos: bool = True
) -> CodedHMCNetwork:
    """Three layers of two heads (8 paths): layer 1 = [``s`` same-token (BOS query to BOS), ``b`` blank],
    layer 2 = [``s`` same-token, ``d`` different-token], layer 3 = [``u`` uniform, ``b`` blank]; good path
    ``ssu`` (the module's table).

    Args:
        dataset: an :class:`~attnpaths.hmc.data.HMCDataset` (or its ``HMCTask``).
        beta: inverse softmax temperature of every head (paper: 10).
        perturbation: ``p_I = p_P = p_O`` of the two blank heads (as in the 4-path network: 1).
        bos_to_bos: the layer-1 same-token head sends its BOS query to BOS (:func:`bos_closed_same_token`);
            ``False`` uses the authors' head, whose BOS query attends uniformly.
    """
    same_1 = (
        HeadSpec("s", "same_token", "same-token, BOS to BOS", bos_to_bos=True)
        if bos_to_bos
        else HeadSpec("s", "same_token", "same-token")
    )
    layers = (
        (same_1, HeadSpec("b", "blank", "blank", LAYER1_BLANK_SEED)),
        (HeadSpec("s", "same_token", "same-token"), HeadSpec("d", "different_token", "different-token")),
        (
            HeadSpec("u", "uniform_attention", "uniform", LAYER2_MAIN_SEED),
            HeadSpec("b", "blank", "blank", LAYER2_BLANK_SEED),
        ),
    )
    label = "3 layers x 2 heads" if bos_to_bos else "3 layers x 2 heads, authors' layer-1 head"
    return coded_network(
        dataset,
        "three_layer" if bos_to_bos else "three_layer_authors_gate",
        label,
        layers,
        "ssu",
        beta=beta,
        perturbation=perturbation,
    )


def wide_network(dataset, *, beta: float = PAPER_BETA, perturbation: float = 1.0) -> CodedHMCNetwork:
    """Two layers, four heads in layer 1 (8 paths): layer 1 = [``s`` same-token, ``b`` blank, ``d``
    different-token, ``u`` uniform], layer 2 = [``u`` uniform, ``b`` blank]; good path ``su`` (the 4-path
    network's ``g``).

    Args:
        dataset: an :class:`~attnpaths.hmc.data.HMCDataset` (or its ``HMCTask``).
        beta: inverse softmax temperature of every head (paper: 10).
        perturbation: ``p_I = p_P = p_O`` of the two blank heads (as in the 4-path network: 1).
    """
    layers = (
        (
            HeadSpec("s", "same_token", "same-token"),
            HeadSpec("b", "blank", "blank", LAYER1_BLANK_SEED),
            HeadSpec("d", "different_token", "different-token"),
            HeadSpec("u", "uniform_attention", "uniform"),
        ),
        (
            HeadSpec("u", "uniform_attention", "uniform", LAYER2_MAIN_SEED),
            HeadSpec("b", "blank", "blank", LAYER2_BLANK_SEED),
        ),
    )
    return coded_network(dataset, "wide", "2 layers, 4 + 2 heads", layers, "su", beta=beta, perturbation=perturbation)


def path_class_separation(features, y, task) -> np.ndarray:
    """Class separation of every path's features along ``v_+ + v_-`` (sec-depth-networks): the difference of the
    class means of the projection in pooled-standard-deviation units
    (:func:`attnpaths.hmc.anatomy.class_separation`), the check of which paths carry the label.

    Args:
        features: ``[P, N0, n_paths]`` path features (eq-path-features); y: ``[P]`` labels ``+-1``.
        task: the :class:`~attnpaths.hmc.data.HMCTask` (or a data set) that fixes ``v_+`` and ``v_-``.

    Returns:
        ``[n_paths]`` in flat path order.
    """
    task = _as_task(task)
    projection = project_path_features(features, task.v_plus + task.v_minus)
    return class_separation(projection, np.asarray(y))


# --------------------------------------------------------------------------------------------------------
# one network's results (sec-depth-theory)


def _check_curve(curve) -> None:
    if not isinstance(curve, TheorySweep) or curve.temperatures.size != 1 or curve.gp is None:
        raise ValueError(
            f"curve must be a TheorySweep at one temperature with its GP limit, got {type(curve).__name__}"
        )


def network_record(curve: TheorySweep, samples: dict, exact: dict) -> dict:
    """The results-file record of one network of the depth chapter.

    Args:
        curve: the theory over widths at one temperature, with its GP limit
            (:func:`~attnpaths.experiments.sweep.theory_sweep`).
        samples, exact: ``{width: SampledPoint}`` and ``{width: ExactOrderParameter}``
            (:func:`~attnpaths.experiments.sampling.sample_networks`).

    Returns:
        a dict with ``"theory"`` (``"N"``, ``"accuracy"``, ``"U"``, ``"U_layers"``, ``"converged"``,
        ``"hessian_min_eigenvalue"``), ``"gp_accuracy"``, ``"sampled"`` (per width ``"accuracy"``, ``"mc_sd"``,
        ``"U"``, ``"U_mc_se"``, the sampler's diagnostics and ``"U_upper"``), ``"exact"``
        (:func:`attnpaths.experiments.sampling.exact_record` of ``exact``) and ``"path_order"`` (the path names);
        widths as ``str(N)``, every ``U`` ``[n, n]`` in the order ``path_order``, ``U_layers`` one matrix per layer.
    """
    _check_curve(curve)
    return {
        "theory": {
            "N": curve.widths,
            "accuracy": curve.accuracy["test"][:, 0],
            "U": {str(w): curve.U_at(w) for w in curve.widths},
            "U_layers": {str(w): [u[curve.index(w), 0] for u in curve.U_layers] for w in curve.widths},
            "converged": curve.converged[:, 0],
            "hessian_min_eigenvalue": curve.hessian_min_eigenvalue[:, 0],
        },
        "gp_accuracy": float(curve.gp.accuracy["test"][0, 0]),
        "sampled": {
            str(w): {
                "accuracy": p.accuracy,
                "mc_sd": p.accuracy_mc_sd,
                "U": p.U,
                "U_mc_se": p.U_se,
                **p.diagnostics,
                "U_upper": {
                    f"U_{l + 2}": {"U": U, "U_mc_se": se} for l, (U, se) in enumerate(zip(p.U_upper, p.U_upper_se))
                },
            }
            for w, p in samples.items()
        },
        "exact": sampling.exact_record(exact),
        "path_order": list(curve.names),
    }


def network_summary(curve: TheorySweep, samples: dict, good_path: str) -> dict:
    """The numbers the depth chapter quotes of one network, at the smallest and the largest solved width
    (``N_min``, ``N_max``) and at the smallest sampled width ``N_s``.

    Args:
        curve: the theory over widths at one temperature, with its GP limit; samples: ``{width: SampledPoint}``
            at solved widths; good_path: the name of the path that carries the label (e.g. ``"ssu"``).

    Returns:
        ``{name: float}``: the theory's test accuracy ``acc_min`` and ``acc_max`` and the GP limit's ``gp``; the
        sampled accuracy ``sampled_min`` at ``N_s`` with its Monte-Carlo sd ``sampled_min_sd``, and
        ``max_sampled_diff``, the largest ``|A_sampled - A_theory|`` over the sampled widths; the good path's
        weight ``U_gg`` of the theory (``Ugood_min``, ``Ugood_max``) and of the samples at ``N_s``
        (``Ugood_sampled``, its error ``Ugood_sampled_se``, ``Ugood_shift`` relative to the theory there); the
        theory's largest normalised cross weight at ``N_min`` (:func:`~.claims.largest_cross_weight`), its
        entry ``cross_entry`` (a string ``"U[a,b]"``), value ``cross_theory``, the samples' value of that entry at
        ``N_s`` (``cross_sampled``, ``cross_sampled_se``) and its distance from the theory's there in Monte-Carlo
        standard errors ``cross_z_min``; the normalised weight ``cross_ratio_min`` and, at ``N_max``,
        ``cross_ratio_max``.
    """
    _check_curve(curve)
    if not samples or any(w not in curve.widths for w in samples):
        raise ValueError(f"samples must hold sampled solved widths of {curve.widths.tolist()}, got {list(samples)}")
    if good_path not in curve.names:
        raise ValueError(f"good_path must be one of the paths {list(curve.names)}, got {good_path!r}")
    n_min, n_max, n_s = curve.widths[0], curve.widths[-1], min(samples)
    accuracy = curve.accuracy["test"][:, 0]
    point = samples[n_s]
    good = curve.names.index(good_path)
    ratio, (i, j) = largest_cross_weight(curve.U_at(n_min))
    return {
        "acc_min": float(accuracy[0]),
        "acc_max": float(accuracy[-1]),
        "gp": float(curve.gp.accuracy["test"][0, 0]),
        "sampled_min": float(point.accuracy),
        "sampled_min_sd": float(point.accuracy_mc_sd),
        "max_sampled_diff": float(max(abs(p.accuracy - accuracy[curve.index(w)]) for w, p in samples.items())),
        "Ugood_min": float(curve.U_at(n_min)[good, good]),
        "Ugood_max": float(curve.U_at(n_max)[good, good]),
        "Ugood_sampled": float(point.U[good, good]),
        "Ugood_sampled_se": float(point.U_se[good, good]),
        "Ugood_shift": float(point.U[good, good] / curve.U_at(n_s)[good, good] - 1),
        "cross_entry": f"U[{curve.names[i]},{curve.names[j]}]",
        "cross_theory": float(curve.U_at(n_min)[i, j]),
        "cross_sampled": float(point.U[i, j]),
        "cross_sampled_se": float(point.U_se[i, j]),
        "cross_z_min": float(abs(point.U[i, j] - curve.U_at(n_s)[i, j]) / point.U_se[i, j]),
        "cross_ratio_min": ratio,
        "cross_ratio_max": largest_cross_weight(curve.U_at(n_max))[0],
    }


def sampler_table(runs: dict) -> str:
    """Markdown table of the sampler diagnostics (sec-depth-sampler): per network and sampled width, the network
    sampler's chains, draws kept (:func:`~attnpaths.experiments.sampling.kept_draws`) and warm-up, the min ESS
    and max split R-hat of the test predictions and of ``U`` and the wall time, and, at the widths with an exact
    run, that run's chains, draws, min ESS, max R-hat and time (``-`` elsewhere).

    Args:
        runs: ``{network label: (samples, exact)}``, ``samples`` ``{width: SampledPoint}`` and ``exact``
            ``{width: ExactOrderParameter}`` at some of the sampled widths.
    """
    lines = [
        "| network | N | chains x draws (warm-up) | min ESS of f | max R-hat of f | min ESS of U | max R-hat of U "
        "| time (s) | exact mean: chains x draws, min ESS, max R-hat, time (s) |",
        "|" + "---|" * 9,
    ]
    for key, (samples, exact) in runs.items():
        for w, p in samples.items():
            d = p.diagnostics
            x = exact[w].diagnostics if w in exact else None
            exact_cell = (
                "-"
                if x is None
                else f"{x['num_chains']} x {sampling.kept_draws(x)}, {x['min_ess']:.0f}, {x['max_rhat']:.2f}, "
                f"{x['wall_time_s']:.1f}"
            )
            lines.append(
                f"| {key} | {w} | {d['num_chains']} x {sampling.kept_draws(d)} ({d['num_warmup']}) | "
                f"{d['min_predictor_ess']:.0f} | {d['max_predictor_rhat']:.3f} | {d['min_U_ess']:.0f} | "
                f"{d['max_U_rhat']:.3f} | {d['wall_time_s']:.1f} | {exact_cell} |"
            )
    return "\n".join(lines)
