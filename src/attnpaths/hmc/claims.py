"""Claims specific to the hidden-Markov-chain task (Fig. 2), as tests.

Both are read off the outputs of the authors' code (the GP lines and the ``U`` panels of Fig. 2c), not
quoted from the paper's text. Each function returns a :class:`attnpaths.claims.Verdict`; the tests run over
independently drawn data sets (one replicate per data set), so they speak of the task, not of one draw.
"""

from __future__ import annotations

import numpy as np

from .._validation import as_float64_array
from ..claims import Verdict, all_of, replicate_t

SOURCE_GP_ORDER = "output of the authors' code (the GP lines of Fig. 2c)"
SOURCE_INTERPLAY = "output of the authors' code (the U panels of Fig. 2c, 2e)"


def gp_ordering(claim: str, *, gp_accuracy: dict, level: float = 0.01) -> Verdict:
    """Claim: GP(all paths) < GP(path g) < GP(paths g+d): the adversarial paths hurt the GP limit and the
    denoising path helps it.

    Args:
        gp_accuracy: ``{"all", "g", "g+d"}``, each ``[n_sets]`` GP accuracies per independently drawn data set.

    Test: two one-sided t-tests over the data sets (Bonferroni over the two): mean ``GP(g) - GP(all) > 0`` and
    mean ``GP(g+d) - GP(g) > 0``.
    """
    missing = [k for k in ("all", "g", "g+d") if k not in gp_accuracy]
    if missing:
        raise ValueError(f"gp_accuracy must hold the keys 'all', 'g', 'g+d', missing {missing}")
    a, g, gd = (as_float64_array(gp_accuracy[k], f"gp_accuracy[{k!r}]") for k in ("all", "g", "g+d"))
    if not a.shape == g.shape == gd.shape or a.ndim != 1:
        raise ValueError(f"gp_accuracy values must be [n_sets] arrays of one shape, got {a.shape}, {g.shape}, {gd.shape}")
    parts = [
        replicate_t(claim, "adversarial paths hurt", source=SOURCE_GP_ORDER, statistic="GP(g) - GP(all)",
                    differences=g - a, level=level, num_tests=2),
        replicate_t(claim, "denoising path helps", source=SOURCE_GP_ORDER, statistic="GP(g+d) - GP(g)",
                    differences=gd - g, level=level, num_tests=2),
    ]
    return all_of(claim, "GP limit: all paths < path g < paths g+d", source=SOURCE_GP_ORDER, parts=parts,
                  measured=(f"Mean over {a.size} data sets: GP(all) = {a.mean():.3f}, GP(g) = {g.mean():.3f}, "
                            f"GP(g+d) = {gd.mean():.3f}."))


def path_interplay(claim: str, *, U_small, U_large, names, widths: tuple[int, int], u_gp: float = 1.0,
                   level: float = 0.01, where: str = "") -> Verdict:
    """Claim: at small ``N`` the theory raises ``U_gg`` and ``U_dd`` above the GP value, suppresses the
    adversarial diagonals below it, and pairs g and d with a negative ``U_gd`` whose magnitude falls as ``N``
    grows.

    Args:
        U_small, U_large: ``[n_sets, n, n]`` the theory's ``U`` (rows in the order of ``names``) at the
            smallest and the largest width, one per independently drawn data set.
        names: path names, including ``"g"`` and ``"d"``; names starting with ``"a"`` are adversarial.
        widths: ``(N_min, N_max)``.

    Test: one one-sided t-test over the data sets per part, Bonferroni over the parts: mean ``U_gg - u_gp``,
    ``U_dd - u_gp``, ``u_gp - U_aa`` (each adversarial path), ``-U_gd`` (all at ``N_min``) and
    ``|U_gd(N_min)| - |U_gd(N_max)|`` all ``> 0``.
    """
    small, large = as_float64_array(U_small, "U_small"), as_float64_array(U_large, "U_large")
    names = tuple(names)
    n = len(names)
    if small.shape != large.shape or small.ndim != 3 or small.shape[1:] != (n, n):
        raise ValueError(f"U_small and U_large must be [n_sets, {n}, {n}] of one shape, got {small.shape}, {large.shape}")
    if "g" not in names or "d" not in names:
        raise ValueError(f"names must include 'g' and 'd', got {names}")
    g, d = names.index("g"), names.index("d")
    n_min, n_max = (int(w) for w in widths)
    differences = {
        f"U_gg(N={n_min}) - {u_gp:g}": small[:, g, g] - u_gp,
        f"U_dd(N={n_min}) - {u_gp:g}": small[:, d, d] - u_gp,
        **{f"{u_gp:g} - U_{a}{a}(N={n_min})": u_gp - small[:, i, i] for i, a in enumerate(names) if a.startswith("a")},
        f"-U_gd(N={n_min})": -small[:, g, d],
        f"|U_gd(N={n_min})| - |U_gd(N={n_max})|": np.abs(small[:, g, d]) - np.abs(large[:, g, d]),
    }
    parts = [replicate_t(claim, stat, source=SOURCE_INTERPLAY, statistic=stat, differences=diff, level=level,
                         num_tests=len(differences)) for stat, diff in differences.items()]
    means = ", ".join(f"U_{a}{a} = {small[:, i, i].mean():.2f}" for i, a in enumerate(names))
    return all_of(claim, f"path interplay in U: g, d raised, adversarial suppressed, U_gd < 0 growing as N falls{where}",
                  source=SOURCE_INTERPLAY, parts=parts,
                  measured=(f"Mean over {small.shape[0]} data sets at N={n_min}: {means}, U_gd = {small[:, g, d].mean():.2f} "
                            f"(N={n_max}: {large[:, g, d].mean():.3f}){where}."))
