"""Adam training of the one-shot model (sec-oneshot-data) on freshly drawn episodes, and its saved weights.

Every step draws a new batch of training episodes (as the authors' meta-data loader does), takes one
Adam step on the mean squared error to ``y = +-1``, and every ``validate_every`` steps measures the
accuracy on a fixed set of validation episodes (disjoint classes). The weights with the best validation
accuracy are kept, as the authors keep their best checkpoint.

All randomness comes from ``TrainingConfig.seed`` through explicit generators: a CPU ``torch.Generator``
for the initial weights, and three independent ``numpy`` streams (``SeedSequence(seed).spawn(3)``) for
the label embedding, the training episodes and the validation episodes.

Every random draw stays on the CPU, so a seed gives the same initial weights and batches on a CUDA GPU
(``device="cuda"``), and the trained weights differ only by float32 rounding. The device is not a training
parameter: it is not part of the cache key, and the returned model is always on the CPU.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from dataclasses import asdict, dataclass, field, fields, replace

import numpy as np
import torch
from tqdm import tqdm

from .._validation import int_at_least, nonnegative_real, numpy_generator, positive_int, positive_real
from ..checkpoints import load_checkpoint, read_cache, save_checkpoint
from ..devices import torch_device
from ..engine import map_tasks
from ..transformer import FORWARD_REVISION, SumHeadTransformer
from .imagesets import ImageDataset
from .sequences import SequenceEncoder, Sequences, sample_sequences

FORMAT = "attnpaths.oneshot.trained/1"


@dataclass(frozen=True)
class TrainingConfig:
    """Model size and optimiser settings; the defaults are the book's ``paper`` profile, trained on two CPU cores in
    minutes: N = 64, G = 32 on 1-channel patches (N0 = 64), and 4000 steps of batch 128 (512k episodes) with lr 1e-3,
    which leaves the initial plateau of the MSE loss much sooner than the authors' 3e-4 does
    (:data:`~attnpaths.oneshot.training.AUTHORS_TRAINING`).

    ``channels`` is the number of copies of each grayscale pixel in a patch (``N0 = channels *
    patch_size^2``; see :class:`~attnpaths.oneshot.sequences.SequenceEncoder`).
    """

    width: int = 64
    qk_width: int = 32
    num_layers: int = 2
    num_heads: int = 4
    patch_size: int = 8
    channels: int = 1
    learning_rate: float = 1e-3
    weight_decay: float = 5e-5
    batch_size: int = 128
    steps: int = 4000
    validate_every: int = 500
    validation_sequences: int = 1024
    seed: int = 42

    def __post_init__(self):
        for f in fields(self):  # every integer but the seed is a count >= 1
            if f.type == "int" and f.name != "seed":
                positive_int(getattr(self, f.name), f.name)
        positive_real(self.learning_rate, "learning_rate")
        nonnegative_real(self.weight_decay, "weight_decay")
        int_at_least(self.seed, "seed", 0)


AUTHORS_STEPS_PER_EPOCH = 1028 * 1027 // 2 // 128
"""Adam steps in one of the authors' epochs (4124 steps), as their meta-training loader enumerates every pair
of the 1028 Omniglot training characters once per epoch, in full batches of 128 episodes."""

AUTHORS_TRAINING = TrainingConfig(
    width=512, qk_width=128, channels=3, learning_rate=3e-4, steps=10 * AUTHORS_STEPS_PER_EPOCH, validate_every=1000
)
"""The authors' gradient-descent run (``train_2lay_h4_g128_n512.sh``): N = 512, G = 128, 2 layers x 4 heads,
8x8 patches of 3-channel images (N0 = 192), Adam lr 3e-4, weight decay 5e-5, batch 128, 10 epochs
(:data:`AUTHORS_STEPS_PER_EPOCH` steps each), validation every 1000 steps. The one-shot chapter's ``full``
profile trains this configuration."""


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

    def summary(self) -> dict:
        """The model's sizes and its training run under the names the one-shot chapter's prose uses: ``model_N``,
        ``model_G`` (width and query/key dimension), ``heads`` (per layer), ``paths`` (heads per layer to the power of
        the layers), ``train_steps``, ``batch``, ``best_step``, ``best_val`` (the best validation accuracy, in %),
        ``patch`` (side in pixels), ``patches_per_image``, ``N0`` (token width) and ``T`` (tokens per episode).

        Returns:
            ``{name: int | float}``.
        """
        config, encoder = self.config, self.encoder
        return {
            "model_N": config.width,
            "model_G": config.qk_width,
            "heads": config.num_heads,
            "paths": config.num_heads**config.num_layers,
            "train_steps": config.steps,
            "batch": config.batch_size,
            "best_step": int(self.best_step),
            "best_val": 100 * max(self.history["validation_accuracy"]),
            "patch": int(encoder.patch_size),
            "patches_per_image": int(encoder.patches_per_image),
            "N0": int(encoder.input_width),
            "T": int(encoder.num_tokens),
        }


@torch.no_grad()
def predict(model: SumHeadTransformer, x: torch.Tensor, *, drop_heads=(), batch_size: int = 1024) -> torch.Tensor:
    """Model outputs ``[B]`` (on the CPU) for inputs ``x`` ``[B, N0, T]``, in batches, without gradients;
    the batches are computed on the model's device."""
    batch_size = positive_int(batch_size, "batch_size")
    outputs = [model(x[i : i + batch_size], drop_heads=drop_heads).cpu() for i in range(0, x.shape[0], batch_size)]
    return torch.cat(outputs) if outputs else x.new_zeros(0)


