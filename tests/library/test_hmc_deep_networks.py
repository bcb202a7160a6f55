"""The deeper and wider networks of the depth chapter (sec-depth-networks): their heads, path names, the good
path's mechanism, and which paths carry the label."""

import numpy as np
import pytest
import torch
from helpers import assert_rounding_close

from attnpaths.attention import AttentionLayer
from attnpaths.hmc import four_path_network, same_token
from attnpaths.hmc.depth.networks import (
    HeadSpec,
    bos_closed_same_token,
    coded_network,
    path_class_separation,
    three_layer_network,
    wide_network,
)
from attnpaths.paths import path_attention, path_features


def test_bos_closed_same_token_sends_the_bos_query_to_bos_and_keeps_every_other_query(hmc_clean):
    closed = AttentionLayer(W=bos_closed_same_token(hmc_clean)).matrices(hmc_clean.x)[:, 0]  # [B, key, query]
    authors = AttentionLayer(W=same_token(hmc_clean)).matrices(hmc_clean.x)[:, 0]
    assert torch.all(closed[:, 0, 0] > 1 - 1e-5)
    # the authors' head attends uniformly from the BOS query
    torch.testing.assert_close(authors[:, :, 0], torch.full_like(authors[:, :, 0], 1 / hmc_clean.task.num_tokens))
    # two weight matrices that differ only where the BOS query's one-hot position reads them: another matrix, so
    # another call of the same einsum and softmax, equal up to rounding (bit for bit here; not promised elsewhere)
    assert_rounding_close(closed[:, :, 1:], authors[:, :, 1:], what="attention of the visible queries")
    with pytest.raises(ValueError, match="bos_self_strength"):
        bos_closed_same_token(hmc_clean, bos_self_strength=0.0)


def test_three_layer_network_names_its_paths_by_head_codes(hmc_train):
    net = three_layer_network(hmc_train)
    assert net.heads == (2, 2, 2) and net.num_paths == 8
    assert net.path_names == ("ssu", "ssb", "sdu", "sdb", "bsu", "bsb", "bdu", "bdb")
    assert net.good_path == "ssu" and net.plot_names == net.path_names
    assert net.neighbours("ssu") == {"layer 1": ["bsu"], "layer 2": ["sdu"], "layer 3": ["ssb"]}
    assert [s.version for s in net.path_heads("bdb")] == ["blank", "different_token", "blank"]
    assert net.head_versions[1] == ("same_token", "different_token")
    with pytest.raises(ValueError, match="path must be one of"):
        net.path_heads("xyz")


def test_the_good_path_counts_runs_of_three_equal_states(hmc_clean):
    """Without noise and with hard heads (beta = 40), the weight that path ssu routes to visible tokens is
    (R + S / 31) / 31: R runs of three equal states (two stays in a row) through the two gates, and S stays
    through the layer-2 gate's uniform BOS query (the readout's 1/31 share of it). At the paper's beta = 10 a
    gate that falls back to BOS leaks a few per cent to tokens of the query's state, and the weight stays
    nearly proportional to R."""
    states = hmc_clean.hidden_states
    stays = (states[:, 1:] == states[:, :-1]).to(torch.float64)
    runs = (stays[:, 1:] * stays[:, :-1]).sum(dim=1)
    tokens = hmc_clean.task.num_tokens
    expected = (runs + stays.sum(dim=1) / tokens) / tokens

    def visible_weight(net):
        omega = path_attention(net.attention.matrices(hmc_clean.x))[:, net.path_names.index("ssu")]  # [B, T+1]
        return omega[:, 1:].sum(dim=1)

    # the closed form holds up to the leak of the hard heads (1.7e-8 seen at beta = 40), far above rounding: an
    # absolute bound on weights in [0, 1]
    hard = visible_weight(three_layer_network(hmc_clean, beta=40.0))
    assert hard.shape == expected.shape and float((hard - expected).abs().max()) < 1e-6, (hard - expected).abs().max()
    paper_beta = visible_weight(three_layer_network(hmc_clean))
    assert np.corrcoef(paper_beta.numpy(), runs.numpy())[0, 1] > 0.98
    # the authors' layer-1 head adds the sequence mean whenever the layer-2 gate falls back to BOS: a weight
    # near 1 on every sequence, which hardly varies with the runs any more
    leaky = visible_weight(three_layer_network(hmc_clean, bos_to_bos=False))
    assert torch.all(leaky > paper_beta)
    assert leaky.std() < paper_beta.std() / 3


