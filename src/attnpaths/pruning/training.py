"""Gradient-descent training of the models whose heads the pruning chapter ranks (sec-pruning-task).

A model is trained with Adam on mini-batches of the training images, on the mean squared error of its output
to the labels ``+-1`` (the loss whose Bayesian counterpart the theory solves, eq-action). All randomness comes
from one seed through explicit generators: a CPU ``torch.Generator`` for the initial weights and a numpy
generator for the mini-batches, so a seed gives the same run on any device up to float32 rounding. The device
(``"cpu"`` or ``"cuda"``) is where the forward and backward passes run; the returned model is on the CPU.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

import numpy as np
import torch
from tqdm import tqdm

from .._validation import int_at_least, nonnegative_real, positive_int, positive_real
from ..attention_stack import MultiheadAttentionStack
from ..checkpoints import load_checkpoint, save_checkpoint
from ..devices import torch_device
from ..transformer import FORWARD_REVISION, SumHeadTransformer
from .digits import PatchDigits

#: ``"multihead"``: :class:`~attnpaths.attention_stack.MultiheadAttentionStack` (``torch.nn.MultiheadAttention`` layers);
#: ``"sum_heads"``: :class:`~attnpaths.transformer.SumHeadTransformer` (query/key on the raw input).
ARCHITECTURES = ("multihead", "sum_heads")
#: Their names in figures and tables.
ARCHITECTURE_NAMES = {"multihead": "MultiheadAttention stack", "sum_heads": "summed-head transformer"}


@dataclass(frozen=True)
class ModelTraining:
    """The model and its training run.

    Attributes:
        architecture: one of :data:`ARCHITECTURES`.
        width: ``D`` (``N`` of the summed-head model), the width of the value stream.
        qk_width: ``G``, query/key dimension of the summed-head model (the ``MultiheadAttention`` layers use
            ``D / H``).
        num_heads: ``H`` per layer; num_layers: ``L``.
        steps, batch_size, learning_rate, weight_decay: Adam on mini-batches drawn with replacement.
    """

    architecture: str = "multihead"
    width: int = 32
    qk_width: int = 8
    num_heads: int = 4
    num_layers: int = 2
    steps: int = 400
    batch_size: int = 128
    learning_rate: float = 1e-2
    weight_decay: float = 0.0

    def __post_init__(self):
        if self.architecture not in ARCHITECTURES:
            raise ValueError(f"architecture must be one of {ARCHITECTURES}, got {self.architecture!r}")
        for name in ("width", "qk_width", "num_heads", "num_layers", "steps", "batch_size"):
            positive_int(getattr(self, name), name)
        positive_real(self.learning_rate, "learning_rate")
        nonnegative_real(self.weight_decay, "weight_decay")
        if self.architecture == "multihead" and self.width % self.num_heads:
            raise ValueError(
                f"width must be a multiple of num_heads = {self.num_heads} for 'multihead', got {self.width}"
            )

    def to_dict(self) -> dict:
        """The settings as a dict (for a results file)."""
        return asdict(self)


def build_model(config: ModelTraining, input_width: int, generator: torch.Generator):
    """The untrained model of ``config`` for tokens of ``input_width`` features, weights drawn from
    ``generator`` (float32, on the CPU)."""
    if config.architecture == "multihead":
        return MultiheadAttentionStack(
            input_width, config.width, config.num_heads, config.num_layers, generator=generator
        )
    return SumHeadTransformer(
        input_width, config.width, config.qk_width, config.num_layers, config.num_heads, generator=generator
    )


def train_model(config: ModelTraining, train: PatchDigits, seed: int, *, device="cpu", progress: bool = False):
    """Train the model of ``config`` on ``train``.

    Args:
        config: the model and the optimiser's settings.
        train: training images (``x`` ``[P, N0, T]``, ``y`` ``[P]``).
        seed: a non-negative integer: ``torch.Generator().manual_seed(seed)`` draws the initial weights,
            ``numpy.random.default_rng(seed)`` the mini-batches.
        device: ``"cpu"`` or ``"cuda"`` (``ValueError`` when CUDA is asked for and unavailable).
        progress: a tqdm bar over the steps.

    Returns:
        ``(model, history)``: the trained model on the CPU (float32) and ``{"loss": [steps]}``, the mini-batch
        loss before each step.
    """
    if not isinstance(config, ModelTraining):
        raise ValueError(f"config must be a ModelTraining, got {type(config).__name__}")
    seed = int_at_least(seed, "seed", 0)
    device = torch_device(device, "device")
    model = build_model(config, train.input_width, torch.Generator().manual_seed(seed)).to(device)
    rng = np.random.default_rng(seed)
    x = train.x.to(device=device, dtype=torch.float32)
    y = train.y.to(device=device, dtype=torch.float32)
    optimiser = torch.optim.Adam(model.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay)
    losses = []
    for _ in tqdm(range(config.steps), desc="training", disable=not progress, leave=False):
        index = torch.from_numpy(rng.integers(0, len(train), config.batch_size)).to(device)
        loss = torch.mean((model(x[index]) - y[index]) ** 2)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
        losses.append(loss.detach())
    model.to("cpu")
    return model, {"loss": torch.stack(losses).cpu().numpy()}


MODELS_FORMAT = "attnpaths.pruning.models/1"
"""The ``format`` entry of a file written by :func:`save_models`."""


@dataclass(frozen=True)
class TrainedWeights:
    """What a training run leaves behind, enough to rebuild its model without training.

    Attributes:
        state: the model's ``state_dict`` (CPU float32 tensors).
        loss: ``[steps]`` the mini-batch loss before each step (float32, as computed).
    """

    state: dict
    loss: np.ndarray


def trained_weights(model, history: dict) -> TrainedWeights:
    """The :class:`TrainedWeights` of a model returned by :func:`train_model` and its history."""
    state = {name: value.detach().to("cpu", copy=True) for name, value in model.state_dict().items()}
    return TrainedWeights(state=state, loss=np.asarray(history["loss"]).copy())


def rebuild_model(config: ModelTraining, input_width: int, weights: TrainedWeights):
    """The model of ``config`` holding ``weights`` (on the CPU, float32), as :func:`train_model` returned it."""
    model = build_model(config, input_width, torch.Generator().manual_seed(0))
    model.load_state_dict(weights.state)
    return model


def models_key(config: ModelTraining, train: PatchDigits, seeds) -> str:
    """What identifies the models of a sweep: SHA-256 of the training settings, the training images' bytes, the
    training seeds, the file format and the revision of the summed-head model's arithmetic. A change of any of
    them names other models."""
    digest = hashlib.sha256()
    for tensor in (train.x, train.y):
        digest.update(np.ascontiguousarray(tensor.numpy()).tobytes())
    text = json.dumps(
        {
            "config": config.to_dict(),
            "train": digest.hexdigest(),
            "seeds": [int(s) for s in seeds],
            "input_width": int(train.input_width),
            "format": MODELS_FORMAT,
            "forward_revision": FORWARD_REVISION,
        },
        sort_keys=True,
    )
    return hashlib.sha256(text.encode()).hexdigest()


def save_models(path, config: ModelTraining, key: str, weights) -> str:
    """Write the trained weights of a sweep's seeds (a list of :class:`TrainedWeights`, in seed order) with
    their ``config`` and :func:`models_key`, and the file's SHA-256 beside it
    (:func:`attnpaths.checkpoints.save_checkpoint`); returns the SHA-256."""
    states, losses = [w.state for w in weights], [torch.from_numpy(np.asarray(w.loss)) for w in weights]
    payload = {"format": MODELS_FORMAT, "config": config.to_dict(), "key": key, "states": states, "losses": losses}
    return save_checkpoint(payload, path)


def load_models(path, key: str, sha256: str | None = None) -> list[TrainedWeights]:
    """The weights written by :func:`save_models`, after checking the file's SHA-256 (against ``sha256`` when
    given, else against the checksum :func:`save_models` wrote beside it: ``attnpaths.json_files.DamagedFile``, a
    ``ValueError``, if it differs or there is none; :func:`attnpaths.checkpoints.load_checkpoint`) and that it
    holds the models of ``key`` (``ValueError`` otherwise)."""
    payload = load_checkpoint(path, sha256, format=MODELS_FORMAT)
    if payload["key"] != key:
        raise ValueError(
            f"{path} holds the models of key {payload['key'][:12]}..., not of the requested "
            f"{key[:12]}... (other training settings, images or seeds)"
        )
    return [TrainedWeights(state=state, loss=loss.numpy()) for state, loss in zip(payload["states"], payload["losses"])]
