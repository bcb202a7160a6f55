"""The light steps of the chapter on the pretrained transformer, from precomputed arrays: the theory of one
frozen attention layer and its GP limit with the temperature chosen on the validation snippets, a ridge readout
of the sentence embedding, accuracies over resampled splits, learning curves in ``P`` and a permutation test of
rank correlation over more heads than an exact test enumerates.

The theory is solved from the Gram statistics of the training snippets' path features
(:func:`attnpaths.frozen_attention.theory_from_statistics`: the same :class:`~attnpaths.frozen_attention.AttentionTheory`
as :func:`~attnpaths.frozen_attention.theory_from_attention` gives from the attention and tokens that made the
features), so that no ``[P, P]`` matrix is formed at ``P`` of several thousands.

Labels are ``+-1``; an output of exactly 0 counts as half right (chance), as in :class:`attnpaths.head_masks.HeadMaskEvaluator`.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from scipy import stats

from ..claims import monte_carlo_draws, permutation_p_values
from ..frozen_attention import AttentionTheory, theory_from_statistics
from ..gram import GramStatistics
from ..head_scoring import head_scores
from ..theory import CertificateWarning

TEMPERATURES = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0)
"""The temperatures tried on the validation snippets (those of ``temperature="auto"``)."""
PENALTIES = (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0)
"""The ridge penalties of the readout of the sentence embedding tried on the validation snippets."""
READOUT = "average_pooling"
"""The theory reads its layer out by the mean over the tokens, as the sentence embedding does."""


def accuracy(outputs, labels) -> float:
    """The share of ``outputs`` ``[B]`` whose sign is the label ``[B]`` (``+-1``), an output of 0 counting 1/2."""
    f, y = np.asarray(outputs, dtype=np.float64), np.asarray(labels, dtype=np.float64)
    if f.shape != y.shape or f.ndim != 1 or f.size == 0:
        raise ValueError(f"outputs and labels must be [B] of the same B >= 1, got {f.shape} and {y.shape}")
    return float(np.mean(np.where(f == 0, 0.5, (np.sign(f) == y).astype(np.float64))))


def validation_score(outputs, labels) -> tuple[float, float]:
    """``(accuracy, -mean squared error)`` of ``outputs`` ``[B]`` against labels ``[B]``: the validation criterion
    (larger is better), ties in accuracy broken by the error."""
    return accuracy(outputs, labels), -float(np.mean((np.asarray(outputs) - np.asarray(labels)) ** 2))


def fit_readout(embeddings, labels, validation_embeddings, validation_labels, penalties=PENALTIES) -> dict:
    """Ridge regression of the labels on the embeddings, with an intercept, its penalty chosen on validation.

    The readout minimises ``|y - X w - b|^2 + lambda P |w|^2`` (``P`` training rows, so ``lambda`` is per example);
    the penalty of largest validation accuracy (ties: smaller squared error) is kept.

    Args:
        embeddings: ``[P, E]`` training embeddings; labels: ``[P]`` ``+-1``;
        validation_embeddings: ``[V, E]``; validation_labels: ``[V]``; penalties: the ``lambda > 0`` to try.

    Returns:
        ``{"weight": [E], "bias": float, "penalty": float, "validation": [n_penalties] accuracies}``.
    """
    X, y = np.asarray(embeddings, dtype=np.float64), np.asarray(labels, dtype=np.float64)
    Xv, yv = np.asarray(validation_embeddings, dtype=np.float64), np.asarray(validation_labels, dtype=np.float64)
    if X.ndim != 2 or y.shape != (X.shape[0],) or Xv.ndim != 2 or Xv.shape[1] != X.shape[1] or yv.shape != Xv.shape[:1]:
        raise ValueError(
            f"embeddings must be [P, E] with labels [P], validation [V, E] with labels [V]; got {X.shape}, "
            f"{y.shape}, {Xv.shape}, {yv.shape}"
        )
    if not penalties or min(penalties) <= 0:
        raise ValueError(f"penalties must be a non-empty sequence of numbers > 0, got {penalties!r}")
    mean_x, mean_y = X.mean(axis=0), y.mean()
    centred = X - mean_x
    gram, moment = centred.T @ centred, centred.T @ (y - mean_y)
    fits, scores = [], []
    for penalty in penalties:
        weight = np.linalg.solve(gram + penalty * X.shape[0] * np.eye(X.shape[1]), moment)
        bias = float(mean_y - mean_x @ weight)
        fits.append((weight, bias, float(penalty)))
        scores.append(validation_score(Xv @ weight + bias, yv))
    best = max(range(len(fits)), key=lambda i: scores[i])
    weight, bias, penalty = fits[best]
    return {"weight": weight, "bias": bias, "penalty": penalty, "validation": np.array([s[0] for s in scores])}


def gram_statistics(features, labels) -> GramStatistics:
    """The Gram statistics of one layer's path features ``[P, D, H]`` with labels ``[P]`` (``+-1``), recording
    the heads ``(H,)`` and the average-pooling readout (:class:`attnpaths.gram.GramStatistics`)."""
    x = torch.as_tensor(np.asarray(features, dtype=np.float64))
    if x.ndim != 3:
        raise ValueError(f"features must be [P, D, H] (example, input dimension, head), got {tuple(x.shape)}")
    statistics = GramStatistics(heads=(int(x.shape[2]),), readout=READOUT)
    return statistics.update(x, torch.as_tensor(np.asarray(labels, dtype=np.float64)))


def theory_on_validation(
    features, labels, validation_features, validation_labels, *, width: float, temperatures=TEMPERATURES
) -> tuple[AttentionTheory, dict]:
    """The theory of one frozen layer (path features ``[P, D, H]``, labels ``[P]``) at the temperature of largest
    validation accuracy of its finite-width predictor (ties: smaller squared error) among the certified minima.

    Returns:
        ``(theory, scan)``: the :class:`~attnpaths.frozen_attention.AttentionTheory` at that temperature (its GP
        limit beside it), and ``{"temperatures": [n_T], "validation": [n_T] accuracies (nan where the minimum is
        not certified), "action": [n_T], "U": [n_T, H, H], "raw_scores": [n_T, H]}``: every temperature's order
        parameter (certified or not) and its head scores not normalised (:func:`attnpaths.head_scoring.head_scores`: comparable between
        layers solved on the same inputs at the same temperature).
    """
    statistics = gram_statistics(features, labels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the action's choice at the grid's edge: not the one used
        grid = theory_from_statistics(statistics, width=width, temperature=list(temperatures))
    validation = torch.as_tensor(np.asarray(validation_features, dtype=np.float64))
    scores = [
        validation_score(s.predict_mean(validation), validation_labels) if s.converged else (np.nan, -np.inf)
        for s in grid.solutions
    ]
    certified = [i for i, s in enumerate(grid.solutions) if s.converged]
    if not certified:
        raise RuntimeError(f"the action's minimum is not certified at any temperature of {list(temperatures)}")
    best = max(certified, key=lambda i: scores[i])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CertificateWarning)  # checked below
        theory = theory_from_statistics(
            statistics, width=width, temperature=temperatures[best], initial=grid.solutions[best].U_layers
        )
    if not theory.solution.converged:
        raise RuntimeError(f"the action's minimum at T = {temperatures[best]:g} is not certified on a second solve")
    scan = {
        "temperatures": np.array(temperatures, dtype=np.float64),
        "validation": np.array([s[0] for s in scores]),
        "action": grid.scan["action"],
        "U": np.stack([np.asarray(s.U, dtype=np.float64) for s in grid.solutions]),
        "raw_scores": np.stack([head_scores(s.U, grid.heads, normalized=False)[0] for s in grid.solutions]),
    }
    return theory, scan


def held_out_accuracies(theory: AttentionTheory, features, labels) -> dict:
    """``{"theory", "gp"}``: the accuracy of the finite-width predictor and of the GP limit on features
    ``[B, D, H]`` with labels ``[B]``."""
    x = torch.as_tensor(np.asarray(features, dtype=np.float64))
    return {
        "theory": accuracy(theory.solution.predict_mean(x), labels),
        "gp": accuracy(theory.gp.predict_mean(x), labels),
    }


def spearman_monte_carlo(a, b, *, num_draws: int | None = None, seed: int = 0) -> dict:
    """Spearman's rank correlation of ``a`` and ``b`` (``[n]``) with Monte-Carlo permutation p-values (``n`` too
    large for the exact test of :func:`attnpaths.statistics.spearman_permutation_test`): ``b`` is paired with
    ``num_draws`` random permutations of ``a`` (default :func:`attnpaths.claims.monte_carlo_draws` at 1 %).

    Returns:
        ``{"rho", "p_greater", "p_smaller", "n", "num_draws"}`` (:func:`attnpaths.claims.permutation_p_values`).
    """
    a, b = np.asarray(a, dtype=np.float64).ravel(), np.asarray(b, dtype=np.float64).ravel()
    if a.shape != b.shape or a.size < 3 or not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError(f"a and b must hold the same number (>= 3) of finite values, got {a.size} and {b.size}")
    num_draws = monte_carlo_draws(0.01) if num_draws is None else int(num_draws)
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        raise ValueError("a and b must not be constant: their rank correlation is undefined")
    # Spearman's rho is Pearson's correlation of the average ranks; for fixed ranks it is a fixed multiple of the
    # sum of products of the centred ranks, which twice the ranks make integers: the permutations are compared in
    # exact integer arithmetic (no BLAS), so ties with the observed value count the same on every machine
    ia, ib = (np.rint(2 * stats.rankdata(v)).astype(np.int64) - (v.size + 1) for v in (a, b))
    rho = float(ia @ ib) / (np.sqrt(float(ia @ ia)) * np.sqrt(float(ib @ ib)))
    rng = np.random.default_rng(seed)
    null = np.stack([ia[rng.permutation(a.size)] for _ in range(num_draws)]) @ ib
    p_greater, p_smaller = permutation_p_values(int(ia @ ib), null)
    return {"rho": rho, "p_greater": p_greater, "p_smaller": p_smaller, "n": int(a.size), "num_draws": num_draws}


def split_accuracies(features, embeddings, labels, split, *, width: float, temperatures=TEMPERATURES,
                     penalties=PENALTIES) -> dict:  # fmt: skip
    """Test accuracies of the theory, its GP limit and the ridge readout of the embedding on one split.

    Args:
        features: ``[N, D, H]`` path features of every snippet; embeddings: ``[N, E]`` sentence embeddings;
        labels: ``[N]`` ``+-1``; split: ``[N]`` 0 (training), 1 (validation) or 2 (test).
        width, temperatures: the theory's (:func:`theory_on_validation`); penalties: the readout's.

    Returns:
        ``{"theory", "gp", "readout", "temperature", "penalty"}``.
    """
    split, labels = np.asarray(split), np.asarray(labels)
    part = [split == code for code in (0, 1, 2)]
    if any(not p.any() for p in part) or split.shape != labels.shape:
        raise ValueError(f"split must be [N] = [{labels.size}] holding 0, 1 and 2 (each at least once)")
    features, embeddings = np.asarray(features), np.asarray(embeddings)
    theory, _ = theory_on_validation(
        features[part[0]], labels[part[0]], features[part[1]], labels[part[1]], width=width, temperatures=temperatures
    )
    readout = fit_readout(embeddings[part[0]], labels[part[0]], embeddings[part[1]], labels[part[1]], penalties)
    out = held_out_accuracies(theory, features[part[2]], labels[part[2]])
    out["readout"] = accuracy(embeddings[part[2]] @ readout["weight"] + readout["bias"], labels[part[2]])
    return {**out, "temperature": theory.temperature, "penalty": readout["penalty"]}


def learning_curves(features, labels, test_features, test_labels, sizes, *, width: float, temperature: float,
                    draws: int = 3, seed: int = 0) -> np.ndarray:  # fmt: skip
    """Test accuracy of the theory and its GP limit against the number ``P`` of training snippets.

    For each of ``draws`` random orders of the training snippets (from ``seed``), the theory is solved on the
    first ``P`` of them for every ``P`` of ``sizes`` (nested sets) at the fixed ``temperature``.

    Args:
        features: ``[P_max, D, H]`` training path features; labels: ``[P_max]``; test_features: ``[B, D, H]``;
        test_labels: ``[B]``; sizes: increasing numbers of examples, at most ``P_max``.

    Returns:
        float64 ``[len(sizes), draws, 2]``: the accuracies of the theory (``[..., 0]``) and the GP limit.
    """
    features, labels = np.asarray(features), np.asarray(labels)
    sizes = [int(p) for p in sizes]
    if not sizes or sizes != sorted(set(sizes)) or sizes[0] < 1 or sizes[-1] > labels.size:
        raise ValueError(f"sizes must be increasing numbers in [1, {labels.size}], got {sizes}")
    rng = np.random.default_rng(seed)
    out = np.empty((len(sizes), int(draws), 2))
    for d in range(int(draws)):
        order = rng.permutation(labels.size)
        for i, p in enumerate(sizes):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", CertificateWarning)  # an uncertified point is kept: see the chapter
                theory = theory_from_statistics(
                    gram_statistics(features[order[:p]], labels[order[:p]]), width=width, temperature=temperature
                )
            accuracies = held_out_accuracies(theory, test_features, test_labels)
            out[i, d] = accuracies["theory"], accuracies["gp"]
    return out
