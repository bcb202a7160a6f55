"""The finite network's posterior at one width (blocked Gibbs, :mod:`attnpaths.sampler`, eq-sampled-u), summarised
with its Monte-Carlo errors and the sampler's diagnostics, and the sequential stopping rule of every sampler here."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy.stats import norm

from ..._validation import as_float64_array, positive_int
from ...network import AttentionNetwork
from ...sampler import PosteriorSampler, effective_sample_size, split_rhat
from ...theory import classification_accuracy
from ..finite_width import entry_scale
from ..kernel_pcs import mean_predictor
from ..path_data import PathData, reorder


@dataclass(frozen=True, eq=False)
class SampledPoint:
    """Posterior samples at one width, summarised (eq-sampled-u).

    Attributes:
        width: ``N``.
        accuracy: accuracy of the sampled mean predictor on the test set.
        accuracy_mc_sd: Monte-Carlo standard deviation of :attr:`accuracy` (see :func:`accuracy_mc_sd`).
        mean: ``[P_test]`` sampled mean predictor; ``mean_se``: its Monte-Carlo standard errors
            ``sd / sqrt(ESS)``; ``sd``: posterior standard deviation of ``f`` per test point.
        kernel_mean: ``[P_test]`` the theory's predictor (eq-predictor) evaluated with the SAMPLED ``U`` in place of the
            minimiser: what the sampled order parameter alone changes in the predictions.
        U, U_se, U_sd, U_ess: sampled ``U`` (eq-sampled-u), its Monte-Carlo standard error, the posterior standard
            deviation of the per-sample overlap and the ESS of each entry, all ``[n, n]`` in figure order.
        diagnostics: plain numbers: ``wall_time_s``, chains, draws, warm-up, min / median predictor ESS,
            max predictor R-hat, min ``U`` ESS, max ``U`` R-hat.
        U_upper, U_upper_se: ``(U_2, ..., U_L)`` of the layers above the first
            (:meth:`~attnpaths.network.AttentionNetwork.layer_order_parameters`) and their Monte-Carlo standard
            errors, ``[n_l, n_l]`` in path order (``h_l`` slowest); empty for one layer.
        variance_se: ``[P_test]`` Monte-Carlo standard error of the posterior variance ``sd ** 2`` of ``f`` per test
            point (:func:`variance_and_se`); ``None`` where a run did not keep it.
        mean_variance, mean_variance_se: the posterior variance of ``f`` averaged over the test points and its
            Monte-Carlo standard error, from the ESS of the per-draw average of ``(f - <f>) ** 2`` (the test
            points' errors share the draws, so they are not independent); ``None`` where a run did not keep it.
    """

    width: int
    accuracy: float
    accuracy_mc_sd: float
    mean: np.ndarray
    mean_se: np.ndarray
    sd: np.ndarray
    kernel_mean: np.ndarray
    U: np.ndarray
    U_se: np.ndarray
    U_sd: np.ndarray
    U_ess: np.ndarray
    diagnostics: dict
    U_upper: tuple = ()
    U_upper_se: tuple = ()
    variance_se: np.ndarray | None = None
    mean_variance: float | None = None
    mean_variance_se: float | None = None


def _mean_and_se(draws: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Mean over chains and draws of ``[C, S, ...]`` and its Monte-Carlo standard error ``sd / sqrt(ESS)``."""
    ess = _usable_ess(effective_sample_size(draws).numpy())
    return draws.mean(dim=(0, 1)).numpy(), draws.flatten(0, 1).std(dim=0).numpy() / np.sqrt(ess)


def accuracy_mc_sd(mean, mean_se) -> float:
    """Monte-Carlo standard deviation of the accuracy of a sampled mean predictor.

    A test point's sampled mean ``m_i`` carries a Monte-Carlo error ``se_i``; with a Gaussian error its sign
    differs from the sign of the exact posterior mean with probability ``p_i = Phi(-|m_i| / se_i)``, and the
    accuracy moves by ``1 / n`` each time, independently across points, so
    ``sd = sqrt(sum_i p_i (1 - p_i)) / n``.

    Args:
        mean: ``[n]`` sampled mean predictor; ``mean_se``: ``[n]`` its standard errors (> 0).
    """
    mean = as_float64_array(mean, "mean")
    se = as_float64_array(mean_se, "mean_se")
    if mean.shape != se.shape or mean.ndim != 1 or np.any(se <= 0):
        raise ValueError("mean and mean_se must be [n] arrays with mean_se > 0")
    p = norm.cdf(-np.abs(mean) / se)
    return float(np.sqrt(np.sum(p * (1 - p))) / mean.size)


def variance_and_se(draws) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Posterior variance of every entry of ``draws`` ``[C, S, B]`` (chains, draws, test points) and its
    Monte-Carlo standard error, and the same for the variance averaged over the ``B`` entries.

    The variance is the unbiased variance over all ``C S`` draws, the mean of the squared deviations
    ``d = (f - <f>) ** 2`` up to the factor ``C S / (C S - 1)``; its standard error is ``sd(d) / sqrt(ESS(d))``
    with the ESS of ``d`` itself (:func:`~attnpaths.sampler.effective_sample_size`), not that of ``f``: the
    squares decorrelate at their own rate. The average over the entries is the mean of the per-draw average of
    ``d``, a single series whose ESS accounts for the correlation that the shared draws put between the
    entries' errors.

    Args:
        draws: ``[C, S, B]``, ``S >= 4``.

    Returns:
        ``(variance [B], variance_se [B], mean_variance, mean_variance_se)``.
    """
    draws = torch.as_tensor(draws, dtype=torch.float64)
    if draws.ndim != 3 or draws.shape[1] < 4 or draws.shape[0] * draws.shape[1] < 2:
        raise ValueError(f"draws must have shape [C, S >= 4, B], got {tuple(draws.shape)}")
    total = draws.shape[0] * draws.shape[1]
    factor = total / (total - 1)  # the unbiased variance, as torch.var
    squares = (draws - draws.mean(dim=(0, 1))).square_().mul_(factor)  # [C, S, B], in place: as large as draws
    variance, variance_se = _mean_and_se(squares)
    average = squares.mean(dim=2)[..., None]  # [C, S, 1]
    mean_variance, mean_variance_se = _mean_and_se(average)
    return variance, variance_se, float(mean_variance[0]), float(mean_variance_se[0])


def _usable_ess(ess: np.ndarray) -> np.ndarray:
    """ESS floored at 1: very short runs can give a non-positive or undefined estimate (Geyer's initial
    sequence ends at its first pair), for which one effective draw is the conservative reading."""
    return np.where(np.isfinite(ess) & (ess >= 1), ess, 1.0)


@dataclass(frozen=True)
class PrecisionTarget:
    """Sequential stopping of a sampler on the precision of the order parameters it draws: the network's ``U``
    (eq-sampled-u) or the exact density's (eq-exact-density).

    A run keeps drawing until every entry of every layer's order parameter has a Monte-Carlo standard error
    ``sd / sqrt(ESS)`` (as ``SampledPoint.U_se``) of at most ``relative_se`` times its scale
    ``sqrt(|U_ii U_jj|)`` (:func:`~attnpaths.experiments.finite_width.entry_scale`), or its maximum of draws. It looks after ``min_draws`` draws per chain and then
    each time the kept draws have grown by the factor ``growth``: a few looks on a geometric schedule, so the
    stopping rule moves an estimate by a small fraction of its standard error. Used as ``stop`` of
    :meth:`attnpaths.sampler.PosteriorSampler.run` and of
    :func:`attnpaths.order_parameter_posterior.sample_order_parameters`; a run that reaches its target early costs
    only what the target needs, and one that does not keeps its maximum.

    Attributes:
        relative_se: the target, in ``(0, 1)``.
        min_draws: draws per chain before the first look (>= 8: the ESS of shorter runs means little).
        growth: factor between looks, > 1.
    """

    relative_se: float
    min_draws: int = 25
    growth: float = 1.25

    def __post_init__(self):
        if not 0 < float(self.relative_se) < 1:
            raise ValueError(f"relative_se must lie in (0, 1), got {self.relative_se!r}")
        if isinstance(self.min_draws, bool) or not isinstance(self.min_draws, int) or self.min_draws < 8:
            raise ValueError(f"min_draws must be an integer >= 8, got {self.min_draws!r}")
        if not float(self.growth) > 1:
            raise ValueError(f"growth must be > 1, got {self.growth!r}")

    def checkpoints(self, num_samples: int) -> list[int]:
        """Draws per chain at which a run of at most ``num_samples`` looks: ``min_draws``, then each look
        ``ceil(growth x)`` of the one before, below ``num_samples``."""
        looks, draws = [], self.min_draws
        while draws < num_samples:
            looks.append(draws)
            draws = max(draws + 1, int(np.ceil(self.growth * draws)))
        return looks

    def relative_errors(self, order_parameters: torch.Tensor, upper_order_parameters=()) -> list[np.ndarray]:
        """``se / sqrt(|U_ii U_jj|)`` of every layer's ``U``, first layer first, from draws ``[C, s, n, n]``."""
        errors = []
        for draws in (order_parameters, *upper_order_parameters):
            mean, se = _mean_and_se(draws.cpu())
            scale = entry_scale(mean)
            errors.append(se / np.where(scale > 0, scale, np.inf))
        return errors

    def reached(self, order_parameters: torch.Tensor, upper_order_parameters=()) -> bool:
        """Whether the draws kept so far meet the target in every entry of every layer."""
        return all(
            bool(np.all(e <= self.relative_se)) for e in self.relative_errors(order_parameters, upper_order_parameters)
        )


def sample_posterior(
    data: PathData,
    width: int,
    temperature: float,
    generator: torch.Generator,
    *,
    num_warmup: int,
    num_samples: int,
    num_chains: int,
    progress: bool = True,
    device="cpu",
    target: PrecisionTarget | None = None,
) -> SampledPoint:
    """Sample the finite network's posterior at width ``N`` (blocked Gibbs, :mod:`attnpaths.sampler`).

    Args:
        data: path features (training data condition the posterior; the ``"test"`` split gives the accuracy).
        width: ``N`` (every layer).
        temperature: likelihood variance ``T``.
        generator: the source of all randomness of the run.
        num_warmup, num_samples, num_chains: sweeps discarded per chain, draws kept per chain (the most, with
            ``target``), chains.
        device: where the sampler's linear algebra runs (:class:`~attnpaths.sampler.PosteriorSampler`).
        target: stop as soon as ``U`` is this precise (:class:`PrecisionTarget`); ``None`` keeps every draw.
    """
    width = positive_int(width, "width")
    network = AttentionNetwork(data.network.attention, width)
    sampler = PosteriorSampler(network, data.y, temperature, features=data.features, device=device)
    samples = sampler.run(generator, num_warmup, num_samples, num_chains, progress=progress, stop=target)
    # f on the test set once ([C, S, B], the largest array of a run): its variance and diagnostics, as
    # samples.predictor_variance and samples.diagnostics compute them
    predictor = samples.predictor_samples(data.features_test)
    mean = samples.predict(data.features_test).numpy()
    sd = predictor.flatten(0, 1).var(dim=0).sqrt().numpy()
    ess = _usable_ess(effective_sample_size(predictor).numpy())
    max_predictor_rhat = float(split_rhat(predictor).max())
    _, variance_se, mean_variance, mean_variance_se = variance_and_se(predictor)
    del predictor
    mean_se = sd / np.sqrt(ess)
    order = data.network.plot_order
    U_ess = _usable_ess(effective_sample_size(samples.order_parameters).numpy())
    U_sd = samples.order_parameters.flatten(0, 1).std(dim=0).numpy()
    U_flat = samples.order_parameter().numpy()
    upper = [_mean_and_se(u.cpu()) for u in samples.upper_order_parameters]
    return SampledPoint(
        width=width,
        accuracy=classification_accuracy(mean, data.y_test.numpy()),
        accuracy_mc_sd=accuracy_mc_sd(mean, mean_se),
        mean=mean,
        mean_se=mean_se,
        sd=sd,
        kernel_mean=mean_predictor(data.features, data.y, data.features_test, U_flat, temperature),
        U=reorder(U_flat, order),
        U_se=reorder(U_sd / np.sqrt(U_ess), order),
        U_sd=reorder(U_sd, order),
        U_ess=reorder(U_ess, order),
        diagnostics={
            "wall_time_s": samples.wall_time_s,
            "num_chains": samples.num_chains,
            "num_samples": samples.num_samples,
            "max_samples": num_samples,
            "num_warmup": samples.num_warmup,
            "min_predictor_ess": float(ess.min()),
            "median_predictor_ess": float(np.median(ess)),
            "max_predictor_rhat": max_predictor_rhat,
            "min_U_ess": float(U_ess.min()),
            "max_U_rhat": float(split_rhat(samples.order_parameters).max()),
        },
        U_upper=tuple(m for m, _ in upper),
        U_upper_se=tuple(se for _, se in upper),
        variance_se=variance_se,
        mean_variance=mean_variance,
        mean_variance_se=mean_variance_se,
    )
