"""The exact posterior of the order parameters at finite width, and samples from it.

The theory (:func:`attnpaths.theory.solve`) is the saddle point of the action ``S`` (eq-action), exact as
``N, P -> infinity``. At finite ``N`` the posterior *mean* of the sampled order parameter (eq-sampled-u)
differs from the saddle point by ``O(1/N)``. For the deep linear networks of this theory that difference can
be computed exactly, without a further approximation [DERIVED here, not from the paper]:

* given the weights above layer ``l``, the ``N_l`` columns of the layer's path weights are i.i.d. Gaussian,
  so ``U_l`` given ``U_{l+1}`` is Wishart with ``N_l`` degrees of freedom in ``n_l = H_l ... H_L`` dimensions
  and scale ``s_l (I_{H_l} kron U_{l+1}) / N_l`` (``s_L U_a I / N_L`` for the last layer; ``U_a`` is
  ``s_a chi^2_{N_a} / N_a``);
* given ``U_1``, integrating out the input weights ``V0`` leaves the Gaussian likelihood of the labels with
  kernel ``K(U_1)``: ``exp(-S_en(U_1) / 2)`` exactly.

So ``(U_1, ..., U_L, U_a)`` has the density ``exp(-S_exact / 2)`` with

    S_exact = S_en(U_1) + S_ent(U_1, ..., U_L, U_a) + sum_l (n_l + 1) log det U_l + 2 log U_a
                                                                                     (eq-exact-density)

where ``S_ent`` is the entropy (eq-entropy) with ``U_a`` kept as a variable (eq-readout is its stationarity
condition): the Wishart log-density carries ``(N_l - n_l - 1) log det U_l`` where the saddle-point action has
``N_l log det U_l``. The saddle point of ``S`` is the ``N -> infinity`` limit; the mean of (eq-exact-density)
is the finite-``N`` posterior mean, which the network's posterior samples must reproduce within Monte-Carlo
error at every ``N``.

:func:`sample_order_parameters` samples (eq-exact-density) in log-Cholesky coordinates
(``D = sum_l n_l (n_l + 1) / 2 + 1`` dimensions, 14 for two layers of two heads) with many Metropolis-Hastings
chains run in parallel: random-walk moves shaped by the Laplace approximation at the mode and, by default,
independence moves from a multivariate t fitted to the posterior (the Laplace approximation, then the warm-up's
draws) alternating with them. Each move costs one ``P x P`` Cholesky factorisation per chain.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional  # Optional[ArrayLike]: autodoc_type_aliases cannot read ArrayLike | None

import numpy as np
import torch
from numpy.typing import ArrayLike
from tqdm import tqdm

from ._validation import as_float64_tensor, int_at_least, positive_real, torch_generator
from .action import Architecture, entropy, pre_kernel_tensor
from .gram import GramStatistics, factored_solve
from .kernels import scaled_features, shifted_cholesky
from .paths import check_num_paths
from .sampler import effective_sample_size, split_rhat
from .theory import CholeskyCoordinates, architecture, solve, solve_from_statistics


def exact_action(
    X: torch.Tensor,
    y: torch.Tensor,
    arch: Architecture,
    temperature: float,
    U_layers: list[torch.Tensor],
    U_a: torch.Tensor,
    *,
    pre_kernels: torch.Tensor | None = None,
    factors: list[torch.Tensor] | None = None,
) -> torch.Tensor:
    """``S_exact`` of (eq-exact-density): minus twice the log density of the order parameters, up to a constant.

    Args:
        X: ``[P, N0, n_paths]`` scaled features (:func:`attnpaths.kernels.scaled_features`).
        y: ``[P]`` labels.
        arch: finite widths ``(N_1, ..., N_L, N_a)`` with ``N_l >= n_l``.
        temperature: ``T > 0``.
        U_layers: ``[U_1, ..., U_L]``, each ``[B, n_l, n_l]`` positive definite.
        U_a: ``[B]`` positive.
        pre_kernels: optional :func:`attnpaths.action.pre_kernel_tensor` of ``X`` (faster when ``P <= N0``).
        factors: optional lower Cholesky factors of ``U_layers`` (``U_l = F_l F_l^T``): then no ``U_l`` is
            factorised again (the sampler's log-Cholesky coordinates give them).

    Returns:
        ``[B]``. Differentiable in torch.
    """
    U_1 = U_layers[0]
    B, P = U_1.shape[0], X.shape[0]
    if pre_kernels is not None:
        K = (U_1.reshape(B, -1) @ pre_kernels.reshape(P * P, -1).T).reshape(B, P, P)
    else:
        K = torch.einsum("pia,bac,qic->bpq", X, U_1, X)
    # S_en of (eq-action) for a batch of U_1 (action.energy computes it, with derivatives, for one):
    # log det G + |L^{-1} y|^2 with G = K + T I = L L^T
    chol = shifted_cholesky(K, temperature)
    whitened = torch.linalg.solve_triangular(chol, y.expand(B, P)[..., None], upper=False)[..., 0]
    value = 2.0 * torch.log(torch.diagonal(chol, dim1=-2, dim2=-1)).sum(-1) + whitened.square().sum(-1)
    return value + _prior_terms(arch, U_layers, U_a, factors)


def _prior_terms(arch: Architecture, U_layers, U_a, factors) -> torch.Tensor:
    """The terms of ``S_exact`` (eq-exact-density) beyond the energy ``S_en``: the entropy and the Wishart
    densities' ``(N_l - n_l - 1) log det U_l`` where the action has ``N_l log det U_l`` (``U_a``: ``n = 1``)."""
    value = entropy(U_layers, arch, U_a, factors=factors)
    for layer, U in enumerate(U_layers):
        F = torch.linalg.cholesky(U) if factors is None else factors[layer]
        value = value + (U.shape[-1] + 1) * 2.0 * torch.log(torch.diagonal(F, dim1=-2, dim2=-1)).sum(-1)
    return value + 2.0 * torch.log(U_a)


@dataclass(frozen=True)
class OrderParameterSamples:
    """Samples of (eq-exact-density) and their summaries (``U_1``, the order parameter of eq-sampled-u, and the means of
    the layers above it).

    Attributes:
        U: ``[C, S, n, n]`` samples of ``U_1`` (chains, stored draws).
        mean: ``[n, n]`` posterior mean; ``mc_se``: ``[n, n]`` its Monte-Carlo standard error
            (posterior standard deviation over the root of the effective sample size).
        ess, rhat: ``[n, n]`` effective sample size and split R-hat of every entry.
        mode: ``[n, n]`` ``U_1`` at the mode of (eq-exact-density).
        acceptance: mean Metropolis-Hastings acceptance rate over all moves.
        moves: the move kinds of the chains (:data:`MOVES`).
        wall_time_s: time of the whole computation (mode, warm-up, sampling).
        upper_mean, upper_mc_se: ``(U_2, ..., U_L)`` posterior means and their Monte-Carlo standard errors, each
            ``[n_l, n_l]`` (empty for one layer).
    """

    U: np.ndarray
    mean: np.ndarray
    mc_se: np.ndarray
    ess: np.ndarray
    rhat: np.ndarray
    mode: np.ndarray
    acceptance: float
    wall_time_s: float
    moves: str
    upper_mean: tuple = ()
    upper_mc_se: tuple = ()


class _Target:
    """``log p(theta) = -S_exact / 2 + log |dU / dtheta|`` in log-Cholesky coordinates (``U_a = exp(last)``), from
    scaled features ``X`` and labels ``y`` (the ``P x P`` kernel) or from scaled statistics ``(Gram, b, y^T y, P)``
    (:func:`attnpaths.gram.factored_solve`, ``D x D`` whatever ``P``)."""

    def __init__(self, arch, temperature, *, X=None, y=None, statistics=None):
        self.X, self.y, self.statistics, self.arch, self.temperature = X, y, statistics, arch, temperature
        self.pre_kernels = None
        # the size of the terms that cancel in -log p beyond its value: from statistics, y^T y / T and
        # (P - D) log T (Woodbury's difference), whose rounding the mode search must tolerate
        self.rounding = 0.0
        if statistics is not None:
            gram, _, targets_norm2, num_examples = statistics
            self.rounding = 0.5 * (
                targets_norm2 / temperature + abs(num_examples - gram.shape[0]) * abs(math.log(temperature))
            )
        if X is not None:
            P, n0, n = X.shape
            self.pre_kernels = pre_kernel_tensor(X) if P <= n0 and P * P * n * n <= 5e7 else None
        self.coords = CholeskyCoordinates([arch.layer_size(l) for l in range(1, arch.num_layers + 1)])
        self.dimension = self.coords.dimension + 1

    def split(self, theta):
        return self.coords.matrices(theta[..., :-1]), torch.exp(theta[..., -1])

    def log_density(self, theta):
        factors = self.coords.factors(theta[..., :-1])
        U_layers, U_a = [F @ F.transpose(-1, -2) for F in factors], torch.exp(theta[..., -1])
        if self.statistics is None:
            S = exact_action(
                self.X, self.y, self.arch, self.temperature, U_layers, U_a, pre_kernels=self.pre_kernels,
                factors=factors,
            )  # fmt: skip
        else:
            S = factored_solve(*self.statistics, factors[0], self.temperature).energy
            S = S + _prior_terms(self.arch, U_layers, U_a, factors)
        return -0.5 * S + self.coords.log_jacobian(theta[..., :-1]) + theta[..., -1]

    def theta(self, U_layers, U_a: float):
        return torch.cat(
            [
                self.coords.coordinates([torch.as_tensor(U, dtype=torch.float64) for U in U_layers]),
                torch.tensor([math.log(U_a)], dtype=torch.float64),
            ]
        )


def _mode(target: _Target, theta: torch.Tensor, max_iterations: int = 50):
    """Newton's method on ``-log p`` with backtracking (a step may raise ``-log p`` by a few ulps: the rounding of
    its evaluation); returns ``(theta, Hessian of -log p)``."""

    def negative(t):
        return -target.log_density(t[None])[0]

    for _ in range(max_iterations):
        t = theta.clone().requires_grad_(True)
        value = negative(t)
        (gradient,) = torch.autograd.grad(value, t)
        hessian = torch.autograd.functional.hessian(negative, theta)
        eigenvalues, vectors = torch.linalg.eigh(hessian)
        # a mode needs a positive definite Hessian: where the density is flat to rounding (a huge temperature), a
        # vanishing gradient alone is no mode, and on some CPUs that Hessian's rounding makes it indefinite
        # a few ulps of -log p (and of the terms that cancel in it, from statistics) are rounding: a Newton
        # decrement below them is a mode, and a step may raise -log p by that much (near the mode the predicted
        # decrease is below the rounding of its evaluation, and backtracking on that noise would stall)
        ulps = 64 * torch.finfo(torch.float64).eps
        cancelled = ulps * target.rounding
        if eigenvalues[0] > 0 and (
            float(gradient.norm()) < 1e-9
            or float(gradient @ torch.linalg.solve(hessian, gradient)) < max(1e-16, cancelled)
        ):
            return theta, hessian
        step = -vectors @ ((vectors.T @ gradient) / eigenvalues.abs().clamp_min(1e-8))
        step = step * min(1.0, 2.0 / float(step.norm()))
        ceiling = float(value.detach()) + ulps * abs(float(value.detach())) + cancelled
        scale = 1.0
        while scale > 1e-10 and float(negative(theta + scale * step)) > ceiling:
            scale /= 2
        theta = theta + scale * step
    raise RuntimeError(
        f"the order-parameter posterior has no mode in log-Cholesky coordinates within {max_iterations} Newton "
        "steps: at small widths (small N_a above all) its density there is a funnel towards U = 0, which these "
        "Metropolis chains cannot sample; use larger widths"
    )


MOVES = ("mixed", "random_walk")
"""Move kinds of :func:`sample_order_parameters`: ``"random_walk"``, Gaussian random-walk Metropolis steps;
``"mixed"``, independence Metropolis-Hastings moves from a :class:`MultivariateT` alternating with those steps."""


class MultivariateT:
    """Multivariate t with ``nu`` degrees of freedom, centre ``theta0`` and scale matrix ``factor factor^T``: the
    proposal of the independence moves of :func:`sample_order_parameters`.

    Its tails are heavier than those of the Gaussian with the same centre and covariance-like scale, so the ratio
    of a near-Gaussian target density to it stays bounded; that is what makes independence moves efficient
    (acceptance near 1 where the fit is good) and their chains uniformly ergodic.

    Args:
        theta0: ``[D]`` centre; factor: ``[D, D]`` lower-triangular scale factor; nu: degrees of freedom
            (an integer: the chi-square variable is a sum of ``nu`` squared normals, drawn from the generator).
    """

    def __init__(self, theta0: torch.Tensor, factor: torch.Tensor, nu: int = 10):
        self.theta0, self.factor, self.nu = theta0, factor, int_at_least(nu, "nu", 1)

    def sample(self, num: int, generator: torch.Generator) -> torch.Tensor:
        """``[num, D]`` draws."""
        D = self.theta0.numel()
        z = torch.randn(num, D, generator=generator, dtype=torch.float64)
        chi2 = torch.randn(num, self.nu, generator=generator, dtype=torch.float64).square().sum(dim=-1)
        return self.theta0 + (z / torch.sqrt(chi2 / self.nu)[:, None]) @ self.factor.T

    def log_density(self, theta: torch.Tensor) -> torch.Tensor:
        """``[...]`` log density at ``theta`` ``[..., D]`` up to a constant: ``-(nu + D)/2 log(1 + |z|^2 / nu)``
        with ``z = factor^{-1} (theta - theta0)``."""
        D = self.theta0.numel()
        centred = (theta - self.theta0).reshape(-1, D)
        z = torch.linalg.solve_triangular(self.factor, centred.T, upper=False).T
        return (-0.5 * (self.nu + D) * torch.log1p(z.square().sum(dim=-1) / self.nu)).reshape(theta.shape[:-1])


def _refitted(proposal: MultivariateT, states: torch.Tensor) -> MultivariateT:
    """``proposal`` with the mean and covariance of ``states`` ``[S, D]``, or ``proposal`` itself where their
    covariance is not numerically positive definite."""
    factor, info = torch.linalg.cholesky_ex(torch.cov(states.T))
    if int(info) != 0:
        return proposal
    return MultivariateT(states.mean(dim=0), factor, proposal.nu)


def _posterior(features, targets, statistics, heads, width, temperature, variances):
    """The checked arguments of :func:`sample_order_parameters` as ``(arch, target, saddle)``: the architecture,
    the density of (eq-exact-density) and the saddle point (:func:`attnpaths.theory.solve`) its mode search starts
    from."""
    given_examples = features is not None or targets is not None
    if given_examples == (statistics is not None):
        raise ValueError("give either features and targets, or statistics (attnpaths.gram.GramStatistics), not both")
    if given_examples and (features is None or targets is None):
        raise ValueError("give both features ([P, N0, n_paths]) and targets ([P])")
    if statistics is not None:
        if not isinstance(statistics, GramStatistics) or statistics.num_examples < 1:
            raise ValueError("statistics must be a GramStatistics (attnpaths.gram) of P >= 1 examples")
        num_paths = statistics.num_paths
    else:
        X_raw = as_float64_tensor(features, "features")
        if X_raw.ndim != 3 or X_raw.shape[0] < 1:
            raise ValueError(f"features must have shape [P, N0, n_paths] with P >= 1, got {tuple(X_raw.shape)}")
        num_paths = X_raw.shape[2]
    heads = check_num_paths(num_paths, heads)
    arch = architecture(heads, width, variances)
    if arch.gp_limit:
        raise ValueError("width must be finite: in the GP limit the order parameters do not fluctuate")
    for layer in range(1, arch.num_layers + 1):
        if arch.widths[layer - 1] < arch.layer_size(layer):
            raise ValueError(
                f"width: N_{layer} = {arch.widths[layer - 1]:g} must be at least n_{layer} = "
                f"{arch.layer_size(layer)} for U_{layer} to have a density"
            )
    temperature = positive_real(temperature, "temperature")
    options = dict(heads=heads, width=width, temperature=temperature, variances=variances, on_failure="raise")
    if statistics is not None:
        gram, b, targets_norm2 = statistics.scaled(arch.variances[0])
        scaled = (torch.from_numpy(gram), torch.from_numpy(b), targets_norm2, statistics.num_examples)
        return arch, _Target(arch, temperature, statistics=scaled), solve_from_statistics(statistics, **options)
    labels = as_float64_tensor(targets, "targets", labels=True)
    if labels.shape != (X_raw.shape[0],):
        raise ValueError(f"targets must have shape [P] = [{X_raw.shape[0]}], got {tuple(labels.shape)}")
    target = _Target(arch, temperature, X=scaled_features(X_raw, arch.variances[0]), y=labels)
    return arch, target, solve(X_raw, labels, **options)


def _laplace_start(target: _Target, saddle) -> tuple[torch.Tensor, torch.Tensor]:
    """The mode ``theta`` of (eq-exact-density), searched from the saddle point, and the lower Cholesky factor of
    the inverse Hessian of ``-log p`` there (the Laplace approximation's covariance)."""
    theta, hessian = _mode(target, target.theta(saddle.U_layers, saddle.U_a))
    try:
        return theta, torch.linalg.cholesky(torch.linalg.inv(hessian))
    except torch.linalg.LinAlgError as err:
        raise RuntimeError(
            "the order-parameter posterior has no mode in log-Cholesky coordinates that these chains can start "
            f"from: its Hessian at the stationary point is not positive definite to rounding (temperature="
            f"{target.temperature:g}: a density this flat has no usable mode); use a smaller temperature or larger "
            "widths"
        ) from err


def _metropolis(target, theta, factor, generator, mixed: bool, num_chains, num_warmup, num_samples, thin, stop, bar):
    """Run the chains of :func:`sample_order_parameters` from the Laplace approximation ``(theta, factor)``; returns
    the stored draws of every layer, ``[U_1 [C, S, n_1, n_1], ..., U_L]``, and the summed acceptance rates of the
    moves after the warm-up."""
    dimension = target.dimension
    step_factor = factor * (2.38 / math.sqrt(dimension))

    def normal(*shape):
        return torch.randn(*shape, generator=generator, dtype=torch.float64)

    state = theta + normal(num_chains, dimension) @ factor.T
    log_p = target.log_density(state)
    independence = MultivariateT(theta, factor) if mixed else None
    refit_at = num_warmup // 2 if num_chains * (num_warmup // 2) >= 2 * dimension else None
    stored, accepted, warm_states = [], 0.0, []
    checkpoints = set() if stop is None else {int(c) for c in stop.checkpoints(num_samples)}
    for step in bar(range(num_warmup + num_samples * thin)):
        if independence is not None and step == refit_at:
            independence = _refitted(independence, torch.cat(warm_states))
        if independence is not None and step % 2 == 0:
            proposal = independence.sample(num_chains, generator)
            log_p_proposal = target.log_density(proposal)
            # the Hastings ratio of an independence move: p(theta') q(theta) / (p(theta) q(theta'))
            log_ratio = (log_p_proposal - independence.log_density(proposal)) - (
                log_p - independence.log_density(state)
            )
        else:
            proposal = state + normal(num_chains, dimension) @ step_factor.T
            log_p_proposal = target.log_density(proposal)
            log_ratio = log_p_proposal - log_p
        accept = torch.log(torch.rand(num_chains, generator=generator, dtype=torch.float64)) < log_ratio
        state = torch.where(accept[:, None], proposal, state)
        log_p = torch.where(accept, log_p_proposal, log_p)
        if refit_at is not None and step < refit_at:
            warm_states.append(state)
        if step >= num_warmup:
            accepted += float(accept.to(torch.float64).mean())
            if (step - num_warmup) % thin == thin - 1:
                stored.append(target.split(state)[0])
                if len(stored) in checkpoints:
                    layers = [torch.stack(layer, dim=1) for layer in zip(*stored)]
                    if stop.reached(layers[0], tuple(layers[1:])):
                        break
    return [torch.stack(layer, dim=1) for layer in zip(*stored)], accepted


def _mc_se(draws: torch.Tensor, ess: torch.Tensor) -> np.ndarray:
    """The Monte-Carlo standard errors of the means of ``draws`` ``[C, S, ...]`` with effective sample sizes ``ess``:
    the posterior standard deviation over the root of ``ess``."""
    return (draws.reshape(-1, *draws.shape[2:]).std(dim=0) / torch.sqrt(ess)).numpy()


def sample_order_parameters(
    features: Optional[ArrayLike] = None,
    targets: Optional[ArrayLike] = None,
    *,
    statistics: GramStatistics | None = None,
    heads: int | Sequence[int],
    width: float | Sequence[float],
    temperature: float,
    generator: torch.Generator,
    variances: float | Sequence[float] = 1.0,
    num_chains: int = 64,
    num_warmup: int = 500,
    num_samples: int = 400,
    thin: int = 5,
    moves: str = "mixed",
    progress: bool = True,
    stop=None,
) -> OrderParameterSamples:
    """Sample the exact finite-width posterior (eq-exact-density) of the order parameters.

    Metropolis-Hastings in the ``D`` log-Cholesky coordinates, ``num_chains`` chains in parallel, each started
    from the Laplace approximation at the mode (a Gaussian with the inverse Hessian ``H^{-1}`` of ``-log p``).
    Random-walk moves propose ``N(0, (2.38^2 / D) H^{-1})`` steps, the scale that is optimal for Gaussian
    targets. With ``moves="mixed"`` every other move is an independence move from a :class:`MultivariateT`
    ``q`` with 10 degrees of freedom, accepted with probability ``min(1, p(theta') q(theta) / (p(theta) q(theta')))``:
    during the first half of the warm-up ``q`` is centred at the mode with scale ``H^{-1}``; from the second half
    of the warm-up on it has the mean and covariance of the states of the first half over all chains (a better fit
    where the posterior is skewed, at small ``N``), and it stays fixed while draws are stored. Near-Gaussian
    posteriors are then explored in a few moves instead of a random walk's ``O(D)``; the random-walk moves keep
    the chains moving where the t fits the posterior poorly (many dimensions, small ``N``). Both kernels leave the
    posterior invariant, so their alternation does too. Where the first half of the warm-up holds fewer than
    ``2 D`` states (chains times moves), or their covariance is not positive definite, ``q`` stays at the mode.

    Each move costs one ``P x P`` Cholesky factorisation per chain; from ``statistics`` one ``D x D``
    (:func:`attnpaths.gram.factored_solve`), whatever ``P``: the density is the same, exactly.

    Args:
        features: ``[P, N0, n_paths]`` path features (as for :func:`attnpaths.theory.solve`).
        targets: ``[P]`` the training targets (``+-1`` labels).
        statistics: in place of ``features`` and ``targets``, their :class:`attnpaths.gram.GramStatistics` (raw
            features, as for :func:`attnpaths.theory.solve_from_statistics`).
        heads: ``(H_1, ..., H_L)``.
        width: the theory's width, a number or ``(N_1, ..., N_L, N_a)``, finite, with ``N_l >= n_l = H_l ... H_L``.
        temperature: ``T > 0``.
        generator: source of all randomness.
        variances: as for :func:`attnpaths.theory.solve`.
        num_chains, num_warmup, num_samples, thin: chains; moves discarded per chain; draws stored per chain
            (the most, with ``stop``); moves between stored draws.
        moves: ``"mixed"`` (default) or ``"random_walk"`` (:data:`MOVES`).
        progress: tqdm bar over the moves.
        stop: sequential stopping, or ``None`` to store ``num_samples``: as for
            :meth:`attnpaths.sampler.PosteriorSampler.run` (``checkpoints(num_samples)`` and
            ``reached(U_1 draws [C, s, n, n], upper layers' draws)``, e.g.
            :class:`attnpaths.experiments.sampling.PrecisionTarget`).

    Returns:
        :class:`OrderParameterSamples`.
    """
    start = time.perf_counter()
    torch_generator(generator)
    int_at_least(num_chains, "num_chains", 2)
    int_at_least(num_warmup, "num_warmup", 0)
    int_at_least(num_samples, "num_samples", 4)
    int_at_least(thin, "thin", 1)
    if moves not in MOVES:
        raise ValueError(f"moves must be one of {MOVES}, got {moves!r}")
    arch, target, saddle = _posterior(features, targets, statistics, heads, width, temperature, variances)
    theta, factor = _laplace_start(target, saddle)
    description = f"order-parameter posterior N={arch.widths[0]:g}"

    def bar(steps):
        return tqdm(steps, desc=description, disable=not progress)

    schedule = (num_chains, num_warmup, num_samples, thin, stop, bar)
    stored, accepted = _metropolis(target, theta, factor, generator, moves == "mixed", *schedule)
    U = stored[0]  # [C, S, n, n]
    ess = effective_sample_size(U)
    return OrderParameterSamples(
        U=U.numpy(),
        mean=U.mean(dim=(0, 1)).numpy(),
        mc_se=_mc_se(U, ess),
        ess=ess.numpy(),
        rhat=split_rhat(U).numpy(),
        mode=target.split(theta)[0][0].detach().numpy(),
        acceptance=accepted / (U.shape[1] * thin),
        wall_time_s=time.perf_counter() - start,
        moves=moves,
        upper_mean=tuple(u.mean(dim=(0, 1)).numpy() for u in stored[1:]),
        upper_mc_se=tuple(_mc_se(u, effective_sample_size(u)) for u in stored[1:]),
    )


def predictive_means(
    statistics: GramStatistics,
    U: ArrayLike,
    features_test: ArrayLike,
    *,
    temperature: float,
    variances: float | Sequence[float] = 1.0,
    batch_size: int = 16,
) -> np.ndarray:
    """The finite network's posterior predictive mean on test examples, per chain: the mean over a chain's draws
    of ``U_1`` of the predictor's mean (eq-predictor) at the kernel ``K(U_1)``.

    Given ``U_1``, integrating out the input weights leaves a Gaussian process with kernel ``K(U_1)`` (module
    docstring), so averaging its posterior mean over draws of (eq-exact-density) is the network's posterior mean,
    exactly, up to Monte-Carlo error (the saddle point instead evaluates the predictor at one ``U``).

    Args:
        statistics: the :class:`attnpaths.gram.GramStatistics` of the training set (raw features).
        U: ``[C, S, n, n]`` draws of ``U_1`` (:attr:`OrderParameterSamples.U`, or a thinned slice of it).
        features_test: ``[P_test, N0, n_paths]`` raw path features of the test examples.
        temperature: ``T > 0``; variances: the prior variances, as for :func:`attnpaths.theory.solve` (only ``s0``
            enters).
        batch_size: draws per ``[batch, D, D]`` factorisation (memory only).

    Returns:
        ``[C, P_test]`` float64.
    """
    if not isinstance(statistics, GramStatistics) or statistics.num_examples < 1:
        raise ValueError("statistics must be a GramStatistics (attnpaths.gram) of P >= 1 examples")
    temperature = positive_real(temperature, "temperature")
    batch_size = int_at_least(batch_size, "batch_size", 1)
    n0, n = statistics.input_width, statistics.num_paths
    U = as_float64_tensor(U, "U")
    if U.ndim != 4 or U.shape[2:] != (n, n) or U.shape[0] < 1 or U.shape[1] < 1:
        raise ValueError(f"U must have shape [C, S, {n}, {n}] with C, S >= 1, got {tuple(U.shape)}")
    s0 = positive_real(variances if np.ndim(variances) == 0 else np.asarray(variances)[0], "variances (s0)")
    X_test = as_float64_tensor(features_test, "features_test")
    if X_test.ndim != 3 or X_test.shape[1:] != (n0, n):
        raise ValueError(f"features_test must have shape [P_test, {n0}, {n}], got {tuple(X_test.shape)}")
    X_test = scaled_features(X_test, s0).reshape(X_test.shape[0], -1)
    gram, b, targets_norm2 = statistics.scaled(s0)
    gram, b = torch.from_numpy(gram), torch.from_numpy(b)
    C, S = U.shape[:2]
    factors = torch.linalg.cholesky(U.reshape(C * S, n, n))
    weights = torch.cat(
        [
            factored_solve(
                gram, b, targets_norm2, statistics.num_examples, factors[k : k + batch_size], temperature
            ).mean_weights.reshape(-1, n0 * n)
            for k in range(0, C * S, batch_size)
        ]
    )
    return (weights.reshape(C, S, -1).mean(dim=1) @ X_test.T).numpy()
