"""attnpaths: the statistical mechanics theory of attention paths (Tiberi, Mignacco, Irie, Sompolinsky, NeurIPS
2024) as a library, with the experiments of the paper and of related work built on it.

Labels such as ``eq-action`` or ``sec-head-scores`` in the docstrings are the book's equations and sections,
explained by :mod:`attnpaths.equations`: ``attnpaths.equations.describe("eq-action")`` gives a label's words, its
page and its anchor (``book/theory.md#eq-action``; in the built book
``_build/html/book/theory.html#equation-eq-action``).

The public API is importable from the package itself (``from attnpaths import solve``; see ``__all__``):

* the theory: :func:`solve` minimises the action over the order parameters (eq-action) and returns a
  :class:`TheorySolution` (``U``, the predictor (eq-predictor), the solver's certificate);
  :func:`path_features` (eq-path-features), :func:`path_kernels`, :func:`renormalized_kernel` (eq-kernel),
  :func:`gp_kernel` (eq-gp), :func:`head_scores` (eq-head-score);
* many examples: :class:`GramStatistics` accumulates the features' Gram matrix over chunks of examples, and
  :func:`solve_from_statistics` solves from it, at a cost that does not grow with their number;
* your own model: :func:`theory_from_attention` takes the per-layer attention of any attention-only model
  (``[B, H, T, T]``, as ``torch.nn.MultiheadAttention`` returns it) with its tokens ``[B, T, D]``;
  :func:`rank_heads` takes the model itself, any object with ``attention_weights(tokens)`` (the
  :class:`HeadModel` protocol); at any number of examples, :func:`attention_statistics` accumulates the Gram
  statistics of the model's attention batch by batch and :func:`theory_from_statistics` solves them; all return
  an :class:`AttentionTheory` (``head_scores``, ``head_labels``, ``pruning_order``, the predictors);
  :class:`HeadMaskEvaluator` measures a model's accuracy with heads pruned (``masked_output(tokens, mask)``);
* networks and sampling: :class:`Attention`, :class:`AttentionLayer` (fixed attention from the raw input),
  :class:`AttentionNetwork` (the Bayesian network), :class:`PosteriorSampler` (its weight posterior),
  :func:`exact_action` and :func:`sample_order_parameters` (the exact finite-width density of ``U``),
  :class:`SumHeadTransformer` and :class:`MultiheadAttentionStack` (architectures trained by gradient descent;
  both implement :class:`HeadModel`);
* claims: :class:`Verdict` and :class:`Outcome`, the statistical tests that the book's claims are.

Layout mirrors the theory: ``attention`` -> ``paths`` -> ``kernels`` -> ``action`` -> ``theory`` (solver,
predictor) -> ``head_scoring``; a trained model's heads in ``head_models``, its theory in ``frozen_attention``
(batch by batch: ``attention_batches``, over ``streaming`` and ``gram``); ``network`` -> ``sampler``; the
task-agnostic experiment layer in ``experiments``; the subjects above it: the tasks ``hmc`` (with the depth
study in ``hmc.depth``) and ``oneshot``, ``pruning``, the second paper in ``exchangeability`` and related
results in ``related``.
Exports are loaded on first use, so ``import attnpaths`` stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

_EXPORTS = {
    "solve": "attnpaths.theory",
    "TheorySolution": "attnpaths.theory",
    "CertificateWarning": "attnpaths.theory",
    "solve_from_statistics": "attnpaths.theory",
    "GramStatistics": "attnpaths.gram",
    "path_features": "attnpaths.paths",
    "all_paths": "attnpaths.paths",
    "path_kernels": "attnpaths.kernels",
    "renormalized_kernel": "attnpaths.kernels",
    "gp_kernel": "attnpaths.kernels",
    "head_scores": "attnpaths.head_scoring",
    "head_labels": "attnpaths.head_scoring",
    "pruning_order": "attnpaths.head_scoring",
    "Attention": "attnpaths.attention",
    "AttentionLayer": "attnpaths.attention",
    "AttentionNetwork": "attnpaths.network",
    "PosteriorSampler": "attnpaths.sampler",
    "PosteriorSamples": "attnpaths.sampler",
    "exact_action": "attnpaths.order_parameter_posterior",
    "sample_order_parameters": "attnpaths.order_parameter_posterior",
    "SumHeadTransformer": "attnpaths.transformer",
    "MultiheadAttentionStack": "attnpaths.attention_stack",
    "Verdict": "attnpaths.claims",
    "Outcome": "attnpaths.claims",
    "theory_from_attention": "attnpaths.frozen_attention",
    "rank_heads": "attnpaths.frozen_attention",
    "AttentionTheory": "attnpaths.frozen_attention",
    "theory_from_statistics": "attnpaths.frozen_attention",
    "attention_statistics": "attnpaths.attention_batches",
    "AUTO_TEMPERATURES": "attnpaths.frozen_attention",
    "HeadModel": "attnpaths.head_models",
    "HeadMaskEvaluator": "attnpaths.head_masks",
}
"""Public name -> the module that defines it under the same name."""

__all__ = ["__version__", *sorted(_EXPORTS)]


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'attnpaths' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:  # the exports' types for static checkers (py.typed); never executed
    from .attention import Attention, AttentionLayer
    from .attention_batches import attention_statistics
    from .attention_stack import MultiheadAttentionStack
    from .claims import Outcome, Verdict
    from .frozen_attention import (
        AUTO_TEMPERATURES,
        AttentionTheory,
        rank_heads,
        theory_from_attention,
        theory_from_statistics,
    )
    from .gram import GramStatistics
    from .head_masks import HeadMaskEvaluator
    from .head_models import HeadModel
    from .head_scoring import head_labels, head_scores, pruning_order
    from .kernels import gp_kernel, path_kernels, renormalized_kernel
    from .network import AttentionNetwork
    from .order_parameter_posterior import exact_action, sample_order_parameters
    from .paths import all_paths, path_features
    from .sampler import PosteriorSampler, PosteriorSamples
    from .theory import CertificateWarning, TheorySolution, solve, solve_from_statistics
    from .transformer import SumHeadTransformer