def accuracy(model: SumHeadTransformer, sequences: Sequences, *, drop_heads=()) -> float:
    """Fraction of episodes with ``sign(f(x)) == y`` (a zero output counts as wrong)."""
    f = predict(model, sequences.x, drop_heads=drop_heads)
    return float((torch.sign(f).double() == sequences.y.double()).double().mean())


def split_accuracy(trained: TrainedModel, images, num_sequences: int, seed: int) -> float:
    """:func:`accuracy` of ``trained.model`` on ``num_sequences`` episodes of the image split ``images`` (e.g.
    ``dataset.test``), encoded with the model's own encoder and drawn from ``numpy.random.default_rng(seed)``:
    models of different training seeds (each with its own label embedding) compared on one footing."""
    sequences = sample_sequences(
        images,
        positive_int(num_sequences, "num_sequences"),
        trained.encoder,
        np.random.default_rng(int_at_least(seed, "seed", 0)),
        dtype=torch.float32,
    )
    return accuracy(trained.model, sequences)


def initial_model(config: TrainingConfig, image_size: int) -> tuple[SumHeadTransformer, SequenceEncoder, tuple]:
    """The untrained model and encoder of ``config`` for images of side ``image_size``, on the CPU.

    Returns:
        ``(model, encoder, (train_rng, validation_rng))``: the model's weights drawn from
        ``torch.Generator().manual_seed(config.seed)``, the encoder's label embedding ``[3, N0]`` and the two
        episode streams from ``SeedSequence(config.seed).spawn(3)`` (see the module docstring).
    """
    encoder_rng, train_rng, validation_rng = (
        np.random.default_rng(s) for s in np.random.SeedSequence(config.seed).spawn(3)
    )
    encoder = SequenceEncoder.create(
        encoder_rng, patch_size=config.patch_size, image_size=image_size, channels=config.channels
    )
    model = SumHeadTransformer(
        encoder.input_width,
        config.width,
        config.qk_width,
        config.num_layers,
        config.num_heads,
        generator=torch.Generator().manual_seed(config.seed),
    )
    return model, encoder, (train_rng, validation_rng)


def training_step(
    model: SumHeadTransformer, optimiser: torch.optim.Optimizer, batch: Sequences, *, drop_heads=()
) -> torch.Tensor:
    """One Adam step on the mean squared error of ``model(batch.x, drop_heads=drop_heads)`` ``[B]`` to ``batch.y``
    ``[B]``, on the model's device; returns the loss before the step (a 0-d tensor on that device)."""
    device = model.readout.device
    prediction = model(batch.x.to(device), drop_heads=drop_heads)
    loss = torch.mean((prediction - batch.y.to(device=device, dtype=torch.float32)) ** 2)
    optimiser.zero_grad(set_to_none=True)
    loss.backward()
    optimiser.step()
    return loss.detach()


def make_optimiser(model: SumHeadTransformer, config: TrainingConfig) -> torch.optim.Adam:
    """Adam with the learning rate and weight decay of ``config`` (betas 0.9, 0.999)."""
    return torch.optim.Adam(model.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay)


