"""HMC attention heads (sec-model-hmc-heads) and networks (sec-hmc-network)."""

import math

import pytest
import torch
from helpers import assert_rounding_close

from attnpaths import plot_style
from attnpaths.attention import AttentionLayer
from attnpaths.hmc import (
    blank,
    default_bos_strength,
    different_token,
    four_path_network,
    good_and_denoising_network,
    good_path_network,
    hmc_head,
    same_token,
    two_path_network,
    uniform_attention,
)
from attnpaths.paths import path_features

N_F, N_TOK = 200, 31


def attention_of(weights, x):
    return AttentionLayer(W=weights).matrices(x)[:, 0]  # [B, key, query]


def test_same_token_scores_match_the_construction(hmc_clean):
    """A_{st} = beta (s_s s_t [both visible] + [s = t - 1 >= 1] + 1.5 [s = 0, t >= 1]) on clean data."""
    beta = 10.0
    scores = AttentionLayer(W=same_token(hmc_clean, beta=beta)).scores(hmc_clean.x)[:, 0]
    states = torch.cat([torch.zeros(40, 1, dtype=torch.int64), hmc_clean.hidden_states], dim=1).double()
    expected = states[:, :, None] * states[:, None, :]
    expected[:, range(1, N_TOK - 1), range(2, N_TOK)] += 1.0
    expected[:, 0, 1:] = 1.5
    # x^T W x by einsum against the construction: rounding on the scale of the largest score (2 beta)
    assert_rounding_close(scores, beta * expected, what="same-token scores")


def test_same_token_attends_previous_token_if_same_state_else_bos(hmc_clean):
    states = hmc_clean.hidden_states
    same = states[:, 1:] == states[:, :-1]  # [B, T_seq - 1]: query token t = 2..T_seq
    for beta in (10.0, 30.0):
        omega = attention_of(same_token(hmc_clean, beta=beta), hmc_clean.x)
        on_previous = omega[:, range(1, N_TOK - 1), range(2, N_TOK)]
        on_bos = omega[:, 0, 2:]
        assert (on_previous[same] > 0.99).all()
        # When the state switched, BOS (15 beta/10) wins; at beta = 10 it keeps ~10% on the other same-state
        # tokens (score beta each), at beta = 30 essentially all.
        assert (omega[:, :, 2:].argmax(dim=1)[~same] == 0).all()
        assert (omega[:, :, 1].argmax(dim=1) == 0).all()  # first visible token: BOS
        if beta == 30.0:
            assert (on_bos[~same] > 0.99).all()
        else:
            assert (on_bos[~same] > 0.8).all() and (on_bos[~same] < 0.99).any()
    assert same.any() and (~same).any()
    # The BOS query sees no feature and no position weight: exactly uniform.
    assert torch.allclose(omega[:, :, 0], torch.full((40, N_TOK), 1 / N_TOK, dtype=torch.float64), rtol=1e-14)


def test_different_token_attends_previous_token_if_state_differs(hmc_clean):
    omega = attention_of(different_token(hmc_clean, beta=30.0), hmc_clean.x)
    states = hmc_clean.hidden_states
    differ = states[:, 1:] != states[:, :-1]
    assert (omega[:, range(1, N_TOK - 1), range(2, N_TOK)][differ] > 0.99).all()
    assert (omega[:, 0, 2:][~differ] > 0.99).all()


def test_uniform_head_is_exactly_uniform_on_noisy_data(hmc_train):
    omega = attention_of(uniform_attention(hmc_train), hmc_train.x)
    # exact on any CPU: every score is one product 10 * 1 * 1 of the one-hot positions plus exact zeros (the feature
    # weights are zero), in any summation order; the softmax of equal scores gives equal weights
    assert torch.equal(omega, torch.full_like(omega, omega[0, 0, 0].item()))
    assert math.isclose(omega[0, 0, 0].item(), 1 / N_TOK, rel_tol=1e-15)


def test_unperturbed_blank_head_is_zero_and_exactly_uniform(hmc_train):
    weights = blank(hmc_train)
    assert torch.equal(weights, torch.zeros(N_F + N_TOK, N_F + N_TOK, dtype=torch.float64))  # exact on any CPU: zeros
    omega = attention_of(weights, hmc_train.x)
    # exact on any CPU: zero weights give scores that are sums of exact zeros; softmax: exp(0) / 31 = 1 / 31
    assert torch.equal(omega, torch.full_like(omega, 1 / N_TOK))


