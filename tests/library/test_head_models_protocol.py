"""The heads contract (attnpaths.head_models): a model of one's own, written here from torch.nn.MultiheadAttention
layers, is pruned, ranked by the practitioners' rankings and evaluated through the HeadModel protocol alone, in
its own dtype; the package's models go through the public LayeredHeadModel protocol, with the same numbers."""

import ast
import math
from pathlib import Path

import numpy as np
import pytest
import torch

import attnpaths
from attnpaths.attention_stack import MultiheadAttentionStack
from attnpaths.experiments.head_pruning import all_heads
from attnpaths.experiments.head_rankings import attention_entropy, gradient_head_importance, value_norms
from attnpaths.head_masks import HeadMaskEvaluator, pruning_mask
from attnpaths.head_models import head_model, model_heads
from attnpaths.pruning.practical import gate_fisher, iterative_gradient_order
from attnpaths.transformer import SumHeadTransformer

N0, T, B = 4, 5, 12


class OwnAttention(torch.nn.Module):
    """An embedding, two ``torch.nn.MultiheadAttention`` layers of 3 and 2 heads (width 6, no biases), mean pooling
    and a linear readout, in float32; its layers are its attribute ``heads``. It records the dtype and device of the
    tokens it is given."""

    def __init__(self, seed=0):
        super().__init__()
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            self.embed = torch.nn.Linear(N0, 6, bias=False)
            self.heads = torch.nn.ModuleList(
                torch.nn.MultiheadAttention(6, H, bias=False, batch_first=True) for H in (3, 2)
            )
            self.readout = torch.nn.Linear(6, 1, bias=False)
        self.seen = set()

    def forward(self, tokens):
        h = self.embed(tokens)
        for layer in self.heads:
            h = layer(h, h, h, need_weights=False)[0]
        return self.readout(h.mean(dim=1)).squeeze(-1)

    def attention_weights(self, tokens):
        self.seen.add((tokens.dtype, tokens.device.type))
        h, out = self.embed(tokens), []
        for layer in self.heads:
            h, weights = layer(h, h, h, need_weights=True, average_attn_weights=False)
            out.append(weights)  # [B, H, query, key]
        return out

    def masked_output(self, tokens, mask):
        """Head ``(l, h)``'s output times ``mask[l, h]`` (``[L, 3]``) or ``mask[b, l, h]`` (``[B, L, 3]``)."""
        self.seen.add((tokens.dtype, tokens.device.type))
        mask = mask if mask.ndim == 3 else mask[None]
        h = self.embed(tokens)
        for l, layer in enumerate(self.heads):
            weights = layer(h, h, h, need_weights=True, average_attn_weights=False)[1]  # [B, H, T, T]
            H, d = layer.num_heads, layer.head_dim
            values = (h @ layer.in_proj_weight[2 * layer.embed_dim :].T).unflatten(-1, (H, d)).transpose(1, 2)
            heads_out = (weights @ values) * mask[:, l, :H, None, None]  # [B, H, T, d]
            h = layer.out_proj(heads_out.transpose(1, 2).flatten(2))
        return self.readout(h.mean(dim=1)).squeeze(-1)


def own_problem(seed=1):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randn(B, T, N0, generator=g)  # float32, as the model
    targets = torch.sign(tokens[:, :, 0].mean(dim=1) + 1e-6).double()
    return OwnAttention(), tokens, targets


def test_the_heads_are_read_from_the_attention_when_the_heads_attribute_holds_modules():
    model, tokens, _ = own_problem()
    assert model_heads(model, tokens) == (3, 2)


def test_the_evaluator_hands_an_own_model_its_tokens_as_given_and_prunes_through_it():
    model, tokens, targets = own_problem()
    with torch.no_grad():  # the own model masks its heads as the module computes them (float32 rounding apart)
        torch.testing.assert_close(model.masked_output(tokens, torch.ones(2, 3)), model(tokens))
    evaluator = HeadMaskEvaluator(model, tokens, targets)
    assert evaluator.heads == (3, 2)
    pruned = [(0, 1), (1, 0)]
    with torch.no_grad():
        direct = model.masked_output(tokens, pruning_mask((3, 2), pruned).float()).double().numpy()
    # the same float32 forward pass on the same tokens and mask: equal bits
    np.testing.assert_array_equal(evaluator.outputs(pruned), direct)
    assert model.seen == {(torch.float32, "cpu")}
    assert evaluator(pruned) == np.mean(np.sign(direct) == targets.numpy())  # a count over 12 examples


