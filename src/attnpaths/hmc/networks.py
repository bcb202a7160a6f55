"""The attention networks of the HMC experiments (sec-hmc-network): heads, paths, names and colours.

Paths are named by the roles of their two heads (layer 1, layer 2):

=====================  ==================  ======  ================  ===========
layer-1 head           layer-2 head        name    label             colour
=====================  ==================  ======  ================  ===========
``same_token``         ``uniform``         ``g``   good              green
``blank``              ``uniform``         ``d``   denoising         blue
``same_token``         ``blank``           ``a1``  adversarial #1    red
``blank``              ``blank``           ``a2``  adversarial #2    purple
=====================  ==================  ======  ================  ===========

In the 4-path network the flat path order (``h_1`` slowest, eq-path-form) is ``[g, a1, d, a2]``; figures show
``[g, d, a1, a2]`` (:attr:`HMCNetwork.plot_order`). Head seeds are those of the authors' LOOP scripts
(``seed=7``): layer-1 main head 127, layer-1 blank head 147, layer-2 main head 217, layer-2 blank head 247.
The perturbation of a network applies to its ``blank`` heads only (``p_I = p_P = p_O = perturbation``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .._validation import nonnegative_real
from ..attention import Attention, AttentionLayer
from ..experiments.path_data import PathNetwork
from ..head_scoring import head_labels
from ..paths import all_paths
from ..plot_style import BLUE, GREEN, PURPLE, VERMILLION
from .heads import PAPER_BETA, _as_task, hmc_head

#: Order of the paths in every figure.
PLOT_ORDER_NAMES = ("g", "d", "a1", "a2")
#: Long names and colours of the paths (authors' PLOT_order_parameter.py / PLOT_kernels.py).
PATH_LABELS = {"g": "good", "d": "denoising", "a1": "adversarial #1", "a2": "adversarial #2"}
PATH_COLORS = {"g": GREEN, "d": BLUE, "a1": VERMILLION, "a2": PURPLE}
#: (layer-1 head version, layer-2 head version) -> path name.
_PATH_BY_HEADS = {
    ("same_token", "uniform_attention"): "g",
    ("blank", "uniform_attention"): "d",
    ("same_token", "blank"): "a1",
    ("blank", "blank"): "a2",
}

LAYER1_MAIN_SEED, LAYER1_BLANK_SEED = 127, 147
LAYER2_MAIN_SEED, LAYER2_BLANK_SEED = 217, 247

_GOOD_HEAD = ("same_token", LAYER1_MAIN_SEED)
_DENOISING_HEAD = ("blank", LAYER1_BLANK_SEED)
_UNIFORM_HEAD = ("uniform_attention", LAYER2_MAIN_SEED)
_ADVERSARIAL_HEAD = ("blank", LAYER2_BLANK_SEED)
_GOOD_AND_DENOISING_LAYERS = ((_GOOD_HEAD, _DENOISING_HEAD), (_UNIFORM_HEAD,))


@dataclass(frozen=True, eq=False)
class HMCNetwork(PathNetwork):
    """A 2-layer HMC attention network with named paths (a :class:`~attnpaths.experiments.path_data.PathNetwork`).

    Attributes:
        name: identifier, e.g. ``"four_path"``.
        label: legend label of the authors' figures, e.g. ``"all paths"``, ``"path g"``, ``"paths g+d"``.
        attention: the fixed attention (W form, readout ``last_token``), ``heads = (H_1, H_2)``.
        head_versions: per layer, the version of each head (:data:`attnpaths.hmc.heads.HEAD_VERSIONS`).
        head_seeds: per layer, the seed of each head.
        path_names: short path names in flat path order (``h_1`` slowest), e.g. ``("g", "a1", "d", "a2")``.
        beta: inverse softmax temperature of every head.
        perturbation: ``p_I = p_P = p_O`` of the blank heads.
    """

    name: str
    label: str
    attention: Attention
    head_versions: tuple[tuple[str, ...], ...]
    head_seeds: tuple[tuple[int, ...], ...]
    path_names: tuple[str, ...]
    beta: float
    perturbation: float

    @property
    def plot_order(self) -> tuple[int, ...]:
        """The flat path indices in figure order ``[g, d, a1, a2]``, skipping paths the network lacks;
        ``features[..., plot_order]`` or ``U[plot_order][:, plot_order]`` reorders for plotting."""
        return tuple(self.path_names.index(name) for name in PLOT_ORDER_NAMES if name in self.path_names)

    @property
    def path_labels(self) -> tuple[str, ...]:
        """Long path names in flat order (``"good"``, ``"denoising"``, ...)."""
        return tuple(PATH_LABELS[name] for name in self.path_names)

    @property
    def path_colors(self) -> tuple[str, ...]:
        """Matplotlib colours of the paths in flat order."""
        return tuple(PATH_COLORS[name] for name in self.path_names)


def _perturbed_head(task, beta: float, perturbation: float, version: str, seed) -> torch.Tensor:
    """:func:`~attnpaths.hmc.heads.hmc_head`, perturbed by ``p_I = p_P = p_O = perturbation`` if ``blank``."""
    p = perturbation if version == "blank" else 0.0
    return hmc_head(version, task, beta=beta, p_I=p, p_P=p, p_O=p, seed=seed)


def _last_token_attention(layers, weights) -> Attention:
    """The attention (readout: last token) whose layer ``l`` stacks ``weights(head)`` of the heads ``layers[l]``."""
    stacked = tuple(AttentionLayer(W=torch.stack([weights(head) for head in layer])) for layer in layers)
    return Attention(stacked, readout="last_token")


def _network(dataset, name: str, label: str, layers, beta: float, perturbation: float) -> HMCNetwork:
    task = _as_task(dataset)
    perturbation = nonnegative_real(perturbation, "perturbation")
    attention = _last_token_attention(layers, lambda head: _perturbed_head(task, beta, perturbation, *head))
    versions = tuple(tuple(version for version, _ in layer) for layer in layers)
    path_names = tuple(
        _PATH_BY_HEADS[tuple(versions[layer][head] for layer, head in enumerate(path))]
        for path in all_paths(attention.heads)
    )
    return HMCNetwork(
        name=name,
        label=label,
        attention=attention,
        head_versions=versions,
        head_seeds=tuple(tuple(seed for _, seed in layer) for layer in layers),
        path_names=path_names,
        beta=float(beta),
        perturbation=perturbation,
    )


def four_path_network(dataset, beta: float = PAPER_BETA, perturbation: float = 1.0) -> HMCNetwork:
    """The 4-path network of Fig. 2c,d (sec-hmc-network): layer 1 = [same_token, blank], layer 2 =
    [uniform_attention, blank], blank heads perturbed by ``perturbation``; paths ``[g, a1, d, a2]``.

    Args:
        dataset: an :class:`~attnpaths.hmc.data.HMCDataset` (or its ``HMCTask``).
        beta: inverse softmax temperature (paper: 10).
        perturbation: ``p_I = p_P = p_O`` of the two blank heads (paper: 1).
    """
    layers = ((_GOOD_HEAD, _DENOISING_HEAD), (_UNIFORM_HEAD, _ADVERSARIAL_HEAD))
    return _network(dataset, "four_path", "all paths", layers, beta, perturbation)


def good_path_network(dataset, beta: float = PAPER_BETA) -> HMCNetwork:
    """GP reference "path g" of Fig. 2c: layer 1 = [same_token], layer 2 = [uniform_attention]."""
    layers = ((_GOOD_HEAD,), (_UNIFORM_HEAD,))
    return _network(dataset, "good_path", "path g", layers, beta, 0.0)


def good_and_denoising_network(dataset, beta: float = PAPER_BETA, perturbation: float = 1.0) -> HMCNetwork:
    """GP reference "paths g+d" of Fig. 2c: layer 1 = [same_token, blank(``perturbation``)], layer 2 =
    [uniform_attention]; paths ``[g, d]``."""
    return _network(dataset, "good_and_denoising", "paths g+d", _GOOD_AND_DENOISING_LAYERS, beta, perturbation)


def two_path_network(dataset, beta: float = PAPER_BETA, perturbation: float = 0.0) -> HMCNetwork:
    """The 2-path network of Fig. 2e (with ``sigma_perp = 5`` data): the layout of
    :func:`good_and_denoising_network` with an unperturbed blank head (exactly uniform attention)."""
    return _network(dataset, "two_path", "paths g+d", _GOOD_AND_DENOISING_LAYERS, beta, perturbation)


def head_version_labels(network: HMCNetwork) -> list[str]:
    """One label per head, ``"(l)h (version)"`` (layer and head 1-based, :func:`attnpaths.head_scoring.head_labels`,
    then the head's version, e.g. ``"(1)1 (same_token)"``), in the layer-major order of the head scores
    (sec-head-scores)."""
    versions = [version for layer in network.head_versions for version in layer]
    return [f"{label} ({version})" for label, version in zip(head_labels(network.heads), versions)]