def test_blank_perturbation_follows_the_authors_draw_order(hmc_train):
    g = torch.Generator().manual_seed(147)
    info = 0.5 * torch.randn(N_F, N_F, generator=g, dtype=torch.float64) / N_F
    position = 2.0 * torch.randn(N_TOK, N_TOK, generator=g, dtype=torch.float64)
    cross = torch.randn(N_F + N_TOK, N_F + N_TOK, generator=g, dtype=torch.float64) / math.sqrt(N_F)
    weights = blank(hmc_train, beta=1.0, p_I=0.5, p_P=2.0, p_O=1.0, seed=147)
    # exact on any CPU: the same draws through the same elementwise operations in the same order (each correctly
    # rounded, no sums), plus exact zeros and times beta = 1
    assert torch.equal(weights[:N_F, :N_F], info)
    assert torch.equal(weights[N_F:, N_F:], position)
    # Quirk: the cross blocks are scaled by p_I (0.5), not by p_O.
    assert torch.equal(weights[:N_F, N_F:], 0.5 * cross[:N_F, N_F:])
    assert torch.equal(weights[N_F:, :N_F], 0.5 * cross[N_F:, :N_F])
    assert torch.equal(
        weights, blank(hmc_train, beta=1.0, p_I=0.5, p_P=2.0, p_O=7.0, seed=147)
    )  # determinism: p_O unused
    no_cross = blank(
        hmc_train, beta=1.0, p_I=0.5, p_P=2.0, p_O=0.0, seed=147
    )  # below: exact on any CPU (zeros, copies)
    assert torch.equal(no_cross[:N_F, N_F:], torch.zeros(N_F, N_TOK, dtype=torch.float64))
    # Without position perturbation the position draw is still consumed before the cross draw.
    no_position = blank(hmc_train, beta=1.0, p_I=0.5, p_P=0.0, p_O=1.0, seed=147)
    assert torch.equal(no_position[N_F:, N_F:], torch.zeros(N_TOK, N_TOK, dtype=torch.float64))
    assert torch.equal(no_position[:N_F, N_F:], weights[:N_F, N_F:])


def test_beta_scales_the_whole_matrix_and_seeds_matter(hmc_train):
    one = blank(hmc_train, beta=1.0, p_I=1.0, p_P=1.0, p_O=1.0, seed=247)
    # exact on any CPU: blank multiplies by beta last, one correctly rounded product per entry (and times 1 is exact)
    assert torch.equal(blank(hmc_train, beta=10.0, p_I=1.0, p_P=1.0, p_O=1.0, seed=247), one * 10.0)
    assert torch.equal(blank(hmc_train, beta=1.0, p_I=1.0, p_P=1.0, p_O=1.0, seed=247), one)  # determinism: twice
    assert not torch.equal(blank(hmc_train, beta=1.0, p_I=1.0, p_P=1.0, p_O=1.0, seed=248), one)


def test_bos_strength_and_shift(hmc_clean):
    assert default_bos_strength() == 1.5
    # halfway between the best non-matching score max(3 - 1, 1) = 2 and the matching score 3 + 1 = 4
    assert default_bos_strength(informative_strength=1.0, position_strength=3.0) == 3.0
    weights = same_token(hmc_clean, beta=2.0, shift=1, bos_strength=0.25)
    position = weights[N_F:, N_F:]
    # exact on any CPU: entries are the written strengths times beta = 2 (0.25 * 2, 1 * 2), exact products
    assert torch.equal(position[0], torch.tensor([0.0] + [0.5] * (N_TOK - 1), dtype=torch.float64))
    # shift = +1: query t attends key t + 1, i.e. entries [t + 1, t] for t = 1..T_seq - 1.
    expected = torch.zeros(N_TOK - 1, N_TOK - 1, dtype=torch.float64)
    expected[range(1, N_TOK - 1), range(0, N_TOK - 2)] = 2.0
    assert torch.equal(position[1:, 1:], expected)  # exact on any CPU: 1 * beta = 2, written entries
    feature_scores = hmc_clean.v_plus @ weights[:N_F, :N_F] @ hmc_clean.v_plus
    assert math.isclose(feature_scores.item(), 2.0, rel_tol=1e-12)


