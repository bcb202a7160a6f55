"""Large HMC data sets made block by block (attnpaths.hmc.data.HMCBlocks): the same inputs, noise, hidden states,
generator advance and path features, bit for bit, as the sets held whole."""

import pickle

import numpy as np
import pytest
import torch

from attnpaths.hmc import HMCBlocks, HMCTask, four_path_network, paper_test_set, paper_train_set
from attnpaths.hmc import data as hmc_data
from attnpaths.paths import path_features


def generator(seed):
    return torch.Generator().manual_seed(seed)


# (task, P, examples per block of eta asked for): N_f T_seq = 6000 (a multiple of 16: blocks of any size), 42 and
# 6 (blocks rounded up to whole groups of 16 numbers), a set smaller than one block, and one draw of < 16 numbers
CASES = [
    (HMCTask(), 64, 5),
    (HMCTask(sigma_perp=3.0, sigma_A=0.5, sigma_B=2.0, seq_len=7, feature_width=6, p_a_plus=0.9), 66, 3),
    (HMCTask(seq_len=3, feature_width=2), 40, 1),
    (HMCTask(seq_len=2, feature_width=4), 10, 64),
    (HMCTask(seq_len=1, feature_width=2), 6, 1),
]


CASE_IDS = ["paper", "N_f_T_42", "N_f_T_6", "one_block", "under_16_numbers"]


def _sets(case, monkeypatch):
    """``(task, dense set, block-made set, the generators after each)`` from the same seed."""
    task, num_examples, block = case
    monkeypatch.setattr(hmc_data, "_DRAW_BLOCK", block)
    whole_generator, blocks_generator = generator(7), generator(7)
    whole = task.sample(num_examples, whole_generator, dense=True)
    blocks = task.sample(num_examples, blocks_generator, dense=False)
    return task, whole, blocks, whole_generator, blocks_generator


@pytest.fixture(params=CASES, ids=CASE_IDS)
def sets(request, monkeypatch):
    return _sets(request.param, monkeypatch)


def test_eta_drawn_block_by_block_is_the_one_draw(monkeypatch):
    # torch's CPU randn redraws the last 16 numbers of a draw whose size is not a multiple of 16: the blocks must
    # hold whole groups of 16 numbers, the last one at least 16
    for task, num_examples, block in CASES:
        monkeypatch.setattr(hmc_data, "_DRAW_BLOCK", block)
        bounds = hmc_data._draw_bounds(task, num_examples)
        whole_generator, blocks_generator = generator(3), generator(3)
        shape = (task.feature_width, task.seq_len)
        whole = torch.randn(num_examples, *shape, generator=whole_generator, dtype=torch.float64)
        blocks = [
            torch.randn(stop - start, *shape, generator=blocks_generator, dtype=torch.float64)
            for start, stop in zip(bounds[:-1], bounds[1:])
        ]
        assert bounds[0] == 0 and bounds[-1] == num_examples
        assert torch.equal(torch.cat(blocks), whole), (task, num_examples, bounds)  # determinism: the same draws
        assert torch.equal(whole_generator.get_state(), blocks_generator.get_state())


