"""Exact posterior sampling of the finite network by blocked Gibbs (sec-hmc-theory; eq-forward, eq-sampled-u).

Posterior (sec-model-network): Gaussian priors on ``V0, V^(1..L), a`` and likelihood ``y^mu ~ N(f(x^mu), T)``.

Why Gibbs is exact here. Given all other blocks, the output is linear in one block ``W`` (``V0``, one
layer's ``V^(l, .)``, or ``a``)::

    f(x^mu) = c * sum_pi left_pi^T W[h(pi)] right_pi(x^mu) = <W, phi^mu>

where ``c`` is the block's normalisation in (eq-forward), ``h(pi)`` the head that path ``pi`` uses in that layer,
``left_pi`` the product of the blocks above (read out by ``a``) and ``right_pi(x)`` the blocks below
applied to the path features ``xi_pi(x)`` (eq-path-features). So the conditional posterior of the block is the
Gaussian of Bayesian linear regression with prior ``N(0, s I)`` and noise ``T``. It is drawn exactly with
Matheron's rule (the "sample-then-correct" update of a Gaussian conditional)::

    w0 ~ N(0, s I),  eps ~ N(0, I_P)
    w  = w0 + s Phi^T (s Phi Phi^T + T I_P)^{-1} (y - Phi w0 - sqrt(T) eps)

which only needs the ``P x P`` matrix ``s Phi Phi^T`` (for ``V0`` it is the kernel ``K(U)`` of (eq-kernel) built
with the current effective weights) and products with ``Phi`` / ``Phi^T`` that the path structure makes
cheap: ``Phi`` itself is formed only where it is smaller than the routed data (the readout's, and ``V0``'s
when ``N_1`` is below the number of paths). A sweep updates the blocks from the readout
down to ``V0`` (systematic scan), so it leaves the posterior invariant; chains run in parallel along a
leading chain axis and start from the prior.

Samples are stored compactly as the path input weights ``w_pi = e_pi V0 / sqrt(N0 N_1 n_paths)``
(``[n_paths, N0]`` per sample, independent of the width), with which ``f(x) = sum_{pi,i} w_{pi i} xi_{i pi}(x)``
on any inputs, and as the sampled order parameter ``e_pi . e_pi' / N_1`` of each sample (eq-sampled-u).

Diagnostics are ArviZ's estimators (``effective_sample_size``, evaluated here for all entries at once, and
``split_rhat``), following Vehtari, Gelman, Simpson,
Carpenter & Buerkner (2021), "Rank-normalization, folding, and localization: an improved R-hat", Bayesian
Analysis 16(2): split chains, Geyer's initial monotone sequence for the effective sample size; R-hat
without rank normalisation (Gelman et al. 2013, Bayesian Data Analysis, 3rd ed., section 11.4).
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from typing import Optional  # Optional[ArrayLike]: autodoc_type_aliases cannot read ArrayLike | None

import numpy as np
import torch
from numpy.typing import ArrayLike
from tqdm import tqdm

from ._effective_sample_size import split_chain_ess
from ._energy_routes import lower_gram
from ._gibbs_blocks import Block
from ._optional import require
from ._validation import as_float64_tensor, int_at_least, positive_real, torch_generator
from .action import pre_kernel_tensor
from .devices import torch_device
from .network import AttentionNetwork, NetworkWeights, predictor_from_input_weights

MAX_PAIR_KERNEL_ENTRIES = 16_000_000
"""Largest ``P^2 n^2`` for which the sampler stores the path-pair kernels of its training data (128 MB)."""

LARGE_NORMAL_DRAW = 65_536
"""Standard normal draws of at least this many numbers come from numpy's generator, seeded from the caller's (see
``PosteriorSampler._normal``)."""


# ------------------------------------------------------------------------------------------------------
# convergence diagnostics (ArviZ)
# ------------------------------------------------------------------------------------------------------
def _check_chains(samples, name: str = "samples") -> torch.Tensor:
    samples = as_float64_tensor(samples, name)
    if samples.ndim < 2 or samples.shape[0] < 1 or samples.shape[1] < 4:
        raise ValueError(f"{name} must have shape [chains >= 1, draws >= 4, ...], got {tuple(samples.shape)}")
    return samples


def _arviz():
    """ArviZ, imported on first use (it takes seconds) without its import-time notice of a coming refactor
    (a ``FutureWarning``, which would reach an executed chapter's stderr). It is optional: the sampler itself
    runs without it, the diagnostics need ``pip install 'attnpaths[diagnostics]'``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return require("arviz", "diagnostics")


def split_rhat(samples) -> torch.Tensor:
    """Split R-hat (Gelman et al., BDA3 eq. 11.4 on split chains) of every entry, shape ``samples.shape[2:]``,
    for ``samples [C, S >= 8, ...]``.

    ArviZ's R-hat without its default rank normalisation, applied to the first and second half of every
    chain: ``arviz.rhat(halves, method="identity")``, the same number as ``arviz.rhat(method="split")``,
    which however refuses a single chain (the two halves of one chain are a valid comparison: they see a
    trend). Values near 1 mean the half-chains agree; Vehtari et al. (2021) recommend R-hat < 1.01.
    Half-chains of fewer than 4 draws, and entries constant within every half-chain, give NaN.
    """
    draws = _check_chains(samples).detach().cpu().numpy()
    half = draws.shape[1] // 2  # the middle draw of an odd length is dropped
    if half < 4:  # ArviZ would log a shape warning and give NaN
        return torch.full(draws.shape[2:], math.nan, dtype=torch.float64)
    rhat = _arviz().rhat
    flat = draws.reshape(*draws.shape[:2], -1)
    last = flat.shape[1] - half
    # ArviZ takes one entry at a time: each entry's [2C, half] halves are made as it goes (no copy of every draw)
    with np.errstate(divide="ignore", invalid="ignore"):  # constant entries: NaN, as documented
        values = [
            float(rhat(np.concatenate([flat[:, :half, j], flat[:, last:, j]], axis=0), method="identity"))
            for j in range(flat.shape[2])
        ]
    return torch.tensor(values, dtype=torch.float64).reshape(draws.shape[2:])


def effective_sample_size(samples) -> torch.Tensor:
    """Effective sample size of the mean of every entry (Vehtari et al. 2021, eqs. 10-13), shape
    ``samples.shape[2:]``, for ``samples [C, S >= 4, ...]``.

    ArviZ's ``ess(method="mean")``: split chains, autocorrelations combined over them, summed in pairs with
    Geyer's initial positive and monotone sequence (as in Stan), without the rank normalisation of ArviZ's
    default ``"bulk"``. The estimate is capped at ``M log10(M)`` for ``M`` total draws (antithetic chains
    cannot be trusted beyond it), so very short or strongly antithetic chains get the cap, not a negative
    size. Entries that are constant over all draws get ``M``. Evaluated for all entries at once
    (``attnpaths._effective_sample_size``: ArviZ takes one entry at a time), equal to ArviZ's number up to rounding.
    """
    draws = _check_chains(samples).detach().cpu().numpy()
    flat = draws.reshape(*draws.shape[:2], -1)
    return torch.from_numpy(split_chain_ess(flat)).reshape(draws.shape[2:])


# ------------------------------------------------------------------------------------------------------
# samples and their summaries
# ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PosteriorSamples:
    """Posterior samples of a :class:`PosteriorSampler` run, stored through their path form.

    Attributes:
        path_input_weights: ``[C, S, n_paths, N0]`` with ``f(x) = sum_{pi,i} w_{pi i} xi_{i pi}(x)``.
        order_parameters: ``[C, S, n_paths, n_paths]``, ``e_pi . e_pi' / N_1`` of every sample (eq-sampled-u).
        temperature: the likelihood variance ``T``.
        upper_order_parameters: ``(U_2, ..., U_L)`` of every sample, ``U_l`` ``[C, S, n_l, n_l]``
            (:meth:`~attnpaths.network.AttentionNetwork.layer_order_parameters`); empty for one layer.
        num_warmup: sweeps discarded per chain before the first stored one.
        wall_time_s: wall-clock time of the whole run (warm-up included).
    """

    path_input_weights: torch.Tensor
    order_parameters: torch.Tensor
    temperature: float
    num_warmup: int
    wall_time_s: float
    upper_order_parameters: tuple = ()

    @property
    def num_chains(self) -> int:
        """Number of chains ``C``."""
        return self.path_input_weights.shape[0]

    @property
    def num_samples(self) -> int:
        """Number of kept samples per chain ``S``."""
        return self.path_input_weights.shape[1]

    def _features(self, features) -> torch.Tensor:
        xi = as_float64_tensor(features, "features")
        expected = self.path_input_weights.shape[-2:][::-1]
        if xi.ndim != 3 or tuple(xi.shape[1:]) != tuple(expected):
            raise ValueError(f"features must have shape [B, {expected[0]}, {expected[1]}], got {tuple(xi.shape)}")
        return xi

    def predictor_samples(self, features) -> torch.Tensor:
        """``f(x)`` of every sample on inputs with path features ``[B, N0, n_paths]``; shape ``[C, S, B]``."""
        return predictor_from_input_weights(self.path_input_weights, self._features(features))

    def predict(self, features) -> torch.Tensor:
        """Posterior mean predictor ``<f(x)>`` over all chains and samples, shape ``[B]`` (sec-hmc-theory)."""
        # f is linear in the path input weights, so their mean gives the mean predictor
        return predictor_from_input_weights(self.path_input_weights.mean(dim=(0, 1)), self._features(features))

    def predictor_variance(self, features) -> torch.Tensor:
        """Posterior variance of ``f(x)`` over all chains and samples, shape ``[B]``."""
        return self.predictor_samples(features).flatten(0, 1).var(dim=0)

    def order_parameter(self) -> torch.Tensor:
        """Sampled order parameter ``U = < e_pi . e_pi' / N_1 >`` (eq-sampled-u), shape ``[n_paths, n_paths]``."""
        return self.order_parameters.mean(dim=(0, 1))

    def diagnostics(self, features=None) -> dict:
        """ESS and split R-hat of the sampled ``U`` entries and, given test features, of ``f`` on them.

        Returns:
            dict with ``order_parameter_ess`` / ``order_parameter_rhat`` (``[n, n]``), and when ``features``
            (``[B, N0, n_paths]``) are given ``predictor_ess`` / ``predictor_rhat`` (``[B]``),
            ``min_predictor_ess``, ``max_predictor_rhat`` and ``min_predictor_ess_per_s``; always
            ``wall_time_s``, ``num_chains``, ``num_samples``.
        """
        out = {
            "num_chains": self.num_chains,
            "num_samples": self.num_samples,
            "wall_time_s": self.wall_time_s,
            "order_parameter_ess": effective_sample_size(self.order_parameters),
            "order_parameter_rhat": split_rhat(self.order_parameters),
        }
        if features is not None:
            f = self.predictor_samples(features)
            ess = effective_sample_size(f)
            rhat = split_rhat(f)
            out.update(
                predictor_ess=ess,
                predictor_rhat=rhat,
                min_predictor_ess=ess.min().item(),
                max_predictor_rhat=rhat.max().item(),
                min_predictor_ess_per_s=ess.min().item() / self.wall_time_s,
            )
        return out


# ------------------------------------------------------------------------------------------------------
# the blocked Gibbs sampler
# ------------------------------------------------------------------------------------------------------
class PosteriorSampler:
    """Exact blocked-Gibbs sampler of the network posterior at temperature ``T`` (sec-hmc-theory).

    Args:
        network: the :class:`~attnpaths.network.AttentionNetwork` (fixed attention, widths, prior variances).
        y: ``[P]`` training labels.
        temperature: ``T > 0``, the likelihood variance.
        x: ``[P, N0, T_seq]`` training inputs, or
        features: ``[P, N0, n_paths]`` their path features (eq-path-features); give exactly one of the two.
        scale_moves: end every sweep with the f-preserving scale moves between neighbouring layers
            (:meth:`scale_move`). They leave the posterior invariant and speed up the mixing of the
            weight norms at small T (4-path HMC network, N = 10, T = 0.01: ESS of ``|a|^2`` from 23 to 370
            per 5600 draws); the sampled U and the predictor mix at about the same rate with or without.
        device: ``"cpu"`` (default) or ``"cuda"`` (a ``ValueError`` where no GPU is available): where the
            chains' linear algebra runs. Random numbers come from the caller's CPU generator on every device
            and the stored samples are CPU tensors, so a device changes the numbers only by rounding (and,
            rarely, through a scale move's accept decision that rounding flips).

    Cost per sweep: ``O(P n_paths N_l N_{l+1})`` per layer to route the data through the current weights,
    plus ``O(P^2 H_l B_l N + P^3)`` per block for the ``P x P`` solve, where ``B_l`` counts the heads of the layers
    above: paths that differ only in the heads below share their left vector, so their data are summed first;
    for the readout ``O(P^2 N + P^3)`` (its design matrix is the sum of the paths' routed data); for ``V0``,
    whose Gram matrix is
    ``sum_{pi pi'} (e_pi . e_pi') K_{pi pi'}`` with the fixed kernels ``K_{pi pi'}`` of path pairs, ``O(P^2 n_paths^2)``
    when those ``P^2 n_paths^2`` numbers are stored (at most :data:`MAX_PAIR_KERNEL_ENTRIES`), else
    ``O(P^2 min(n_paths, N_1) N0)``.
    """

    def __init__(
        self,
        network: AttentionNetwork,
        targets: ArrayLike,
        temperature: float,
        *,
        x: Optional[ArrayLike] = None,
        features: Optional[ArrayLike] = None,
        scale_moves: bool = True,
        device: str | torch.device = "cpu",
    ) -> None:
        if not isinstance(network, AttentionNetwork):
            raise ValueError(f"network must be an AttentionNetwork, got {type(network).__name__}")
        self.network = network
        if (x is None) == (features is None):
            raise ValueError("give exactly one of x ([P, N0, T_seq] inputs) and features ([P, N0, n_paths])")
        self.features = network.check_features(features) if x is None else network.features(x)
        if self.features.shape[0] < 1:
            raise ValueError(f"{'features' if x is None else 'x'} must hold at least one example (P >= 1), got P = 0")
        self.y = as_float64_tensor(targets, "targets", labels=True)
        if self.y.shape != (self.features.shape[0],):
            raise ValueError(
                f"targets must have shape [{self.features.shape[0]}] (one label per example), got {tuple(self.y.shape)}"
            )
        self.temperature = positive_real(temperature, "temperature")
        self.device = torch_device(device)
        # the chains' linear algebra runs on the device; random numbers are drawn on the CPU from the caller's
        # generator and moved there, so one seed gives the same draws on every device
        self._features_on_device = self.features.to(self.device)
        self._routed_features = self._features_on_device.transpose(1, 2).contiguous()  # [P, n, N0], V0's right
        self._y_on_device = self.y.to(self.device)
        self.scale_moves = bool(scale_moves)
        self.result: PosteriorSamples | None = None
        self._blocks = self._make_blocks()
        # V0's Gram matrix reads the data only through the fixed kernels of path pairs,
        # sum_i xi_pi(x^mu)_i xi_pi'(x^nu)_i: stored once (when small), they replace the sweep's largest
        # contraction, P^2 n N0 per chain, by P^2 n^2
        P, n0, n = self.features.shape
        self._pair_kernels = (
            pre_kernel_tensor(self.features).T.contiguous().to(self.device)
            if n < n0 and P * P * n * n <= MAX_PAIR_KERNEL_ENTRIES
            else None
        )
        self._noise_identity = self.temperature * torch.eye(P, dtype=torch.float64, device=self.device)
        self._work = None  # the P x P matrices of a block's draw, reused (see _work_matrices)

    # -- block bookkeeping ----------------------------------------------------------------------------
    def _make_blocks(self) -> list[Block]:
        net = self.network
        heads, widths, variances = net.heads, net.widths, net.variances
        n = net.num_paths
        blocks = [Block("V_0", variances[0], 1 / math.sqrt(net.input_width), (1, 1, n))]
        for l, H in enumerate(heads, start=1):
            below, above = math.prod(heads[: l - 1]), math.prod(heads[l:])
            blocks.append(Block(f"V_{l}", variances[l], 1 / math.sqrt(H * widths[l - 1]), (below, H, above)))
        blocks.append(Block("a", variances[-1], 1 / math.sqrt(widths[-1]), (n, 1, 1)))
        return blocks

    def _to_blocks(self, weights: NetworkWeights) -> list[torch.Tensor]:
        weights = self.network.check_weights(weights)
        if weights.sample_shape == ():
            raise ValueError("weights must carry a leading chain axis [C]")
        return [b.to(self.device) for b in (weights.V0[:, None], *weights.V, weights.a[:, None, None, :])]

    @staticmethod
    def _to_weights(blocks: list[torch.Tensor]) -> NetworkWeights:
        return NetworkWeights(V0=blocks[0][:, 0], V=tuple(blocks[1:-1]), a=blocks[-1][:, 0, 0])

    def _rights(self, blocks: list[torch.Tensor], upto: int) -> list[torch.Tensor]:
        """Data routed through blocks ``0..b-1`` for every block ``b <= upto``: ``[C, P, n, in_b]``."""
        C = blocks[0].shape[0]
        rights = [self._routed_features[None].expand(C, -1, -1, -1)]
        for b in range(upto):
            rights.append(self._blocks[b].route(blocks[b], rights[-1]))
        return rights

    def _readout_left(self, C: int) -> torch.Tensor:
        """The readout's left vectors ``[C, n, 1]``: ones (nothing above it)."""
        return torch.ones((C, self.network.num_paths, 1), dtype=torch.float64, device=self.device)

    def _normal(self, generator: torch.Generator, *shape) -> torch.Tensor:
        """Standard normal draws from the CPU ``generator``, on the sampler's device.

        A large draw (at least :data:`LARGE_NORMAL_DRAW` numbers: the wide layers' prior draws) comes from numpy's
        ziggurat on a PCG64 stream seeded by a 63-bit integer drawn from ``generator``, about twice as fast as
        torch's float64 normals on the CPU (which dominate a sweep at N = 1000); the draws stay a function of
        ``generator`` alone."""
        if math.prod(shape) < LARGE_NORMAL_DRAW:
            return torch.randn(shape, generator=generator, dtype=torch.float64).to(self.device)
        seed = int(torch.randint(0, 2**63 - 1, (), generator=generator))
        return torch.from_numpy(np.random.Generator(np.random.PCG64(seed)).standard_normal(shape)).to(self.device)

    def _work_matrices(self, C: int, P: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``[C, P, P]`` matrices for a block's Gram matrix and its Cholesky factor (column-major, LAPACK's layout),
        allocated once: a fresh matrix of this size costs page faults on every block of every sweep."""
        if self._work is None or self._work[0].shape[0] != C:
            gram = torch.empty(C, P, P, dtype=torch.float64, device=self.device)
            factor = torch.empty(C, P, P, dtype=torch.float64, device=self.device).transpose(1, 2)
            self._work = (gram, factor)
        return self._work

    def _gram(
        self, b: int, left: torch.Tensor, left_above: torch.Tensor, grouped: torch.Tensor, out: torch.Tensor
    ) -> torch.Tensor:
        """``s Phi Phi^T + T I`` of block ``b`` (``[C, P, P]``, into ``out``): with the groups of :meth:`Block.group`,
        ``s c^2 sum_h sum_{beta beta'} (left_beta . left_beta') (R_{h beta}(x^mu) . R_{h beta'}(x^nu))``, summed in
        the cheapest of three orders (per chain and per P^2): the stored path-pair kernels of V0 (n^2 numbers);
        for a block without heads (V0, a) whose output is at most as wide as its groups, the design matrix
        ``Phi / c = sum_beta left_beta (x) R_beta`` itself (out * in; always the readout, out = 1; V0 when
        N_1 < n); else the grouped data combined by a factor ``F`` of the B x B overlaps of the left vectors (H k
        in, k = min(B, out)). The last two are a Gram ``Z Z^T``, of which the CPU forms the lower triangle only
        (the upper one holds zeros: ``out`` is for the Cholesky factorisation, which reads the lower one)."""
        spec = self._blocks[b]
        scale = spec.variance * spec.coef**2
        C, P = grouped.shape[:2]
        if b == 0 and self._pair_kernels is not None:
            overlap = left @ left.transpose(1, 2)  # [C, n, n] (V0 has one head: every pair counts)
            return torch.addmm(
                self._noise_identity.reshape(-1),
                overlap.reshape(C, -1),
                self._pair_kernels,
                alpha=scale,
                out=out.view(C, P * P),
            ).view(C, P, P)
        _, H, B = spec.split
        if H == 1 and left.shape[-1] <= B:
            Z = (left_above.transpose(1, 2)[:, None] @ grouped).reshape(C, P, -1)  # the design [C, P, out * in]
        else:
            # the overlaps O = left_above left_above^T = F F^T with F = R^T from the QR of left_above^T ([C, B, k],
            # k = min(B, out)): the Gram is Z Z^T with Z = sum_beta F[beta] (x) R_{h beta}, [C, P, H k in]
            factor = torch.linalg.qr(left_above.transpose(1, 2), mode="r")[1]  # F^T, [C, k, B]
            Z = (factor[:, None, None] @ grouped.reshape(C, P, H, B, -1)).reshape(C, P, -1)
        if self.device.type != "cpu":
            return torch.baddbmm(self._noise_identity, Z, Z.transpose(1, 2), alpha=scale, out=out)
        # on the CPU only its lower triangle, the one Cholesky reads, is formed (BLAS dsyrk: half the products of
        # the full matrix product, which dominates a sweep at the one-shot chapter's P = 600 and N = 100)
        for c in range(C):
            out[c] = torch.from_numpy(lower_gram(Z[c].numpy()))
        out.mul_(scale).diagonal(dim1=1, dim2=2).add_(self.temperature)
        return out

    def _draw_block(self, b: int, W_shape, left, right, generator) -> torch.Tensor:
        """Exact draw of block ``b`` from its Gaussian conditional (Matheron's rule, see module doc)."""
        spec = self._blocks[b]
        s, c, T = spec.variance, spec.coef, self.temperature
        C, P = right.shape[:2]
        gram, factor = self._work_matrices(C, P)
        left_above, grouped = spec.group(left, right)
        self._gram(b, left, left_above, grouped, gram)
        _, H, B = spec.split
        prior_draw = self._normal(generator, C, *W_shape).mul_(math.sqrt(s))  # in place: blocks can be large
        noise = self._normal(generator, C, P)
        # c Phi w0 = c sum_{h beta} R_{h beta} . (W0[h]^T left_beta), a matrix-vector product on the grouped data
        projected = left_above.unsqueeze(1) @ prior_draw  # [C, H, B, in]
        prior_output = c * (grouped.reshape(C, P, -1) @ projected.reshape(C, -1, 1))[..., 0]
        residual = (self._y_on_device - prior_output - math.sqrt(T) * noise)[..., None]
        torch.linalg.cholesky(gram, out=factor)
        # two triangular solves on the column-major factor (cholesky_solve would copy it)
        alpha = torch.linalg.solve_triangular(
            factor.mT, torch.linalg.solve_triangular(factor, residual, upper=False), upper=True
        )[..., 0]  # [C, P]
        # Phi^T alpha = c sum_{h beta} E_h (x) left_beta (sum_mu alpha_mu R_{h beta}(x^mu))
        routed = (alpha[:, None] @ grouped.reshape(C, P, -1)).reshape(C * H, B, -1)
        # w = w0 + s c sum_beta left_beta routed_{h beta}^T, accumulated into the prior draw (no new block)
        left_columns = left_above.transpose(1, 2).unsqueeze(1).expand(C, H, -1, B).reshape(C * H, -1, B)
        prior_draw.view(C * H, *W_shape[1:]).baddbmm_(left_columns, routed, alpha=s * c)
        return prior_draw

    def _sweep(self, blocks: list[torch.Tensor], generator) -> list[torch.Tensor]:
        """One systematic scan from the readout down to ``V0``; returns the new blocks."""
        blocks = list(blocks)
        last = len(blocks) - 1
        rights = self._rights(blocks, upto=last)
        left = self._readout_left(blocks[0].shape[0])
        for b in range(last, -1, -1):
            blocks[b] = self._draw_block(b, blocks[b].shape[1:], left, rights[b], generator)
            if b > 0:  # the left vectors of block b - 1: c_b W_b[h(pi)]^T left_pi
                left = self._blocks[b].route_back(blocks[b], left)
        if self.scale_moves:
            blocks = self._rescale(blocks, generator, in_place=True)
        return blocks

    def _rescale(self, blocks: list[torch.Tensor], generator, in_place: bool = False) -> list[torch.Tensor]:
        """Generalised Gibbs scale moves (Liu & Sabatti 2000, JASA 95: 1034) between neighbouring blocks.

        Every path passes through every block once, so ``W_b -> c W_b, W_{b-1} -> W_{b-1} / c`` leaves f,
        hence the likelihood, unchanged: the move trades scale between layers, the direction along which
        the block-wise Gibbs updates crawl when T is small. Drawing ``c`` from
        ``p(c) ∝ posterior(moved weights) |Jacobian| / c`` (``dc / c`` is the Haar measure of the
        multiplicative group) leaves the posterior invariant; for ``v = log c^2`` this density is
        ``exp(lam v - (chi e^-v + psi e^v) / 2)`` with ``psi = |W_b|^2 / s_b``, ``chi = |W_{b-1}|^2 / s_{b-1}``
        and ``lam = (dim W_b - dim W_{b-1}) / 2`` (a generalised inverse Gaussian in ``c^2``). It is drawn
        by an independence Metropolis-Hastings step from its Laplace approximation (exact in the MCMC sense;
        the log-density's tails are lighter than Gaussian, so acceptance stays high). With ``in_place`` (a sweep's
        own new blocks, which nothing else holds) the blocks are scaled in place.
        """
        C = blocks[0].shape[0]
        # the moves only rescale blocks: their squared norms follow the scales, and every block is multiplied
        # once, by the product of its scales, at the end (blocks can be large); the arithmetic on the C numbers
        # per block runs in numpy, whose operations cost a fraction of torch's on arrays this small
        squared = [(W.reshape(C, 1, -1) @ W.reshape(C, -1, 1)).reshape(C) for W in blocks]
        norms = torch.stack([norm / spec.variance for norm, spec in zip(squared, self._blocks)]).cpu().numpy()
        scales = np.ones((len(blocks), C))
        for b in range(len(blocks) - 1, 0, -1):
            psi, chi = norms[b], norms[b - 1]
            lam = (blocks[b][0].numel() - blocks[b - 1][0].numel()) / 2

            def log_density(v):
                return lam * v - (chi * np.exp(-v) + psi * np.exp(v)) / 2

            root = np.sqrt(lam**2 + psi * chi)
            # mode e^v = (lam + root) / psi, written without cancellation for either sign of lam
            mode = np.log((lam + root) / psi) if lam >= 0 else np.log(chi / (root - lam))
            sd = 1 / np.sqrt((chi * np.exp(-mode) + psi * np.exp(mode)) / 2)
            proposal = mode + sd * torch.randn(C, generator=generator, dtype=torch.float64).numpy()

            def log_proposal(v):
                return -0.5 * ((v - mode) / sd) ** 2

            # the current state is c = 1, v = 0
            log_ratio = log_density(proposal) - log_density(0.0) + log_proposal(0.0) - log_proposal(proposal)
            uniform = torch.rand(C, generator=generator, dtype=torch.float64).numpy()
            v = np.where(np.log(uniform) < log_ratio, proposal, 0.0)
            c = np.exp(v / 2)
            scales[b], scales[b - 1] = scales[b] * c, scales[b - 1] / c
            norms[b], norms[b - 1] = psi * c**2, chi / c**2
        scales = torch.from_numpy(scales).to(self.device)
        if in_place:  # the sweep's own new blocks
            return [W.mul_(scale[:, None, None, None]) for W, scale in zip(blocks, scales)]
        return [W * scale[:, None, None, None] for W, scale in zip(blocks, scales)]

    def scale_move(self, weights: NetworkWeights, generator: torch.Generator) -> NetworkWeights:
        """Apply the scale moves between neighbouring blocks (readout down to ``V0``) that every sweep ends
        with when ``scale_moves`` is on (see ``_rescale``); the output f is unchanged.

        Args:
            weights: the current weights of ``C`` chains (leading axis ``[C]``).
            generator: the source of randomness.
        """
        return self._to_weights(self._rescale(self._to_blocks(weights), generator))

    def conditional_draw(self, block: str, weights: NetworkWeights, generator: torch.Generator) -> NetworkWeights:
        """Redraw one block from its exact conditional posterior given the other blocks.

        Args:
            block: ``"V_0"``, ``"V_1"``, ..., ``"V_L"`` or ``"a"``.
            weights: the current weights of ``C`` chains (leading axis ``[C]``).
            generator: the source of randomness.

        Returns:
            new :class:`~attnpaths.network.NetworkWeights` (``[C]`` leading axis) with only ``block`` changed.
        """
        names = [spec.name for spec in self._blocks]
        if block not in names:
            raise ValueError(f"block must be one of {names}, got {block!r}")
        b = names.index(block)
        blocks = self._to_blocks(weights)
        right = self._rights(blocks, upto=b)[b]
        left = self._readout_left(blocks[0].shape[0])
        for above in range(len(blocks) - 1, b, -1):
            left = self._blocks[above].route_back(blocks[above], left)
        blocks[b] = self._draw_block(b, blocks[b].shape[1:], left, right, generator)
        return self._to_weights(blocks)

    # -- running chains ---------------------------------------------------------------------------------------
    def run(
        self,
        generator: torch.Generator,
        num_warmup: int,
        num_samples: int,
        num_chains: int = 1,
        *,
        thinning: int = 1,
        progress: bool = True,
        stop=None,
    ) -> PosteriorSamples:
        """Run ``num_chains`` chains from prior draws; discard ``num_warmup`` sweeps, keep ``num_samples``.

        Args:
            generator: the source of all randomness (initial prior draws and Gibbs updates).
            num_warmup: sweeps discarded per chain (Gibbs needs no adaptation: this is burn-in only).
            num_samples: stored samples per chain (the most, with ``stop``).
            num_chains: chains, run in parallel along a leading axis.
            thinning: sweeps per stored sample.
            progress: show a tqdm bar over sweeps.
            stop: sequential stopping, or ``None`` to keep ``num_samples``: an object with
                ``checkpoints(num_samples)`` (stored-sample counts at which to look) and
                ``reached(order_parameters, upper_order_parameters)`` (``[C, s, n, n]`` and a tuple of
                ``[C, s, ...]``, the draws stored so far), e.g.
                :class:`attnpaths.experiments.sampling.PrecisionTarget`; the chains end at the first
                checkpoint where it returns ``True``. The same generator gives the same stopping point.

        Returns:
            :class:`PosteriorSamples` (also kept as ``self.result`` for :meth:`predict`).
        """
        torch_generator(generator)
        int_at_least(num_warmup, "num_warmup", 0)
        int_at_least(num_samples, "num_samples", 1)
        int_at_least(num_chains, "num_chains", 1)
        int_at_least(thinning, "thinning", 1)
        start = time.perf_counter()
        blocks = self._to_blocks(self.network.sample_prior(generator, num_chains))
        input_weights = overlaps = None  # [C, S, ...], allocated at the first stored sample
        upper = [[] for _ in range(self.network.num_layers - 1)]  # U_2 .. U_L of every stored sweep
        checkpoints = set() if stop is None else {int(c) for c in stop.checkpoints(num_samples)}
        sweeps, stored = num_warmup + num_samples * thinning, 0
        for sweep in tqdm(range(sweeps), desc="Gibbs sweeps", disable=not progress, leave=False):
            blocks = self._sweep(blocks, generator)
            if sweep >= num_warmup and (sweep - num_warmup + 1) % thinning == 0:
                w, u = self.network.path_summary(self._to_weights(blocks), check=False)
                if input_weights is None:
                    input_weights = w.new_empty((w.shape[0], num_samples, *w.shape[1:]))
                    overlaps = u.new_empty((u.shape[0], num_samples, *u.shape[1:]))
                input_weights[:, stored], overlaps[:, stored] = w, u
                for layer, U in zip(upper, self.network.layer_order_parameters(self._to_weights(blocks))[1:]):
                    layer.append(U)
                stored += 1
                if (
                    stored in checkpoints
                    and stored < num_samples
                    and stop.reached(overlaps[:, :stored], tuple(torch.stack(layer, dim=1) for layer in upper))
                ):
                    input_weights, overlaps = input_weights[:, :stored].clone(), overlaps[:, :stored].clone()
                    break
        if not (torch.isfinite(input_weights).all() and torch.isfinite(overlaps).all()):
            raise RuntimeError(
                "the sampler produced non-finite weights: the posterior's linear algebra failed "
                f"(temperature {self.temperature}, widths {self.network.widths})"
            )
        self.result = PosteriorSamples(
            path_input_weights=input_weights,
            order_parameters=overlaps,
            temperature=self.temperature,
            num_warmup=num_warmup,
            wall_time_s=time.perf_counter() - start,
            upper_order_parameters=tuple(torch.stack(layer, dim=1) for layer in upper),
        )
        return self.result

    def predict(self, x=None, *, features=None) -> torch.Tensor:
        """Mean predictor of the last :meth:`run` on test inputs ``x [B, N0, T_seq]`` or their path features.

        Returns:
            ``[B]``.
        """
        if self.result is None:
            raise ValueError("no samples yet: call run(...) before predict(...)")
        if (x is None) == (features is None):
            raise ValueError("give exactly one of x ([B, N0, T_seq] inputs) and features ([B, N0, n_paths])")
        return self.result.predict(self.network.features(x) if features is None else features)
