"""Hand-built attention heads of the HMC task, bilinear ("W") form (sec-model-hmc-heads, sec-model-network).

``W`` in ``R^{N0 x N0}`` acts on tokens ``x = (features [N_f]; one-hot position [T_seq + 1])`` with the KEY
on the left and the QUERY on the right, ``A_{s t} = x_s^T W x_t``; it is block diagonal,
``blockdiag(info block [N_f x N_f], position block [T_seq + 1 x T_seq + 1])`` (+ optional random cross
blocks), and the whole matrix is multiplied by the inverse softmax temperature ``beta``.

Versions:

* ``same_token``: info block ``k q^T`` with ``q = k = (v_+ - v_-) / (|v_+ - v_-|^2 / 2)`` (so ``q . v_+ = 1``,
  ``q . v_- = -1``); position block ``P[key, query] = 1`` for ``key = query + shift`` (``shift = -1``: the
  previous token) and ``P[0, query] = bos_strength`` for every non-BOS query. With the default strengths
  (1, 1) and ``beta = 10`` a query scores ``20`` on the previous token if it has the same hidden state,
  ``0`` if not, ``15`` on BOS and ``+-10`` elsewhere: it attends to the previous token when the state
  stayed, otherwise mostly to BOS (zero features). The BOS query attends uniformly.
* ``different_token``: as ``same_token`` with ``k = -q`` (attends to the previous token if it differs).
* ``uniform_attention``: info block 0, position block all ones: exactly uniform over all ``T_seq + 1``
  tokens, BOS included.
* ``blank``: both blocks 0 (exactly uniform attention) plus the random perturbations below.

Perturbations (added before the factor ``beta``): ``p_I * N(0,1) / N_f`` on the info block,
``p_P * N(0,1)`` on the position block, and, when ``p_O > 0``, ``p_I * N(0,1) / sqrt(N_f)`` on the two
feature-position cross blocks. CODE QUIRK kept from the authors' code: the cross blocks are scaled by
``p_I`` (their ``features_perturbation``), ``p_O`` only switches them on; this matters only when ``p_I``
and ``p_O`` differ (all paper runs use equal values).

Seeds. The authors call ``seed_everything(seed)`` right before building each head, then draw in this order:
``randn(N_f, N_f)`` (only if ``p_I > 0``), ``randn(T_seq + 1, T_seq + 1)`` (always, multiplied by ``p_P``),
``randn(N0, N0)`` (only if ``p_O > 0``). Each builder here draws the same calls from a fresh
``torch.Generator().manual_seed(seed)``, so the heads are bit-identical to the authors' for the same seed.
"""

from __future__ import annotations

import math
import numbers

import torch

from .._validation import finite_real, nonnegative_real, positive_real
from .data import HMCDataset, HMCTask

#: The head versions of ``generate_attention_weights_markov_optionE``.
HEAD_VERSIONS = ("same_token", "different_token", "uniform_attention", "blank")

#: Inverse softmax temperature of every head in the paper runs (``beta=10.0`` in the LOOP scripts).
PAPER_BETA = 10.0


def _as_task(task) -> HMCTask:
    if isinstance(task, HMCDataset):
        return task.task
    if isinstance(task, HMCTask):
        return task
    raise ValueError(f"task must be an HMCTask or an HMCDataset, got {type(task).__name__}")


def default_bos_strength(informative_strength: float = 1.0, position_strength: float = 1.0) -> float:
    """Score of the BOS key for the ``same_token`` / ``different_token`` heads, before ``beta``.

    A query scores ``position + informative`` on a matching previous token, ``position - informative`` on a
    non-matching one and at most ``informative`` on any other token; BOS is put halfway between the best
    non-matching score ``max(position - informative, informative)`` and the matching one. With both
    strengths 1 this is 1.5 (the authors' value).
    """
    return (
        position_strength + informative_strength + max(position_strength - informative_strength, informative_strength)
    ) / 2


def _shift(value, seq_len: int) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
        or float(value) != int(value)
        or abs(int(value)) > seq_len - 1
    ):
        raise ValueError(
            f"shift must be an integer with |shift| <= T_seq - 1 = {seq_len - 1} (key = query + shift), got {value!r}"
        )
    return int(value)