def fit(config: TrainingConfig, dataset: ImageDataset, *, progress: bool = True, device="cpu") -> TrainedModel:
    """Train the model of ``config`` on ``dataset.train`` episodes, validating on ``dataset.validation``.

    Args:
        config: sizes and optimiser settings.
        dataset: image classes; episodes ``x`` ``[B, N0, T]`` are drawn from its splits on the CPU.
        progress: show a tqdm bar.
        device: ``"cpu"`` or ``"cuda"`` (``ValueError`` if CUDA is asked for and unavailable); where the
            forward, backward and Adam steps run. The random draws do not depend on it.

    Returns:
        a :class:`TrainedModel` holding the best-validation weights, on the CPU.
    """
    device = torch_device(device, "device")
    model, encoder, (train_rng, validation_rng) = initial_model(config, dataset.train.image_size)
    model.to(device)
    validation = sample_sequences(
        dataset.validation, config.validation_sequences, encoder, validation_rng, dtype=torch.float32
    )
    optimiser = make_optimiser(model, config)
    history = {"step": [], "train_loss": [], "validation_accuracy": []}
    best = (-1.0, 0, _cpu_state(model))
    running = []
    bar = tqdm(range(1, config.steps + 1), desc="training one-shot model", unit="step", disable=not progress)
    for step in bar:
        batch = sample_sequences(dataset.train, config.batch_size, encoder, train_rng, dtype=torch.float32)
        running.append(float(training_step(model, optimiser, batch)))
        if step % config.validate_every == 0 or step == config.steps:
            val_acc = accuracy(model, validation)
            history["step"].append(step)
            history["train_loss"].append(float(np.mean(running)))
            history["validation_accuracy"].append(val_acc)
            running = []
            if val_acc > best[0]:
                best = (val_acc, step, _cpu_state(model))
            bar.set_postfix(loss=f"{history['train_loss'][-1]:.3f}", val_acc=f"{val_acc:.3f}")
    model.to("cpu")
    model.load_state_dict(best[2])
    return TrainedModel(model, encoder, config, dict(dataset.parameters), history, best[1])


def fit_seed(seed: int, *, config: TrainingConfig, dataset: ImageDataset, device="cpu") -> TrainedModel:
    """:func:`fit` of ``config`` with its training seed replaced by ``seed`` (one task of :func:`fit_seeds`)."""
    return fit(replace(config, seed=int_at_least(seed, "seed", 0)), dataset, progress=False, device=device)


def fit_seeds(config: TrainingConfig, dataset: ImageDataset, seeds, *, device="cpu", progress: bool = True) -> list:
    """The models of ``config`` trained from each training seed of ``seeds`` (a list of :class:`TrainedModel`,
    in order), one engine task each (:func:`attnpaths.engine.map_tasks`): the spread between them is the
    variability of a trained model across seeds."""
    return map_tasks(
        fit_seed,
        [dict(seed=int_at_least(s, "seeds", 0)) for s in seeds],
        shared=dict(config=config, dataset=dataset, device=str(device)),
        description="one-shot model: training seeds",
        progress=progress,
    )


def _cpu_state(model: SumHeadTransformer) -> dict:
    """A CPU copy of the model's weights."""
    return {name: value.detach().to("cpu", copy=True) for name, value in model.state_dict().items()}


def save_trained(trained: TrainedModel, path: str) -> str:
    """Save weights, encoder, training and data parameters and history to one ``torch.save`` file
    (:func:`attnpaths.checkpoints.save_checkpoint`, which writes the file's SHA-256 beside it); returns the
    SHA-256."""
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
    return save_checkpoint(payload, path)


def load_trained(path: str, sha256: str | None = None) -> TrainedModel:
    """Load a file written by :func:`save_trained` (tensors only, ``weights_only=True``), after checking its
    SHA-256 against ``sha256`` when given, else against the checksum :func:`save_trained` wrote beside it
    (``attnpaths.json_files.DamagedFile``, a ``ValueError``, if it differs or there is none:
    :func:`attnpaths.checkpoints.load_checkpoint`)."""
    payload = load_checkpoint(path, sha256)
    if payload.get("format") != FORMAT:
        raise ValueError(
            f"path must be a file written by save_trained ({FORMAT}), got format {payload.get('format')!r}"
        )
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


def training_key(config: TrainingConfig, dataset: ImageDataset) -> str:
    """What identifies a trained model: SHA-256 of the training parameters, the data parameters, the file
    format and the revision of the model's arithmetic (:data:`~attnpaths.transformer.FORWARD_REVISION`).
    Neither the device nor the torch version enters it: trained again from the same key on another machine,
    the model is another draw of float32 rounding, which is why the book ships the weights it uses."""
    text = json.dumps(
        {
            "training": asdict(config),
            "data": dataset.parameters,
            "format": FORMAT,
            "forward_revision": FORWARD_REVISION,
        },
        sort_keys=True,
    )
    return hashlib.sha256(text.encode()).hexdigest()


def model_cache_path(config: TrainingConfig, dataset: ImageDataset, cache_dir: str) -> str:
    """File name of this machine's cache, keyed on :func:`training_key` and the torch version (not on the
    device)."""
    text = json.dumps({"key": training_key(config, dataset), "torch": torch.__version__}, sort_keys=True)
    return os.path.join(cache_dir, f"oneshot-model-{hashlib.sha256(text.encode()).hexdigest()[:16]}.pt")