def test_block_made_sets_hold_the_dense_numbers(sets):
    task, whole, blocks, whole_generator, blocks_generator = sets
    assert isinstance(blocks.x, HMCBlocks) and isinstance(blocks.noise, HMCBlocks)
    assert isinstance(whole.x, torch.Tensor) and blocks.x.shape == whole.x.shape
    assert blocks.noise.shape == whole.noise.shape and blocks.num_examples == whole.num_examples
    # determinism: the same draws from the same seed through the same element-wise operations, block by block
    assert torch.equal(blocks.hidden_states, whole.hidden_states) and torch.equal(blocks.y, whole.y)
    assert torch.equal(blocks.x.dense(), whole.x) and torch.equal(blocks.noise.dense(), whole.noise)
    # the generator is left where one draw of the whole set leaves it
    assert torch.equal(blocks_generator.get_state(), whole_generator.get_state())
    # examples by index, from their blocks only; torch and numpy functions on the whole
    P = whole.num_examples
    for index in (0, -1, P // 2, slice(1, P - 1, 3), slice(P - 3, None), (slice(2, 9), slice(None, 3), 1), (3, 0)):
        assert torch.equal(blocks.x[index], whole.x[index]), index
    assert blocks.x[P:].shape == (0, *whole.x.shape[1:])
    assert torch.equal(blocks.x[torch.tensor([1, 0])], whole.x[torch.tensor([1, 0])])
    assert torch.equal(blocks.x, whole.x) and np.array_equal(np.asarray(blocks.noise), whole.noise.numpy())
    assert torch.equal(blocks.features, whole.features)
    components, expected = blocks.noise_components(), whole.noise_components()
    assert all(torch.equal(components[name], expected[name]) for name in expected)
    # rows made out of order (checkpoints filled late) and the set pickled, the same numbers again
    assert torch.equal(blocks.x.rows(P - 2, P), whole.x[P - 2 :]) and torch.equal(blocks.x.rows(0, 2), whole.x[:2])
    assert torch.equal(pickle.loads(pickle.dumps(blocks)).x.dense(), whole.x)


def test_skip_in_blocks_leaves_the_generator_as_a_sample(monkeypatch):
    monkeypatch.setattr(hmc_data, "_DRAW_BLOCK", 3)
    task = HMCTask(seq_len=7, feature_width=6)
    drawn, skipped = generator(8), generator(8)
    task.sample(66, drawn, dense=True)
    task.skip(66, skipped)  # 9 blocks of eta drawn and dropped
    assert torch.equal(drawn.get_state(), skipped.get_state())  # determinism: generator states are bytes


@pytest.mark.parametrize("batch_size", [256, 7])
@pytest.mark.parametrize("case", CASES[:-1], ids=CASE_IDS[:-1])  # the four-path network's heads need T_seq >= 2
def test_path_features_of_block_made_inputs_are_the_dense_ones(case, batch_size, monkeypatch):
    task, whole, blocks, _, _ = _sets(case, monkeypatch)
    attention = four_path_network(task).attention
    # bit for bit, with an odd batch size too: the batches are the slices of the whole tensor, at its alignment
    expected = path_features(whole.x, attention, batch_size=batch_size)
    assert torch.equal(path_features(blocks.x, attention, batch_size=batch_size), expected)


def test_paper_sets_are_blocks_above_the_dense_size(monkeypatch):
    assert isinstance(paper_test_set().x, torch.Tensor)  # the paper's sizes stay tensors
    dense = paper_train_set(64)
    monkeypatch.setattr(hmc_data, "_DENSE_BYTES", dense.x.numel() * 8 - 1)
    monkeypatch.setattr(hmc_data, "_DRAW_BLOCK", 5)
    blocks = paper_train_set(64)
    assert isinstance(blocks.x, HMCBlocks) and blocks.seed == dense.seed
    assert torch.equal(blocks.x.dense(), dense.x)  # determinism: the same draws, made block by block
    assert isinstance(paper_train_set(64, dense=True).x, torch.Tensor)
    assert isinstance(paper_train_set(2, dense=False).x, HMCBlocks)


def test_path_features_check_block_made_inputs():
    attention = four_path_network(HMCTask()).attention

    class Batches:  # inputs made batch by batch, with a wrong shape or a wrong number of examples
        def __init__(self, shape, yielded):
            self.shape, self.yielded = shape, yielded

        def batches(self, batch_size):
            yield torch.zeros(self.yielded, *self.shape[1:], dtype=torch.float64)

    with pytest.raises(ValueError, match=r"x must have shape \[B, N0, T\] = \[B, 231, T\]"):
        path_features(Batches((4, 230, 31), 4), attention)
    with pytest.raises(ValueError, match="x.batches"):
        path_features(Batches((4, 231, 31), 3), attention)
    bad = Batches((2, 231, 31), 2)
    bad.batches = lambda batch_size: iter([torch.full((2, 231, 31), float("nan"), dtype=torch.float64)])
    with pytest.raises(ValueError, match="finite"):
        path_features(bad, attention)
    blocks = HMCTask().sample(4, generator(0), dense=False).x
    with pytest.raises(ValueError, match="start, stop"):
        blocks.rows(3, 5)
