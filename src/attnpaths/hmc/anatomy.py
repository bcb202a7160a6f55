"""What the heads and paths of the hidden-Markov-chain network do to a sequence.

Used by the model chapter to show, on data from the task's generator, that the same-token head attends to the
previous token exactly when the hidden state stays, and how the path features separate the two classes; and by
the HMC chapter for the numbers behind Fig. 2a and 2b (:func:`task_example`, :func:`stay_fraction`,
:func:`attention_matrices`).
"""

from __future__ import annotations

import numpy as np
import torch

from .._validation import as_float64_array, int_at_least


def strongest_keys(omega) -> np.ndarray:
    """For each query token ``t >= 2`` (the first visible token after BOS has no previous token), the key
    with the largest attention weight.

    Args:
        omega: ``[T+1, T+1]`` attention matrix of one sequence, key ``s`` down, query ``t`` across, token 0 = BOS.
    Returns:
        ``[T-1]`` integer key indices for the queries ``t = 2, ..., T``.
    """
    omega = as_float64_array(omega, "omega")
    if omega.ndim != 2 or omega.shape[0] != omega.shape[1] or omega.shape[0] < 3:
        raise ValueError(f"omega must be a square [T+1, T+1] matrix with T >= 2, got shape {omega.shape}")
    return omega[:, 2:].argmax(axis=0)


def same_token_targets(omega, hidden_states) -> dict:
    """Where the same-token head puts its largest weight on one sequence, against its hidden states.

    Args:
        omega: ``[T+1, T+1]`` attention matrix of the head on the sequence (token 0 = BOS).
        hidden_states: ``[T]`` hidden states ``s_t = +-1`` of the sequence.
    Returns:
        the counts ``"stays"``, the number of ``t`` with ``s_t = s_{t-1}``; ``"attends_previous"``, the queries
        whose largest weight is on token ``t-1``; ``"attends_bos"``, those whose largest weight is on BOS;
        ``"previous_exactly_when_stays"``, a bool.
    """
    states = np.asarray(hidden_states)
    keys = strongest_keys(omega)
    if len(states) != len(keys) + 1:
        raise ValueError(f"hidden_states must have T = {len(keys) + 1} entries for this omega, got {len(states)}")
    stay = states[1:] == states[:-1]
    to_previous = keys == np.arange(1, len(states))
    return {
        "stays": int(stay.sum()),
        "attends_previous": int(to_previous.sum()),
        "attends_bos": int((keys == 0).sum()),
        "previous_exactly_when_stays": bool(np.array_equal(to_previous, stay)),
    }


def project_path_features(features, direction) -> np.ndarray:
    """Path features projected on a unit vector along ``direction`` (zero-padded to the feature width).

    Args:
        features: ``[P, N0, paths]`` path features (eq-path-features).
        direction: ``[d]`` direction in the first ``d <= N0`` input coordinates.
    Returns:
        ``[P, paths]`` projections.
    """
    features = as_float64_array(features, "features")
    direction = as_float64_array(direction, "direction")
    if features.ndim != 3 or direction.ndim != 1 or len(direction) > features.shape[1]:
        raise ValueError(
            f"features must be [P, N0, paths] and direction [d] with d <= N0, got shapes "
            f"{features.shape} and {direction.shape}"
        )
    padded = np.concatenate([direction, np.zeros(features.shape[1] - len(direction))])
    return np.einsum("i,pin->pn", padded / np.linalg.norm(direction), features)


def class_separation(projection, y) -> np.ndarray:
    """Difference of the class means of each column of ``projection`` in pooled-standard-deviation units.

    Args:
        projection: ``[P, paths]``; y: ``[P]`` labels ``+-1``.
    Returns:
        ``[paths]``: ``(mean_{y=+1} - mean_{y=-1}) / sqrt((var_{y=+1} + var_{y=-1}) / 2)`` (unbiased variances).
    """
    projection = as_float64_array(projection, "projection")
    y = np.asarray(y)
    if projection.ndim != 2 or y.shape != projection.shape[:1]:
        raise ValueError(f"projection must be [P, paths] and y [P], got shapes {projection.shape} and {y.shape}")
    if (y > 0).sum() < 2 or (y < 0).sum() < 2:
        raise ValueError("y must hold at least two examples of each class +1 and -1")
    separation = np.empty(projection.shape[1])
    for i in range(projection.shape[1]):  # column by column: the same sums as for one path at a time
        a, b = projection[y > 0, i], projection[y < 0, i]
        separation[i] = (a.mean() - b.mean()) / np.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 2)
    return separation