def hmc_head(
    version: str,
    task,
    *,
    beta: float = PAPER_BETA,
    shift: int = -1,
    p_I: float = 0.0,
    p_P: float = 0.0,
    p_O: float = 0.0,
    seed: int | None = None,
    informative_strength: float = 1.0,
    position_strength: float = 1.0,
    bos_strength: float | None = None,
) -> torch.Tensor:
    """One HMC attention head ``W`` (sec-model-hmc-heads), key on the left, query on the right.

    Args:
        version: one of :data:`~attnpaths.hmc.heads.HEAD_VERSIONS`.
        task: the :class:`~attnpaths.hmc.data.HMCTask` (or an :class:`~attnpaths.hmc.data.HMCDataset`),
            which fixes ``N_f``, ``T_seq``, ``v_+`` and ``v_-``.
        beta: inverse softmax temperature multiplying the whole matrix (paper: 10).
        shift: relative position of the attended key for ``same_token`` / ``different_token``
            (``key = query + shift``; paper: -1). Ignored by the other versions.
        p_I: perturbation of the feature block (and, quirk, of the cross blocks), ``>= 0``.
        p_P: perturbation of the position block, ``>= 0``.
        p_O: switches the feature-position cross perturbation on when ``> 0`` (its size is ``p_I``).
        seed: seed of the head's own ``torch.Generator`` (the authors' per-head ``seed_everything``);
            required when any perturbation is ``> 0``.
        informative_strength, position_strength: the two strengths of the matching heads (paper: 1, 1).
        bos_strength: BOS score before ``beta``; default :func:`default_bos_strength` (1.5).

    Returns:
        ``W`` of shape ``[N0, N0]``, float64, ``N0 = N_f + T_seq + 1``.
    """
    if version not in HEAD_VERSIONS:
        raise ValueError(f"version must be one of {HEAD_VERSIONS}, got {version!r}")
    task = _as_task(task)
    beta = positive_real(beta, "beta")
    p_I, p_P, p_O = (nonnegative_real(v, n) for v, n in ((p_I, "p_I"), (p_P, "p_P"), (p_O, "p_O")))
    informative_strength = positive_real(informative_strength, "informative_strength")
    position_strength = positive_real(position_strength, "position_strength")
    if bos_strength is None:
        bos_strength = default_bos_strength(informative_strength, position_strength)
    else:
        bos_strength = finite_real(bos_strength, "bos_strength")
    perturbed = p_I > 0 or p_P > 0 or p_O > 0
    if perturbed and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0):
        raise ValueError(f"seed must be an integer >= 0 when a perturbation (p_I, p_P, p_O) is > 0, got {seed!r}")
    generator = torch.Generator().manual_seed(int(seed)) if perturbed else None
    n_f, n_tok = task.feature_width, task.num_tokens
    f64 = torch.float64

    if version in ("same_token", "different_token"):
        shift = _shift(shift, task.seq_len)
        difference = task.v_plus - task.v_minus
        query_vector = difference / (torch.dot(difference, difference) / 2)
        key_vector = query_vector if version == "same_token" else -1 * query_vector
        info = torch.outer(key_vector, query_vector) * informative_strength
        position = torch.zeros(n_tok, n_tok, dtype=f64)
        # Positions 1..T_seq are the visible tokens; key k is attended by query k - shift.
        keys = torch.arange(1, n_tok)
        queries = keys - shift
        inside = (queries >= 1) & (queries < n_tok)
        position[keys[inside], queries[inside]] = position_strength
        position[0, 1:] = float(bos_strength)
    else:
        info = torch.zeros(n_f, n_f, dtype=f64)
        filler = torch.ones if version == "uniform_attention" else torch.zeros
        position = filler(n_tok, n_tok, dtype=f64)

    if p_I > 0:
        info = info + p_I * torch.randn(n_f, n_f, generator=generator, dtype=f64) / n_f
    if generator is not None:
        # Drawn even when p_P == 0 (the authors add 0 * randn): the cross perturbation comes next in the stream.
        position_noise = torch.randn(n_tok, n_tok, generator=generator, dtype=f64)
        if p_P > 0:
            position = position + p_P * position_noise
    weights = torch.block_diag(info, position)
    if p_O > 0:
        cross = torch.randn(n_f + n_tok, n_f + n_tok, generator=generator, dtype=f64) / math.sqrt(n_f)
        weights[:n_f, n_f:] += p_I * cross[:n_f, n_f:]  # quirk: scaled by p_I, not p_O
        weights[n_f:, :n_f] += p_I * cross[n_f:, :n_f]
    return weights * beta


def same_token(task, **options) -> torch.Tensor:
    """The ``same_token`` ("good") head, default ``shift = -1``; options as :func:`hmc_head`."""
    return hmc_head("same_token", task, **options)


def different_token(task, **options) -> torch.Tensor:
    """The ``different_token`` head (unused in the paper runs); options as :func:`hmc_head`."""
    return hmc_head("different_token", task, **options)


def uniform_attention(task, **options) -> torch.Tensor:
    """The exactly uniform head (all ``T_seq + 1`` tokens, BOS included); options as :func:`hmc_head`."""
    return hmc_head("uniform_attention", task, **options)


def blank(task, **options) -> torch.Tensor:
    """The ``blank`` head: zero weights (uniform attention) plus the random perturbations ``p_I``, ``p_P``,
    ``p_O``; options as :func:`hmc_head`."""
    return hmc_head("blank", task, **options)
