"""Numerical checks of the theory against finite networks (sec-prior-kernel)."""

from __future__ import annotations

import torch
from tqdm import tqdm

from ._validation import int_at_least, positive_int
from .engine import map_tasks, task_generator
from .network import AttentionNetwork


def prior_kernel_monte_carlo(
    network: AttentionNetwork,
    x,
    generator: torch.Generator,
    *,
    num_samples: int,
    batch_size: int = 1000,
    progress: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Monte-Carlo estimate of the prior kernel ``E[f(x) f(x')]`` over weights drawn from the prior (sec-model-network).

    At any width this expectation equals ``K_GP`` (eq-gp), which checks the normalisations of the forward map
    (eq-forward) against the kernels (eq-kernel).

    Args:
        network: the finite network (its widths and variances set the prior).
        x: ``[B, N0, T]`` inputs.
        generator: source of the prior draws.
        num_samples: number of networks drawn.
        batch_size: networks evaluated at once (memory only; results do not depend on it beyond rounding).

    Returns:
        ``(mean, standard_error)``, both ``[B, B]``: the sample mean of ``f(x) f(x')`` and its standard error.
    """
    int_at_least(num_samples, "num_samples", 2)
    positive_int(batch_size, "batch_size")
    features = network.features(x)
    total = torch.zeros(features.shape[0], features.shape[0], dtype=torch.float64)
    total_sq = torch.zeros_like(total)
    remaining = int(num_samples)
    with tqdm(total=remaining, desc="prior samples", disable=not progress, leave=False) as bar:
        while remaining:
            count = min(batch_size, remaining)
            f = network.forward_from_features(features, network.sample_prior(generator, count))  # [S, B]
            products = f[:, :, None] * f[:, None, :]
            total += products.sum(dim=0)
            total_sq += (products**2).sum(dim=0)
            remaining -= count
            bar.update(count)
    mean = total / num_samples
    variance = (total_sq / num_samples - mean**2) * num_samples / (num_samples - 1)
    return mean, (variance / num_samples).sqrt()


def prior_kernel_at_widths(attention, x, widths, seed: int, *, num_samples: int, progress: bool = False) -> dict:
    """:func:`prior_kernel_monte_carlo` of the network with ``attention`` at every width, one task per width
    (:func:`attnpaths.engine.map_tasks`), each drawing from a generator seeded with
    :func:`~attnpaths.engine.task_seed` ``(seed, width)``.

    Args:
        attention: the network's attention (fixed); x: ``[B, N0, T]`` inputs; widths: widths ``N`` (every layer).

    Returns:
        ``{width: (mean, standard_error)}``, both ``[B, B]``, in the order of ``widths``.
    """
    widths = [int(w) for w in widths]
    estimates = map_tasks(
        _prior_kernel_at_width,
        [dict(width=w) for w in widths],
        description="prior kernel",
        shared=dict(attention=attention, x=x, seed=seed, num_samples=num_samples),
        progress=progress,
    )
    return dict(zip(widths, estimates))


def _prior_kernel_at_width(attention, x, width: int, seed: int, num_samples: int):
    return prior_kernel_monte_carlo(
        AttentionNetwork(attention, width=width), x, task_generator(seed, width), num_samples=num_samples
    )