def task_example(data, example: int = 0) -> dict:
    """The numbers behind Fig. 2a (sec-hmc-task): the hidden states of the first sequence of each class and one
    sequence's input split along the task's three noise directions.

    Args:
        data: an :class:`~attnpaths.hmc.data.HMCDataset` (class-sorted: ``y = +1`` for the first ``P/2``).
        example: index of the sequence whose input is returned.
    Returns:
        a dict with ``"hidden_states"`` (``[2, T]``, of the sequences 0 and ``P/2``), ``"x"`` (``[N0, T+1]``,
        the input of ``example``), ``"along_e_B"`` (``[T]``, ``e_B . x_t``: the hidden state, ``+-|v| / sqrt(2)``,
        plus ``sigma_B`` noise), ``"along_e_A"`` (``[T]``, ``e_A . x_t``) and ``"perp_rms"`` (``[T]``,
        ``|eta_perp,t| / sqrt(N_f - 2)``, the root-mean-square out-of-plane noise per direction, about
        ``sigma_perp``).
    """
    P = data.num_examples
    example = int_at_least(example, "example", 0)
    if example >= P:
        raise ValueError(f"example must be an index in [0, {P}), got {example!r}")
    task = data.task
    features = data.features[example]  # [N_f, T]
    return {
        "hidden_states": data.hidden_states[[0, P // 2]].numpy(),
        "x": data.x[example].numpy(),
        "along_e_B": torch.einsum("i,it->t", task.e_B, features).numpy(),
        "along_e_A": torch.einsum("i,it->t", task.e_A, features).numpy(),
        "perp_rms": (data.noise_components()["perp"][example].norm(dim=0) / np.sqrt(task.feature_width - 2)).numpy(),
    }


def stay_fraction(data) -> dict[str, float]:
    """Fraction of transitions ``s_{t-1} -> s_t`` in which the hidden state stays, averaged over the sequences of
    each class (sec-hmc-task: the stay probability, 0.7 for ``y = +1`` and 0.3 for ``y = -1`` in the paper).

    Args:
        data: an :class:`~attnpaths.hmc.data.HMCDataset` with sequences of both classes.
    Returns:
        ``{"y=+1": fraction, "y=-1": fraction}``: the mean over the class's sequences of each sequence's
        fraction of staying transitions.
    """
    y = data.y.numpy()
    if not ((y > 0).any() and (y < 0).any()):
        raise ValueError("data must hold sequences of both classes y = +1 and y = -1")
    states = data.hidden_states
    stays = (states[:, 1:] == states[:, :-1]).double().mean(dim=1).numpy()
    return {"y=+1": float(stays[y > 0].mean()), "y=-1": float(stays[y < 0].mean())}


def attention_matrices(network, x) -> dict[str, np.ndarray]:
    """Every head's attention matrix on one sequence (Fig. 2b, right).

    Args:
        network: a network with ``attention.layers`` (e.g. :func:`~attnpaths.hmc.networks.four_path_network`).
        x: ``[N0, T+1]`` one input sequence.
    Returns:
        ``{"layer<l>_head<h>": [T+1, T+1]}`` (key ``s`` down, query ``t`` across; ``l``, ``h`` from 1), each
        column summing to one.
    """
    x = torch.as_tensor(x)
    if x.ndim != 2:
        raise ValueError(f"x must be one sequence [N0, T+1], got shape {tuple(x.shape)}")
    return {
        f"layer{l + 1}_head{h + 1}": layer.matrices(x[None])[0, h].numpy()
        for l, layer in enumerate(network.attention.layers)
        for h in range(layer.num_heads)
    }