@pytest.mark.parametrize(
    "version, kwargs, name",
    [
        ("diagonal", {}, "version"),
        ("blank", {"beta": 0.0}, "beta"),
        ("blank", {"beta": -1.0}, "beta"),
        ("blank", {"p_I": -0.1, "seed": 1}, "p_I"),
        ("blank", {"p_P": float("nan"), "seed": 1}, "p_P"),
        ("blank", {"p_O": 1.0}, "seed"),
        ("same_token", {"shift": 30}, "shift"),
        ("same_token", {"shift": -1.5}, "shift"),
        ("same_token", {"informative_strength": 0.0}, "informative_strength"),
        ("same_token", {"bos_strength": float("inf")}, "bos_strength"),
    ],
)
def test_bad_head_arguments_raise_value_error_naming_them(hmc_clean, version, kwargs, name):
    with pytest.raises(ValueError, match=name):
        hmc_head(version, hmc_clean, **kwargs)


def test_head_needs_a_task(hmc_clean):
    with pytest.raises(ValueError, match="task"):
        same_token(hmc_clean.x)


def test_four_path_network_heads_and_path_names(hmc_train):
    net = four_path_network(hmc_train)
    assert net.heads == (2, 2) and net.attention.readout == "last_token"
    assert net.head_versions == (("same_token", "blank"), ("uniform_attention", "blank"))
    assert net.head_seeds == ((127, 147), (217, 247))
    assert net.path_names == ("g", "a1", "d", "a2")
    assert [net.path_names[i] for i in net.plot_order] == ["g", "d", "a1", "a2"]
    assert [net.path_colors[i] for i in net.plot_order] == [
        plot_style.GREEN,
        plot_style.BLUE,
        plot_style.VERMILLION,
        plot_style.PURPLE,
    ]
    assert net.path_labels[2] == "denoising"
    layer1, layer2 = net.attention.layers
    # determinism: the network builds its heads with these very calls
    assert torch.equal(layer1.W[0], same_token(hmc_train, beta=10.0))
    assert torch.equal(layer1.W[1], blank(hmc_train, beta=10.0, p_I=1.0, p_P=1.0, p_O=1.0, seed=147))
    assert torch.equal(layer2.W[0], uniform_attention(hmc_train, beta=10.0))
    assert torch.equal(layer2.W[1], blank(hmc_train, beta=10.0, p_I=1.0, p_P=1.0, p_O=1.0, seed=247))


def test_good_path_feature_counts_stays_and_separates_classes(hmc_train):
    net = four_path_network(hmc_train)
    features = path_features(hmc_train.x, net.attention)
    assert features.shape == (100, 231, 4) and features.dtype == torch.float64
    good = features[:, :N_F, net.path_names.index("g")] @ hmc_train.task.e_A  # component along v_+ + v_-
    class_a, class_b = good[:50], good[50:]
    welch_t = (class_a.mean() - class_b.mean()) / (class_a.var() / 50 + class_b.var() / 50).sqrt()
    assert welch_t > 10, welch_t
    # Mechanism (sec-hmc-network): the component counts the "stay" transitions of the hidden chain.
    stays = (hmc_train.hidden_states[:, 1:] == hmc_train.hidden_states[:, :-1]).sum(1).double()
    assert torch.corrcoef(torch.stack([good, stays]))[0, 1] > 0.9


def test_reference_networks(hmc_train):
    two = two_path_network(hmc_train)
    assert two.heads == (2, 1) and two.path_names == ("g", "d") and two.plot_order == (0, 1)
    # exact on any CPU: an unperturbed blank head is zeros
    assert torch.equal(two.attention.layers[0].W[1], torch.zeros(N_F + N_TOK, N_F + N_TOK, dtype=torch.float64))
    good = good_path_network(hmc_train)
    assert good.heads == (1, 1) and good.path_names == ("g",) and good.label == "path g"
    gd = good_and_denoising_network(hmc_train)
    assert gd.heads == (2, 1) and gd.path_names == ("g", "d") and gd.label == "paths g+d"
    # determinism: the same head built by the same call in both networks
    assert torch.equal(gd.attention.layers[0].W[1], four_path_network(hmc_train).attention.layers[0].W[1])
    with pytest.raises(ValueError, match="perturbation"):
        four_path_network(hmc_train, perturbation=-1.0)


def test_head_version_labels_name_layer_head_and_version(hmc_train):
    from attnpaths.hmc.networks import head_version_labels

    assert head_version_labels(four_path_network(hmc_train)) == [
        "(1)1 (same_token)",
        "(1)2 (blank)",
        "(2)1 (uniform_attention)",
        "(2)2 (blank)",
    ]
    assert head_version_labels(two_path_network(hmc_train)) == [
        "(1)1 (same_token)",
        "(1)2 (blank)",
        "(2)1 (uniform_attention)",
    ]
