"""The exact finite-width density of the order parameters at one width (:mod:`attnpaths.order_parameter_posterior`,
eq-exact-density): its mean, the network's predictive variance it implies, and the widths and scales around it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import torch

from ..._validation import heads_tuple, int_at_least, positive_int, positive_real
from ...order_parameter_posterior import sample_order_parameters
from ..kernel_pcs import predictor_moments
from ..path_data import PathData, reorder
from ._network import PrecisionTarget


@dataclass(frozen=True)
class ExactOrderParameter:
    """The exact finite-width posterior mean of ``U`` (:mod:`attnpaths.order_parameter_posterior`, (eq-exact-density)) at one
    width, in figure order: ``U`` and its Monte-Carlo standard error ``U_se`` (``[n, n]``), ``mode`` (the
    density's mode), ``diagnostics`` (``wall_time_s``, chains, draws, ``min_ess``, ``max_rhat``, ``acceptance``),
    ``scaled``: ``{c: ExactOrderParameter}``, the same density with the entropy weighted by ``c`` (width
    ``round(c N)``: the entropy is the only term of (eq-exact-density) proportional to ``N``), where planned, and
    ``U_upper``, ``U_upper_se``: the means of ``U_2, ..., U_L`` and their errors, in path order (empty for one
    layer); ``mean_variance``, ``mean_variance_se``: the network's posterior variance of ``f`` on the test set
    from the exact density (:func:`exact_predictive_variance`), averaged over the test points, and its
    Monte-Carlo error (None where not computed)."""

    width: int
    U: np.ndarray
    U_se: np.ndarray
    mode: np.ndarray
    diagnostics: dict
    scaled: dict = dataclasses.field(default_factory=dict)
    U_upper: tuple = ()
    U_upper_se: tuple = ()
    mean_variance: float | None = None
    mean_variance_se: float | None = None


def exact_order_parameter(
    data: PathData,
    width: int,
    temperature: float,
    generator: torch.Generator,
    *,
    num_chains: int = 32,
    num_warmup: int = 300,
    num_samples: int = 300,
    thin: int = 4,
    progress: bool = True,
    target: PrecisionTarget | None = None,
) -> ExactOrderParameter:
    """Sample the exact posterior (eq-exact-density) of the order parameters of ``data``'s network at width ``N`` (every layer)
    and summarise ``U_1`` in figure order (:func:`attnpaths.order_parameter_posterior.sample_order_parameters`);
    with a ``target`` (:class:`PrecisionTarget`) the chains stop once every layer's mean is that precise,
    ``num_samples`` being the most they store."""
    width = positive_int(width, "width")
    draws = sample_order_parameters(
        data.features,
        data.y,
        heads=data.network.heads,
        width=width,
        temperature=temperature,
        generator=generator,
        num_chains=num_chains,
        num_warmup=num_warmup,
        num_samples=num_samples,
        thin=thin,
        progress=progress,
        stop=target,
    )
    order = data.network.plot_order
    mean_variance, mean_variance_se = exact_predictive_variance(data, draws.U, temperature)
    return ExactOrderParameter(
        width=width,
        mean_variance=mean_variance,
        mean_variance_se=mean_variance_se,
        U=reorder(draws.mean, order),
        U_se=reorder(draws.mc_se, order),
        mode=reorder(draws.mode, order),
        diagnostics={
            "wall_time_s": draws.wall_time_s,
            "num_chains": int(draws.U.shape[0]),
            "num_samples": int(draws.U.shape[1]),
            "max_samples": num_samples,
            "min_ess": float(draws.ess.min()),
            "max_rhat": float(draws.rhat.max()),
            "acceptance": draws.acceptance,
        },
        U_upper=tuple(draws.upper_mean),
        U_upper_se=tuple(draws.upper_mc_se),
    )


def exact_predictive_variance(data: PathData, U, temperature: float, max_draws: int = 256) -> tuple[float, float]:
    """The finite network's posterior variance of ``f`` on ``data``'s test points from draws of ``U_1`` from the
    exact density (eq-exact-density), averaged over the test points, and its Monte-Carlo error.

    Given ``U_1`` the output is a Gaussian process with kernel ``K(U_1)`` (:mod:`attnpaths.order_parameter_posterior`),
    so by the law of total variance ``Var f(x) = E[kappa - k^T (K + T I)^{-1} k] + Var[<f(x) | U_1>]`` over the
    density, exactly: the saddle point's variance (eq-predictor at one ``U``) is its large-``N`` limit. Evaluated
    at up to ``max_draws`` draws, evenly spaced in every chain; the error is the jackknife over the chains (they
    are independent; the draws of a chain are not).

    Args:
        U: ``[C, S, n, n]`` draws of ``U_1`` in the network's path order (``OrderParameterSamples.U``), ``C >= 2``.

    Returns:
        ``(test-set average of Var f, its Monte-Carlo standard error)``.
    """
    U = torch.as_tensor(U, dtype=torch.float64)
    if U.ndim != 4 or U.shape[0] < 2:
        raise ValueError(f"U must have shape [C >= 2, S, n, n], got {tuple(U.shape)}")
    chains, per_chain = U.shape[:2]
    keep = np.unique(np.linspace(0, per_chain - 1, max(1, int_at_least(max_draws, "max_draws", 2) // chains)).round())
    kept = U[:, torch.as_tensor(keep, dtype=torch.long)]  # [C, S', n, n]
    means, variances = (
        moments.reshape(chains, len(keep), -1)  # [C, S', B] each
        for moments in predictor_moments(data.features, data.y, data.features_test, kept.flatten(0, 1), temperature)
    )

    def total(rows):  # E[Var f | U] + Var[<f | U>], averaged over the test points
        return float((variances[rows].mean(axis=(0, 1)) + means[rows].reshape(-1, means.shape[2]).var(axis=0)).mean())

    leave_one_out = np.array([total(np.delete(np.arange(chains), c)) for c in range(chains)])
    se = float(np.sqrt((chains - 1) / chains * np.sum((leave_one_out - leave_one_out.mean()) ** 2)))
    return total(np.arange(chains)), se


def scaled_width(width: int, scale: float) -> int:
    """``round(scale N)``: the width at which the action (eq-action) and the exact density (eq-exact-density) equal
    those at width ``N`` with the entropy weighted by ``scale`` (exactly when ``scale N`` is an integer; raises
    ``ValueError`` otherwise, since the weight would then differ from ``scale``)."""
    width = positive_int(width, "width")
    scale = positive_real(scale, "scale")
    scaled = round(scale * width)
    if abs(scaled - scale * width) > 1e-9 * width or scaled < 1:
        raise ValueError(f"scale * width must be a positive integer, got scale={scale:g}, width={width}")
    return int(scaled)


def finite_width_epsilon(width, num_paths: int) -> float:
    """``(n + 1) / N``: the relative scale of the finite-width difference between the theory's ``U`` and the
    posterior mean of ``U`` (a scale for figures, never a test tolerance).

    The theory is the saddle point of the action, exact as ``N, P -> infinity``; the posterior mean at
    finite ``N`` differs from it by ``O(1/N)``. The scale chosen: given the layers above, the ``N`` columns
    of the path weights ``e_pi`` (eq-sampled-u) are i.i.d. Gaussian, so ``U = e e^T / N`` is Wishart in ``n = n_paths``
    dimensions, whose exact log-density carries ``(N - n - 1) log det U`` where the action (eq-action) has
    ``N log det U``: the terms the saddle point drops are of relative size ``(n + 1) / N``. The coefficient
    of the resulting shift is not derived here, so this is a scale, not a bound. Where it is affordable the
    shift is computed exactly instead (:func:`exact_order_parameter`); the HMC chapter shows that the measured
    shifts are of this order.
    """
    width = positive_int(width, "width")
    num_paths = positive_int(num_paths, "num_paths")
    return (num_paths + 1) / width


def exact_density_dimension(heads) -> int:
    """Number of free numbers of the exact order-parameter density (eq-exact-density): the distinct entries
    of every symmetric ``U_l`` (size ``n_l = H_l ... H_L``) and the scalar ``U_a``,
    ``sum_l n_l (n_l + 1) / 2 + 1``."""
    heads = heads_tuple(heads)
    sizes = [int(np.prod(heads[l:])) for l in range(len(heads))]
    return sum(n * (n + 1) // 2 for n in sizes) + 1