def test_only_the_good_path_carries_the_label_and_it_needs_all_three_heads(hmc_train):
    net = three_layer_network(hmc_train)
    separation = dict(
        zip(net.path_names, path_class_separation(path_features(hmc_train.x, net.attention), hmc_train.y, hmc_train))
    )
    assert separation["ssu"] > 3.0
    assert max(abs(v) for k, v in separation.items() if k != "ssu") < separation["ssu"] / 3
    for names in net.neighbours("ssu").values():
        assert all(abs(separation[n]) < 1.0 for n in names)
    # with the authors' layer-1 head the path loses the label
    leaky = three_layer_network(hmc_train, bos_to_bos=False)
    leaky_separation = path_class_separation(path_features(hmc_train.x, leaky.attention), hmc_train.y, hmc_train)
    assert leaky_separation[leaky.path_names.index("ssu")] < separation["ssu"] / 2


@pytest.mark.cross_machine
def test_wide_network_contains_the_four_path_network(hmc_train):
    wide, four = wide_network(hmc_train), four_path_network(hmc_train)
    assert wide.heads == (4, 2) and wide.path_names == ("su", "sb", "bu", "bb", "du", "db", "uu", "ub")
    xw, x4 = path_features(hmc_train.x[:20], wide.attention), path_features(hmc_train.x[:20], four.attention)
    # The same paths, computed by batched products of another shape (4 heads in layer 1 against 2): BLAS blocks a
    # product by its shape and by the CPU's vector width, so the two may sum in another order and differ in the
    # last bits (5e-16 seen on an AVX-512 machine). Rounding on the scale of the largest feature separates that
    # from another path (differences of order 1).
    for wide_name, four_name in (("su", "g"), ("sb", "a1"), ("bu", "d"), ("bb", "a2")):
        assert_rounding_close(
            xw[..., wide.path_names.index(wide_name)],
            x4[..., four.path_names.index(four_name)],
            scale=float(x4.abs().max()),
            what=f"wide path {wide_name} against {four_name}",
        )
    separation = dict(
        zip(wide.path_names, path_class_separation(path_features(hmc_train.x, wide.attention), hmc_train.y, hmc_train))
    )
    assert separation["su"] > 3.0 and separation["du"] < -3.0  # stays and switches: mirror images
    assert abs(separation["uu"]) < 0.5


@pytest.mark.parametrize(
    "layers, good, match",
    [
        ([[HeadSpec("s", "same_token", "x"), HeadSpec("s", "blank", "y")]], "s", "distinct codes"),
        ([[HeadSpec("s", "same_token", "x")]], "q", "good_path must be one of"),
        ([[]], "s", "non-empty"),
    ],
)
def test_bad_network_arguments_raise_value_errors_naming_them(hmc_clean, layers, good, match):
    with pytest.raises(ValueError, match=match):
        coded_network(hmc_clean, "n", "n", layers, good)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(code="ss", version="blank", name="x"), "code"),
        (dict(code="s", version="other", name="x"), "version"),
        (dict(code="b", version="blank", name="x", bos_to_bos=True), "bos_to_bos"),
    ],
)
def test_bad_head_specs_raise_value_errors_naming_them(kwargs, match):
    with pytest.raises(ValueError, match=match):
        HeadSpec(**kwargs)


def test_depth_figures_draw_every_path_and_every_bar(hmc_train, plt):
    from attnpaths.hmc.depth import plots as depth_plots

    net = three_layer_network(hmc_train)
    fig = depth_plots.plot_coded_network(net)
    lines = fig.axes[0].get_lines()
    assert len(lines) == net.num_paths
    assert [line.get_color() for line in lines].count(depth_plots.GOOD_COLOR) == 1
    plt.close(fig)
    fig = depth_plots.plot_path_separation(net.path_names, {"a": np.arange(8.0), "b": -np.arange(8.0)}, good="ssu")
    assert len(fig.axes[0].patches) == 16
    assert fig.axes[0].get_xticklabels()[0].get_color() == depth_plots.GOOD_COLOR
    plt.close(fig)
    fig = depth_plots.plot_order_parameters([np.eye(8), 2 * np.eye(8)], ["x", "y"], net.path_names)
    assert len(fig.axes) == 4  # two heat maps, two colour bars
    plt.close(fig)
