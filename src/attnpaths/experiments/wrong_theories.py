"""Theories that plausible bugs make, for the tests that must tell them from the right theory (sec-hmc-theory,
sec-oneshot-saddle).

A claim that compares the theory with the network's posterior samples is only worth its name if a theory with a
realistic mistake fails it. :func:`wrong_theories` solves the theory of a data set as written and with the
mistakes a real implementation of it could make:

* the entropy term of the action (eq-action) weighted by 0.5 or 2 (the theory at width ``N / 2`` or ``2 N``);
* the GP kernel (``U = I``) in place of the renormalised one (eq-gp);
* ``U`` of the wrong width (ten times ``N``);
* the attention matrices transposed, queries and keys swapped (:class:`TransposedAttention`).

The samples are drawn from the network as written, so each mistake must show against them:
:func:`wrong_theory_verdicts` asks claim 2's test of each. :func:`wrong_order_parameters` gives the order parameters
of the same mistakes alone (no predictor), with ``U`` near the GP limit beside them, for the claims that read ``U``
only (the one-shot chapter's transfer and pruning claims, sec-oneshot-replicates).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..paths import path_features
from ..theory import solve
from . import sampling
from .finite_width import sample_agreement
from .path_data import PathData
from .sweep import theory_sweep

NEAR_GP = "near the GP limit"
"""The key of ``U`` near the GP limit in :func:`wrong_order_parameters`."""


class TransposedAttention:
    """A network's attention with its full attention matrices transposed (every layer below the last, whose
    readout keeps one query): an index-order mistake of the kind a real implementation could make. It has the
    interface of :class:`attnpaths.attention.Attention` for :func:`attnpaths.paths.path_features`."""

    def __init__(self, attention):
        self._attention = attention

    def __getattr__(self, name):
        return getattr(self._attention, name)

    def matrices(self, x):
        """The wrapped attention's matrices, each ``[B, H, T, T]`` one transposed in its last two axes."""
        return [m.transpose(-1, -2) if m.ndim == 4 else m for m in self._attention.matrices(x)]


def transposed_features(data: PathData, inputs: dict) -> PathData:
    """``data`` with its path features recomputed under :class:`TransposedAttention` of its network (the labels and
    the network kept): the input of :func:`wrong_theories`.

    Args:
        inputs: ``{"train": x, split: x, ...}`` the inputs ``[B, N0, T]`` of the training set and of every
            evaluation split of ``data``, in the order of its examples.
    """
    missing = [s for s in ("train", *data.splits) if s not in inputs]
    if missing:
        raise ValueError(f"inputs must hold the inputs of every split of data, missing {missing}")
    attention = TransposedAttention(data.network.attention)
    return dataclasses.replace(
        data,
        features=path_features(inputs["train"], attention),
        evaluation={s: (path_features(inputs[s], attention), y) for s, (_, y) in data.evaluation.items()},
    )


def wrong_theories(
    data: PathData, transposed: PathData, width: int, temperature: float, *, split: str = "test"
) -> dict[str, tuple[np.ndarray, float]]:
    """The theory at one width and temperature as written (``"none"``) and with each plausible mistake.

    Args:
        data: the path features of the network as written.
        transposed: the same examples' path features under :class:`TransposedAttention` of the same network
            (:func:`transposed_features`).
        split: the evaluation split whose accuracy is returned.

    Returns:
        ``{mistake: (U [n, n] in figure order, accuracy on split)}``.
    """
    width = int(width)

    def theory(d, solved_width):
        curve = theory_sweep(d, [solved_width], [temperature], variances=False, progress=False)
        return curve.U_at(solved_width), float(curve.accuracy[split][0, 0])

    gp = theory_sweep(data, [width], [temperature], gp_limit=True, variances=False, progress=False)
    return {
        "none": theory(data, width),
        "entropy x 0.5": theory(data, sampling.scaled_width(width, 0.5)),
        "entropy x 2": theory(data, sampling.scaled_width(width, 2)),
        "GP kernel (U = I)": (np.eye(data.network.num_paths), float(gp.gp.accuracy[split][0, 0])),
        "U of the wrong width (10 N)": theory(data, 10 * width),
        "transposed attention": theory(transposed, width),
    }


def wrong_theory_verdicts(
    claim: str,
    point,
    theories: dict,
    *,
    margin_accuracy: float,
    margin_U: float,
    level: float = 0.01,
) -> dict:
    """Claim 2's test (:func:`attnpaths.experiments.finite_width.sample_agreement`: the samples against the theory's
    ``U`` and accuracy within margins) of one sampled width against each theory of :func:`wrong_theories`.

    Args:
        point: the :class:`~attnpaths.experiments.sampling.SampledPoint` of one width (``U`` in figure order).
        theories: ``{mistake: (U, accuracy)}`` at that width and the samples' temperature.

    Returns:
        ``{mistake: Verdict}`` (claims ``"<claim> (<mistake>)"``): the right theory (``"none"``) should not be
        contradicted, and every mistake should be.
    """
    width = int(point.width)
    return {
        mistake: sample_agreement(
            f"{claim} ({mistake})",
            points=[point],
            reference_accuracy={width: accuracy},
            reference_U={width: U},
            margin_accuracy=margin_accuracy,
            margin_U=margin_U,
            level=level,
            reference="the theory" if mistake == "none" else f"the theory with a mistake ({mistake})",
            where=f" at N={width}",
        )
        for mistake, (U, accuracy) in theories.items()
    }


def wrong_order_parameters(
    features, y, transposed, heads, width: int, temperature: float, *, near_gp_width: int | None = None
) -> dict[str, np.ndarray]:
    """The order parameter ``U`` (flat path order) of each plausible mistake of :func:`wrong_theories`, at one width
    and temperature, without a predictor: for claims that read ``U`` alone.

    Args:
        features: ``[P, N0, n]`` the training path features of the network as written; y: ``[P]`` labels.
        transposed: ``[P, N0, n]`` the same examples' path features under :class:`TransposedAttention`.
        heads: ``(H_1, ..., H_L)``; width, temperature: where the theory as written is solved.
        near_gp_width: also ``U`` at this width (e.g. ``10^4``, near the GP limit), under the key
            :data:`NEAR_GP` (one key whatever the width, so that results files of any profile share their keys);
            ``None``: not solved.

    Returns:
        ``{mistake: [n, n]}`` with the keys of :func:`wrong_theories` except ``"none"`` (the theory as written is the
        caller's), in the same order, then the near-GP key. Each solve must certify its minimiser.
    """
    width = int(width)

    def theory(f, solved_width):
        return solve(f, y, heads=heads, width=solved_width, temperature=temperature, on_failure="raise").U

    n = int(np.prod(heads))
    out = {
        "entropy x 0.5": theory(features, sampling.scaled_width(width, 0.5)),
        "entropy x 2": theory(features, sampling.scaled_width(width, 2)),
        "GP kernel (U = I)": np.eye(n),
        "U of the wrong width (10 N)": theory(features, 10 * width),
        "transposed attention": theory(transposed, width),
    }
    if near_gp_width is not None:
        out[NEAR_GP] = theory(features, int(near_gp_width))
    return out
