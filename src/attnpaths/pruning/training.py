"""Gradient-descent training of the models whose heads the pruning chapter ranks (sec-pruning-task).

A model is trained with Adam on mini-batches of the training images, on the mean squared error of its output
to the labels ``+-1`` (the loss whose Bayesian counterpart the theory solves, eq-action). All randomness comes
from one seed through explicit generators: a CPU ``torch.Generator`` for the initial weights and a numpy
generator for the mini-batches, so a seed gives the same run on any device up to float32 rounding. The device
(``"cpu"`` or ``"cuda"``) is where the forward and backward passes run; the returned model is on the CPU.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch
from tqdm import tqdm

from .._validation import int_at_least, nonnegative_real, positive_int, positive_real, torch_device
from ..oneshot.model import SumHeadTransformer
from .digits import PatchDigits
from .models import MultiheadAttentionStack

#: ``"multihead"``: :class:`~.models.MultiheadAttentionStack` (``torch.nn.MultiheadAttention`` layers);
#: ``"sum_heads"``: :class:`~attnpaths.oneshot.model.SumHeadTransformer` (query/key on the raw input).
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
            raise ValueError(f"width must be a multiple of num_heads = {self.num_heads} for 'multihead', got "
                             f"{self.width}")

    def to_dict(self) -> dict:
        return asdict(self)


def build_model(config: ModelTraining, input_width: int, generator: torch.Generator):
    """The untrained model of ``config`` for tokens of ``input_width`` features, weights drawn from
    ``generator`` (float32, on the CPU)."""
    if config.architecture == "multihead":
        return MultiheadAttentionStack(input_width, config.width, config.num_heads, config.num_layers,
                                       generator=generator)
    return SumHeadTransformer(input_width, config.width, config.qk_width, config.num_layers, config.num_heads,
                              generator=generator)


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