def test_an_output_of_exactly_zero_counts_as_chance():
    # every head of the first layer pruned: no bias anywhere, so every output is exactly 0
    model, tokens, targets = own_problem()
    evaluator = HeadMaskEvaluator(model, tokens, targets)
    silenced = [(0, 0), (0, 1), (0, 2)]
    assert (evaluator.outputs(silenced) == 0).all()
    assert evaluator(silenced) == 0.5
    stack = MultiheadAttentionStack(N0, 8, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    layered = HeadMaskEvaluator(stack, tokens.double(), targets)  # the package's layer-by-layer path
    assert (layered.outputs([(0, 0), (0, 1)]) == 0).all()
    assert layered([(0, 0), (0, 1)]) == 0.5
    assert layered.correct([(0, 0), (0, 1)]).tolist() == [0.5] * B


def test_gradient_importance_of_an_own_model_is_its_mean_absolute_gate_gradient():
    model, tokens, targets = own_problem()
    raw = gradient_head_importance(model, tokens, targets, normalize=False, batch_size=5)
    expected = np.zeros((2, 3))
    for b in range(B):  # one example at a time, the gates of an unbatched mask
        gates = torch.ones(2, 3, requires_grad=True)
        loss = (model.masked_output(tokens[b : b + 1], gates)[0].double() - targets[b]) ** 2
        expected += torch.autograd.grad(loss, gates)[0].abs().double().numpy() / B
    expected[1, 2] = np.nan  # beyond the second layer's two heads
    # float32 forward passes on 5 examples at once against one at a time: float32 rounding
    np.testing.assert_allclose(raw, expected, rtol=1e-4, atol=1e-7)
    normalised = gradient_head_importance(model, tokens, targets)
    np.testing.assert_allclose(np.sqrt(np.nansum(normalised**2, axis=1)), 1.0)
    g, F = gate_fisher(model, tokens, targets)
    assert g.shape == (5,) and F.shape == (5, 5) and np.all(np.linalg.eigvalsh(F) > -1e-9)
    order = iterative_gradient_order(model, tokens, targets)
    assert sorted(order) == all_heads((3, 2))
    assert [l for l, _ in order[-2:]] == [0, 1]  # each layer's last head, never pruned, comes last


def test_attention_entropy_of_an_own_model_is_log_T_for_uniform_attention():
    model, tokens, _ = own_problem()
    with torch.no_grad():
        model.heads[0].in_proj_weight[:6] = 0.0  # the first layer's queries: uniform attention
    entropy = attention_entropy(model, tokens)
    assert entropy.shape == (2, 3) and np.isnan(entropy[1, 2])
    np.testing.assert_allclose(entropy[0], math.log(T), rtol=1e-6)  # float32 attention weights
    assert (entropy[1, :2] < math.log(T)).all() and (entropy[1, :2] > 0).all()


def test_value_norms_need_the_models_value_norms_method():
    model, _, _ = own_problem()
    with pytest.raises(TypeError, match=r"value_norms\(\)"):
        value_norms(model)


class ProtocolOnly:
    """A model's two HeadModel methods and nothing else: the rankings' generic path."""

    def __init__(self, view):
        self.attention_weights, self.masked_output = view.attention_weights, view.masked_output


@pytest.mark.parametrize("make", ["stack", "sum_heads"])
def test_the_fast_paths_give_the_numbers_of_the_protocol(make):
    g = torch.Generator().manual_seed(0)
    if make == "stack":
        model = MultiheadAttentionStack(N0, 6, 3, bias=True, generator=g, dtype=torch.float64)
    else:
        model = SumHeadTransformer(N0, 6, 3, 2, 3, generator=g, dtype=torch.float64)
    view, (_, tokens, targets) = head_model(model), own_problem()
    tokens = tokens.double()
    generic = ProtocolOnly(view)
    for mask in (None, pruning_mask(view.heads, [(0, 1)])):
        fast = gradient_head_importance(model, tokens, targets, mask=mask, normalize=False)
        slow = gradient_head_importance(generic, tokens, targets, mask=mask, normalize=False)
        if view.multilinear_in_mask:  # summed over attention paths: another order of the same sums
            np.testing.assert_allclose(fast, slow, rtol=1e-12, atol=1e-14)
        else:  # the same masked forward pass
            np.testing.assert_array_equal(fast, slow)
    np.testing.assert_array_equal(attention_entropy(model, tokens), attention_entropy(generic, tokens))
    pruned = [(0, 2), (1, 1)]
    np.testing.assert_allclose(
        HeadMaskEvaluator(model, tokens, targets).outputs(pruned),
        HeadMaskEvaluator(generic, tokens, targets).outputs(pruned),
        rtol=1e-12,
        atol=1e-14,
    )


def test_the_package_models_are_layered_head_models_and_their_frozen_views_live_beside_them():
    from attnpaths.head_models import HeadModel, LayeredHeadModel

    for model in (
        MultiheadAttentionStack(N0, 6, 3, generator=torch.Generator(), dtype=torch.float64),
        SumHeadTransformer(N0, 6, 3, 2, 3, generator=torch.Generator(), dtype=torch.float64),
    ):
        view = head_model(model)
        assert isinstance(view, LayeredHeadModel) and isinstance(view, HeadModel)
        assert type(view) is type(model.frozen_heads()) and type(view).__module__ == type(model).__module__
        assert not isinstance(model, LayeredHeadModel)
    assert not isinstance(OwnAttention(), LayeredHeadModel) and isinstance(OwnAttention(), HeadModel)
    # the protocols' module imports no architecture: no import cycle
    tree = ast.parse((Path(attnpaths.__file__).parent / "head_models.py").read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not imported & {"transformer", "attention_stack"}
