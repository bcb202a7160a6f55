"""Small random problems shared by the theory tests."""

import torch


def random_problem(P=24, n0=6, heads=(2, 2), seed=0, signal=1.5):
    """Path features ``[P, n0, n_paths]`` with class-dependent structure and labels ``+-1`` (class-sorted)."""
    g = torch.Generator().manual_seed(seed)
    n_paths = 1
    for h in heads:
        n_paths *= h
    y = torch.cat([torch.ones(P // 2), -torch.ones(P - P // 2)]).to(torch.float64)
    xi = torch.randn(P, n0, n_paths, generator=g, dtype=torch.float64)
    xi[:, 0, 0] += signal * y  # path 0 carries the label
    if n_paths > 1:
        xi[:, :, 1] += 0.8 * xi[:, :, 0]  # path 1 is correlated with path 0
    return xi, y


def random_spd(n, seed, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    A = torch.randn(n, n, generator=g, dtype=torch.float64)
    return scale * (A @ A.T / n + torch.eye(n, dtype=torch.float64))