def load_or_fit(
    config: TrainingConfig,
    dataset: ImageDataset,
    *,
    cache_dir: str | None = os.path.join("_build", "cache"),
    progress: bool = True,
    device="cpu",
) -> TrainedModel:
    """The model trained with ``config`` on ``dataset``: loaded from ``cache_dir`` when a file with the
    same training and data parameters exists, else trained on ``device`` (see :func:`fit`) and saved there
    (``None``: never cached). A damaged cache file (checksum missing or not matching, unreadable) is trained again
    and rewritten, with a :class:`attnpaths.checkpoints.DamagedCacheWarning`
    (:func:`attnpaths.checkpoints.read_cache`). The device is checked even when the model comes from the cache."""
    torch_device(device, "device")
    if cache_dir is None:
        return fit(config, dataset, progress=progress, device=device)
    path = model_cache_path(config, dataset, cache_dir)
    trained = read_cache(load_trained, path, "one-shot model")
    if trained is not None and trained.config == config and trained.data_parameters == dataset.parameters:
        return trained
    trained = fit(config, dataset, progress=progress, device=device)
    save_trained(trained, path)
    return trained


@dataclass
class FineTunedModel:
    """A trained model fine-tuned with a set of heads pruned (:func:`fine_tune_pruned`).

    Attributes:
        model: the fine-tuned network (float32, on the CPU); its pruned heads' weights are those of the model it
            started from, and it is meant to be evaluated with ``drop_heads=pruned``.
        pruned: the 0-based ``(layer, head)`` pairs pruned throughout the fine-tuning.
        losses: ``[steps]`` the mean squared error of each step's batch, before the step.
    """

    model: SumHeadTransformer
    pruned: tuple
    losses: list


def fine_tune_pruned(
    trained: TrainedModel,
    train_classes,
    pruned,
    *,
    steps: int,
    rng: np.random.Generator,
    batch_size: int | None = None,
    learning_rate: float | None = None,
    device="cpu",
) -> FineTunedModel:
    """Brief fine-tuning of a trained model with the heads ``pruned`` pruned (sec-oneshot-little-loss).

    The chapter's training continued for ``steps`` Adam steps (a fresh optimiser with the weight decay of
    ``trained.config``) on fresh episodes of ``train_classes`` drawn from ``rng``, every forward pass with
    ``drop_heads=pruned`` (a pruned head's output is 0 and its layer's head sum is rescaled by
    ``(H - n_pruned)^{-1/2}``). A pruned head's queries, keys and value map are set back after every step (Adam's
    weight decay would otherwise move them): the model returned, evaluated with ``drop_heads=pruned``, is a model of
    the kept heads only.

    Args:
        trained: the model to start from (it is copied, never changed) and its encoder and training settings.
        train_classes: the image classes of the training split (``dataset.train``).
        pruned: 0-based ``(layer, head)`` pairs, leaving at least one head per layer; ``()`` fine-tunes the
            unpruned model (the control of the same amount of extra training).
        steps: Adam steps (``>= 1``); rng: the source of the episodes.
        batch_size, learning_rate: those of ``trained.config`` unless given.
        device: where the steps run (``"cpu"`` or ``"cuda"``); the episodes are drawn on the CPU.

    Returns:
        a :class:`FineTunedModel`, on the CPU.
    """
    steps = positive_int(steps, "steps")
    batch_size = positive_int(trained.config.batch_size if batch_size is None else batch_size, "batch_size")
    lr = trained.config.learning_rate if learning_rate is None else positive_real(learning_rate, "learning_rate")
    numpy_generator(rng)
    model = copy.deepcopy(trained.model)
    pruned = tuple(sorted({tuple(int(v) for v in pair) for pair in pruned}))
    model.head_factors(pruned)  # the model's own check: pairs in range, a head left in every layer
    device = torch_device(device, "device")
    model.to(device)
    frozen = {
        name: {lh: getattr(model, name)[lh].detach().clone() for lh in pruned} for name in ("queries", "keys", "values")
    }
    optimiser = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=trained.config.weight_decay)
    losses = []
    for _ in range(steps):
        batch = sample_sequences(train_classes, batch_size, trained.encoder, rng, dtype=torch.float32)
        losses.append(float(training_step(model, optimiser, batch, drop_heads=pruned)))
        with torch.no_grad():
            for name, heads in frozen.items():
                for lh, value in heads.items():
                    getattr(model, name)[lh] = value
    model.to("cpu")
    return FineTunedModel(model, pruned, losses)
