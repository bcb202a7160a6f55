"""The gradient-descent model: its attention is the theory's, its output is a sum over paths, pruning."""

import math

import pytest
import torch

from attnpaths.paths import path_features, path_index
from attnpaths.transformer import SumHeadTransformer


def make(seed=0, **kwargs):
    sizes = dict(input_width=16, width=12, qk_width=6, num_layers=2, num_heads=3)
    sizes.update(kwargs)
    return SumHeadTransformer(**sizes, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def inputs(batch=5, width=16, tokens=9, seed=1):
    return torch.randn(batch, width, tokens, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_attention_is_the_theory_attention():
    model, x = make(), inputs()
    theory = model.attention()
    assert theory.readout == "average_pooling" and theory.heads == (3, 3)
    omega = model.attention_matrices(x)
    for layer in range(2):
        torch.testing.assert_close(omega[:, layer], theory.layers[layer].matrices(x), rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(omega.sum(dim=-2), torch.ones(5, 2, 3, 9, dtype=torch.float64))


@pytest.mark.parametrize("num_layers", [1, 2, 3])
def test_output_is_the_sum_over_paths_of_path_weights_times_path_features(num_layers):
    model, x = make(num_layers=num_layers), inputs()
    xi = path_features(x, model.attention())  # [B, N0, paths]
    routed = torch.einsum("ni,bip->bpn", model.input_layer.detach(), xi)
    expected = torch.einsum("pn,bpn->b", model.path_weights(), routed) / 3 ** (num_layers / 2)
    torch.testing.assert_close(model(x).detach(), expected, rtol=1e-10, atol=1e-12)


def test_path_weights_follow_the_package_path_order():
    model = make()
    a, V = model.readout.detach(), model.values.detach()
    w = model.path_weights()
    for h1 in range(3):
        for h2 in range(3):
            torch.testing.assert_close(w[path_index((h1, h2), (3, 3))], a @ V[1, h2] @ V[0, h1])
    U = model.gd_order_parameter()
    torch.testing.assert_close(U, w @ w.T)
    assert torch.linalg.eigvalsh(U).min() > -1e-10


def test_pruning_zeroes_heads_and_rescales_the_rest():
    model, x = make(), inputs()
    pruned = model(x, drop_heads=[(0, 1), (1, 0), (1, 2)]).detach()
    manual = make()
    with torch.no_grad():
        # zeroing a head's values and rescaling the kept heads by sqrt(F / (F - n)) is the same map
        manual.values[0, 1] = 0
        manual.values[0] *= math.sqrt(3 / 2)
        manual.values[1, 0] = 0
        manual.values[1, 2] = 0
        manual.values[1] *= math.sqrt(3 / 1)
    torch.testing.assert_close(pruned, manual(x).detach(), rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(model(x, drop_heads=[]), model(x))
    assert not torch.allclose(pruned, model(x).detach())


@pytest.mark.parametrize("drop", [[(0, 0), (0, 1), (0, 2)], [(2, 0)], [(0, 3)], [(0,)]])
def test_pruning_rejects_bad_heads(drop):
    with pytest.raises(ValueError, match="drop_heads"):
        make()(inputs(), drop_heads=drop)


def test_initialisation_is_reproducible_and_bounded():
    a, b, c = make(3), make(3), make(4)
    for (name, pa), pb, pc in zip(a.named_parameters(), b.parameters(), c.parameters()):
        assert torch.equal(pa, pb) and not torch.equal(pa, pc)  # determinism: the same initialisation, same seed
        fan_in = {"input_layer": 16, "queries": 16, "keys": 16, "values": 12, "readout": 12}[name]
        assert pa.abs().max() <= 1 / math.sqrt(fan_in)
    with pytest.raises(ValueError, match="width"):
        SumHeadTransformer(width=0, generator=torch.Generator())


def test_gradients_reach_every_parameter():
    model, x = make(), inputs()
    (model(x) ** 2).mean().backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.abs().max() > 0, name
