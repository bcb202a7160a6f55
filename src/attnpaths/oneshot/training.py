"""Adam training of the one-shot model (spec §3b) on freshly drawn episodes, and its saved weights.

Every step draws a new batch of training episodes (as the authors' meta-data loader does), takes one
Adam step on the mean squared error to ``y = +-1``, and every ``validate_every`` steps measures the
accuracy on a fixed set of validation episodes (disjoint classes). The weights with the best validation
accuracy are kept, as the authors keep their best checkpoint.

All randomness comes from ``TrainingConfig.seed`` through explicit generators: a ``torch.Generator``
for the initial weights, and three independent ``numpy`` streams (``SeedSequence(seed).spawn(3)``) for
the label embedding, the training episodes and the validation episodes.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from tqdm import tqdm

from .imagesets import ImageDataset
from .model import SumHeadTransformer
from .sequences import SequenceEncoder, Sequences, sample_sequences

FORMAT = "attnpaths.oneshot.trained/1"


@dataclass(frozen=True)
class TrainingConfig:
    """Model size and optimiser settings; the defaults are the book's ``paper`` profile.

    The paper's run (``train_2lay_h4_g128_n512.sh``): width N = 512, G = 128, 2 layers x 4 heads, patch
    8 on 3-channel images (N0 = 192), Adam lr 3e-4, weight decay 5e-5, batch 128, 10 epochs on a GPU.
    Here, to train on two CPU cores in minutes: N = 64, G = 32 on 1-channel patches (N0 = 64), and
    4000 steps of batch 128 (512k episodes) with lr 1e-3, which leaves the initial plateau of the MSE
    loss much sooner than 3e-4 does.
    """

    width: int = 64
    qk_width: int = 32
    num_layers: int = 2
    num_heads: int = 4
    patch_size: int = 8
    learning_rate: float = 1e-3
    weight_decay: float = 5e-5
    batch_size: int = 128
    steps: int = 4000
    validate_every: int = 500
    validation_sequences: int = 1024
    seed: int = 42

    def __post_init__(self):
        for name in ("width", "qk_width", "num_layers", "num_heads", "patch_size", "batch_size", "steps",
                     "validate_every", "validation_sequences"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate!r}")
        if not self.weight_decay >= 0:
            raise ValueError(f"weight_decay must be >= 0, got {self.weight_decay!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {self.seed!r}")


@dataclass
class TrainedModel:
    """A trained model with everything needed to use and reproduce it.

    Attributes:
        model: the network, holding the best-validation weights.
        encoder: the frozen token encoding it was trained with.
        config: training parameters.
        data_parameters: generation parameters of the image data set.
        history: ``step``, ``train_loss`` (mean over the steps since the last validation) and
            ``validation_accuracy`` lists, one entry per validation.
        best_step: step whose weights ``model`` holds.
    """

    model: SumHeadTransformer
    encoder: SequenceEncoder
    config: TrainingConfig
    data_parameters: dict
    history: dict = field(default_factory=dict)
    best_step: int = 0


@torch.no_grad()
def predict(model: SumHeadTransformer, x: torch.Tensor, *, drop_heads=(), batch_size: int = 1024) -> torch.Tensor:
    """Model outputs ``[B]`` for inputs ``x`` ``[B, N0, T]``, in batches, without gradients."""
    outputs = [model(x[i : i + batch_size], drop_heads=drop_heads) for i in range(0, x.shape[0], batch_size)]
    return torch.cat(outputs) if outputs else x.new_zeros(0)


def accuracy(model: SumHeadTransformer, sequences: Sequences, *, drop_heads=()) -> float:
    """Fraction of episodes with ``sign(f(x)) == y`` (a zero output counts as wrong)."""
    f = predict(model, sequences.x, drop_heads=drop_heads)
    return float((torch.sign(f).double() == sequences.y.double()).double().mean())


def fit(config: TrainingConfig, dataset: ImageDataset, *, progress: bool = True) -> TrainedModel:
    """Train the model of ``config`` on ``dataset.train`` episodes, validating on ``dataset.validation``.

    Returns:
        a :class:`TrainedModel` holding the best-validation weights.
    """
    encoder_rng, train_rng, validation_rng = (
        np.random.default_rng(s) for s in np.random.SeedSequence(config.seed).spawn(3)
    )
    encoder = SequenceEncoder.create(
        encoder_rng, patch_size=config.patch_size, image_size=dataset.train.image_size
    )
    model = SumHeadTransformer(
        encoder.input_width, config.width, config.qk_width, config.num_layers, config.num_heads,
        generator=torch.Generator().manual_seed(config.seed),
    )
    validation = sample_sequences(
        dataset.validation, config.validation_sequences, encoder, validation_rng, dtype=torch.float32
    )
    optimiser = torch.optim.Adam(model.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay)
    history = {"step": [], "train_loss": [], "validation_accuracy": []}
    best = (-1.0, 0, copy.deepcopy(model.state_dict()))
    running = []
    bar = tqdm(range(1, config.steps + 1), desc="training one-shot model", unit="step", disable=not progress)
    for step in bar:
        batch = sample_sequences(dataset.train, config.batch_size, encoder, train_rng, dtype=torch.float32)
        loss = torch.mean((model(batch.x) - batch.y.float()) ** 2)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
        running.append(float(loss.detach()))
        if step % config.validate_every == 0 or step == config.steps:
            val_acc = accuracy(model, validation)
            history["step"].append(step)
            history["train_loss"].append(float(np.mean(running)))
            history["validation_accuracy"].append(val_acc)
            running = []
            if val_acc > best[0]:
                best = (val_acc, step, copy.deepcopy(model.state_dict()))
            bar.set_postfix(loss=f"{history['train_loss'][-1]:.3f}", val_acc=f"{val_acc:.3f}")
    model.load_state_dict(best[2])
    return TrainedModel(model, encoder, config, dict(dataset.parameters), history, best[1])


def save_trained(trained: TrainedModel, path: str) -> None:
    """Save weights, encoder, training and data parameters and history to one ``torch.save`` file."""
    payload = {
        "format": FORMAT,
        "hyperparameters": dict(trained.model.hyperparameters),
        "state_dict": trained.model.state_dict(),
        "encoder": trained.encoder.state(),
        "training_config": asdict(trained.config),
        "data_parameters_json": json.dumps(trained.data_parameters, sort_keys=True),
        "history": trained.history,
        "best_step": trained.best_step,
    }
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", suffix=".pt")
    os.close(handle)
    try:
        torch.save(payload, tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def load_trained(path: str) -> TrainedModel:
    """Load a file written by :func:`save_trained` (tensors only, ``weights_only=True``)."""
    payload = torch.load(path, weights_only=True)
    if payload.get("format") != FORMAT:
        raise ValueError(f"path must be a file written by save_trained ({FORMAT}), got format {payload.get('format')!r}")
    state = payload["state_dict"]
    model = SumHeadTransformer(
        **payload["hyperparameters"], generator=torch.Generator().manual_seed(0), dtype=state["readout"].dtype
    )
    model.load_state_dict(state)
    return TrainedModel(
        model,
        SequenceEncoder.from_state(payload["encoder"]),
        TrainingConfig(**payload["training_config"]),
        json.loads(payload["data_parameters_json"]),
        payload["history"],
        int(payload["best_step"]),
    )


def model_cache_path(config: TrainingConfig, dataset: ImageDataset, cache_dir: str) -> str:
    """File name keyed on the training parameters, the data parameters and the torch version."""
    text = json.dumps(
        {"training": asdict(config), "data": dataset.parameters, "torch": torch.__version__, "format": FORMAT},
        sort_keys=True,
    )
    return os.path.join(cache_dir, f"oneshot-model-{hashlib.sha256(text.encode()).hexdigest()[:16]}.pt")


def load_or_fit(
    config: TrainingConfig,
    dataset: ImageDataset,
    *,
    cache_dir: str | None = os.path.join("_build", "cache"),
    progress: bool = True,
) -> TrainedModel:
    """The model trained with ``config`` on ``dataset``: loaded from ``cache_dir`` when a file with the
    same training and data parameters exists, else trained and saved there (``None``: never cached)."""
    if cache_dir is None:
        return fit(config, dataset, progress=progress)
    path = model_cache_path(config, dataset, cache_dir)
    if os.path.exists(path):
        trained = load_trained(path)
        if trained.config == config and trained.data_parameters == dataset.parameters:
            return trained
    trained = fit(config, dataset, progress=progress)
    save_trained(trained, path)
    return trained
