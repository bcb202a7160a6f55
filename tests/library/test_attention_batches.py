"""The theory of a model of one's own at any number of examples (attnpaths.attention_batches and
attnpaths.frozen_attention.theory_from_statistics): batches of tokens become Gram statistics that record the model's
heads and readout, are checked as the in-memory door checks its data, and solve into the same AttentionTheory."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import assert_rounding_close

from attnpaths import GramStatistics, rank_heads, solve_from_statistics
from attnpaths.attention_batches import attention_statistics
from attnpaths.engine import start_engine
from attnpaths.frozen_attention import theory_from_statistics

T, D = 5, 6


class TwoLayers(torch.nn.Module):
    """An attention-only model written from scratch, float32: 3 heads, then 2 (not a package class)."""

    def __init__(self, heads=(3, 2)):
        super().__init__()
        torch.manual_seed(0)
        self.layers = torch.nn.ModuleList(
            torch.nn.MultiheadAttention(D, h, batch_first=True, bias=False) for h in heads
        )

    def attention_weights(self, tokens):
        attention, h = [], tokens
        for layer in self.layers:
            h, weights = layer(h, h, h, need_weights=True, average_attn_weights=False)
            attention.append(weights)
        return attention


def make_batch(k, size=60):
    g = torch.Generator().manual_seed(1000 + k)
    tokens = torch.randn(size, T, D, generator=g)
    return tokens, torch.sign(tokens[:, :, 0].mean(dim=1))


def batches(n):
    return [make_batch(k) for k in range(n)]


def test_statistics_door_gives_the_in_memory_theory():
    model = TwoLayers()
    data = batches(4)
    tokens, targets = torch.cat([b[0] for b in data]), torch.cat([b[1] for b in data])
    memory = rank_heads(model, tokens, targets, width=30, temperature=0.1)
    statistics = attention_statistics(model, data, progress=False)
    assert (statistics.heads, statistics.readout, statistics.num_examples) == ((3, 2), "average_pooling", 240)
    streamed = theory_from_statistics(statistics, width=30, temperature=0.1)
    assert streamed.features is None and (streamed.num_examples, streamed.input_width) == (240, D)
    assert streamed.certificate["converged"]
    assert_rounding_close(streamed.U, memory.U, what="U")
    assert_rounding_close(streamed.head_scores, memory.head_scores, what="head scores")
    new_tokens, _ = make_batch(99)
    attention = model.attention_weights(new_tokens)
    for predict in ("predict", "predict_gp"):
        got = getattr(streamed, predict)(attention, new_tokens)
        want = getattr(memory, predict)(attention, new_tokens)
        for a, b in zip(got, want):
            assert_rounding_close(a, b, what=predict)
    assert "P=240" in repr(streamed)


def test_batches_on_an_engine_give_the_same_bits_as_in_this_process():
    model = TwoLayers()
    here = attention_statistics(model, make_batch, num_batches=4, progress=False)
    with start_engine(workers=2, threads=True) as engine:
        threads = attention_statistics(model, make_batch, num_batches=4, engine=engine, progress=False)
    assert np.array_equal(here.gram, threads.gram) and np.array_equal(here.features_targets, threads.features_targets)
    assert (threads.heads, threads.readout) == ((3, 2), "average_pooling")


def test_zero_one_labels_are_refused_even_when_no_batch_holds_both():
    model = TwoLayers()
    zeros, ones = make_batch(0), make_batch(1)
    statistics = attention_statistics(model, [(zeros[0], torch.zeros(60)), (ones[0], torch.ones(60))], progress=False)
    assert statistics.label_values == (0.0, 1.0)
    with pytest.raises(ValueError, match="only 0 and 1"):
        theory_from_statistics(statistics, width=30, temperature=0.1)


def test_recorded_heads_are_checked_when_solving_and_merging():
    statistics = attention_statistics(TwoLayers(), batches(2), progress=False)
    with pytest.raises(ValueError, match=r"recorded heads \(3, 2\), got \(2, 3\)"):
        solve_from_statistics(statistics, heads=(2, 3), width=30, temperature=0.1)
    assert solve_from_statistics(statistics, width=30, temperature=0.1).heads == (3, 2)
    other = attention_statistics(TwoLayers(heads=(2, 3)), batches(2), progress=False)
    with pytest.raises(ValueError, match="heads and readout"):
        statistics.merge(other)
    with pytest.raises(ValueError, match="heads must be given"):
        solve_from_statistics(GramStatistics().update(torch.randn(8, 3, 2), torch.ones(8)), width=3, temperature=1)


def test_bad_batches_are_named():
    model = TwoLayers()
    good = make_batch(0)

    class Switching(TwoLayers):
        calls = 0

        def attention_weights(self, tokens):
            self.calls += 1
            attention = super().attention_weights(tokens)
            return attention if self.calls == 1 else attention[::-1]  # heads (2, 3) from the second batch on

    with pytest.raises(ValueError, match=r"batch 1: .*heads \(3, 2\) of batch 0"):
        attention_statistics(Switching(), [good, good], progress=False)
    with pytest.raises(ValueError, match="batch 1: tokens must have shape"):
        attention_statistics(model, [good, (good[0][0], good[1])], progress=False)
    with pytest.raises(ValueError, match="at least one batch"):
        attention_statistics(model, [], progress=False)
    with pytest.raises(ValueError, match="num_batches"):
        attention_statistics(model, make_batch, progress=False)
    with pytest.raises(ValueError, match="record their heads and readout"):
        theory_from_statistics(GramStatistics().update(torch.randn(8, 3, 6), torch.ones(8)), width=3, temperature=1)
