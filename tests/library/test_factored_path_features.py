"""``FactoredPathFeatures``: the path features (eq-path-features) with the last layer scored for its readout query
only and low-rank heads through their factors, against ``path_features`` (the same numbers up to rounding)."""

import pickle

import pytest
import torch
from helpers import assert_rounding_close, random_attention, random_inputs

from attnpaths.attention import Attention, AttentionLayer
from attnpaths.hmc import HMCTask, four_path_network
from attnpaths.hmc.data import sample_inputs
from attnpaths.paths import FactoredPathFeatures, path_features

FEATURES_RTOL = 1e-13
"""Largest difference allowed, relative to the largest feature: both compute the same sums, grouped differently
(the factored scores ``(x^T L)(R^T x)`` against ``(x^T W) x``; the readout's softmax over one column); a feature is
a weighted sum of the inputs with attention weights whose rounding moves with the scores' (scores of order 10 to
100 at the hidden-Markov-chain task's ``beta = 10``: ~1e-14 of the largest feature seen)."""


def test_the_hmc_network_features_agree_with_path_features_on_several_seeds():
    task = HMCTask()
    attention = four_path_network(task).attention
    factored = FactoredPathFeatures(attention)
    # layer 1: the same_token head (a rank-one feature block beside the position block, rank 31 of 231) is
    # factored, the perturbed blank head is full rank; layer 2: the uniform head has rank one, the blank full
    assert factored.ranks == [[31, None], [1, None]]
    for seed in (0, 1, 2):
        x, _ = sample_inputs(task, 40, torch.Generator().manual_seed(seed))
        expected = path_features(x, attention)
        found = factored(x, batch_size=16)
        assert_rounding_close(found, expected, rtol=FEATURES_RTOL, what=f"features, seed {seed}")
        # the position rows are attention weights themselves (positive, no cancellation): close entry by entry
        positions = slice(task.feature_width, None)
        assert_rounding_close(found[:, positions], expected[:, positions], scale=0.0, rtol=1e-11, what="weights")
        assert torch.equal(factored(x, batch_size=40), found)  # determinism: the batch only cuts the work


@pytest.mark.parametrize("readout", ["last_token", "first_token", "average_pooling"])
def test_random_attentions_with_low_rank_and_query_key_heads(readout):
    g = torch.Generator().manual_seed(3)
    n0, tokens = 9, 6
    dense = random_attention(g, (2, 3), n0, readout)
    # a rank-2 head (factored) beside a full one, and a query/key layer (never factored)
    low = torch.randn(n0, 2, generator=g, dtype=torch.float64) @ torch.randn(2, n0, generator=g, dtype=torch.float64)
    mixed_layer = AttentionLayer(W=torch.stack([low / n0, dense.layers[0].W[1]]))
    qk_layer = AttentionLayer(
        Q=torch.randn(3, 4, n0, generator=g, dtype=torch.float64) / n0,
        K=torch.randn(3, 4, n0, generator=g, dtype=torch.float64) / n0,
    )
    x = random_inputs(g, 11, n0, tokens)
    for attention, ranks in (
        (dense, [[None, None], [None, None, None]]),
        (Attention((mixed_layer, dense.layers[1]), readout), [[2, None], [None, None, None]]),
        (Attention((mixed_layer, qk_layer), readout), [[2, None], [None, None, None]]),
        (Attention((qk_layer, mixed_layer), readout), [[None, None, None], [2, None]]),
    ):
        factored = FactoredPathFeatures(attention)
        assert factored.ranks == ranks
        assert_rounding_close(factored(x, batch_size=4), path_features(x, attention), what=f"{readout}, {ranks}")


def test_a_zero_head_and_pickling():
    n0 = 5
    g = torch.Generator().manual_seed(0)
    layer = AttentionLayer(W=torch.stack([torch.zeros(n0, n0, dtype=torch.float64), torch.eye(n0).double()]))
    attention = Attention((layer, layer))
    factored = FactoredPathFeatures(attention)
    assert factored.ranks == [[0, None], [0, None]]  # the zero head: uniform attention from rank-0 factors
    x = random_inputs(g, 3, n0, 4)
    shipped = pickle.loads(pickle.dumps(factored))
    assert torch.equal(shipped(x), factored(x))  # determinism: the same factors, the same code
    assert_rounding_close(factored(x), path_features(x, attention))
    assert factored(x[:0]).shape == (0, n0, 4)


def test_bad_arguments_are_refused_naming_them():
    attention = random_attention(torch.Generator().manual_seed(0), (2,), 4)
    with pytest.raises(ValueError, match="attention must be an Attention"):
        FactoredPathFeatures(attention.layers[0])
    factored = FactoredPathFeatures(attention)
    with pytest.raises(ValueError, match=r"x must have shape \[B, N0, T\] = \[B, 4, T\]"):
        factored(torch.zeros(2, 5, 3))
    with pytest.raises(ValueError, match="batch_size"):
        factored(torch.zeros(2, 4, 3), batch_size=0)


@pytest.mark.parametrize("readout", ["last_token", "average_pooling"])
def test_query_key_heads_score_through_their_factors_or_their_product_whichever_is_cheaper(readout):
    """A query/key head of ``G`` rows is ``W = K^T Q / sqrt(G)``: scored through the factors ``(K^T / sqrt(G),
    Q^T)`` where ``G (2 N0 + T) < N0 (N0 + T)`` (here ``G = 2``), else through ``W`` (``G = 12 > N0 = 9``, as the
    one-shot model's ``G = 128`` at ``N0 = 192``, ``T = 48``); both equal the query/key scores up to rounding."""
    g = torch.Generator().manual_seed(5)
    n0, tokens = 9, 6

    def qk_layer(rows):
        return AttentionLayer(
            Q=torch.randn(2, rows, n0, generator=g, dtype=torch.float64) / n0,
            K=torch.randn(2, rows, n0, generator=g, dtype=torch.float64) / n0,
        )

    x = random_inputs(g, 7, n0, tokens)
    for rows, through_factors in ((2, True), (12, False)):
        attention = Attention((qk_layer(rows), qk_layer(rows)), readout)
        factored = FactoredPathFeatures(attention)
        assert factored.ranks == [[None, None], [None, None]]  # no W-form head to factor
        assert [f is not None for _, f in factored._heads(0, tokens)] == [through_factors] * 2
        assert_rounding_close(factored(x, batch_size=3), path_features(x, attention), what=f"G = {rows}")


def test_an_input_basis_scores_the_coordinates_of_inputs_in_its_span():
    """With an orthonormal ``B`` ``[N0, d]`` spanning the inputs, the heads score ``B^T x`` through ``B^T W B``
    (or ``B^T L``, ``B^T R``): the same features up to rounding, for W-form (low-rank and full) and query/key
    heads, every readout; an input off the span, or a basis that is not orthonormal, is refused."""
    g = torch.Generator().manual_seed(7)
    n0, d, tokens = 9, 5, 6
    basis, _ = torch.linalg.qr(torch.randn(n0, d, generator=g, dtype=torch.float64))
    x = torch.einsum("id,bdt->bit", basis, torch.randn(8, d, tokens, generator=g, dtype=torch.float64))
    low = torch.randn(n0, 1, generator=g, dtype=torch.float64) @ torch.randn(1, n0, generator=g, dtype=torch.float64)
    w_layer = AttentionLayer(W=torch.stack([low, torch.randn(n0, n0, generator=g, dtype=torch.float64) / n0]))
    qk_layer = AttentionLayer(
        Q=torch.randn(2, 12, n0, generator=g, dtype=torch.float64) / n0,
        K=torch.randn(2, 12, n0, generator=g, dtype=torch.float64) / n0,
    )
    for readout in ("last_token", "first_token", "average_pooling"):
        for layers in ((w_layer, qk_layer), (qk_layer, w_layer)):
            attention = Attention(layers, readout)
            factored = FactoredPathFeatures(attention, input_basis=basis)
            assert factored.ranks == FactoredPathFeatures(attention).ranks
            assert_rounding_close(factored(x, batch_size=3), path_features(x, attention), what=readout)
    factored = FactoredPathFeatures(Attention((w_layer, qk_layer)), input_basis=basis)
    off = x.clone()
    off[3, 0, 2] += 1e-3
    with pytest.raises(ValueError, match=r"x must lie in the span of input_basis"):
        factored(off)
    with pytest.raises(ValueError, match=r"input_basis must have orthonormal columns"):
        FactoredPathFeatures(Attention((w_layer,)), input_basis=2 * basis)
    with pytest.raises(ValueError, match=r"input_basis must have shape \[N0, d\] = \[9, d\]"):
        FactoredPathFeatures(Attention((w_layer,)), input_basis=basis[:4])
