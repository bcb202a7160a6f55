"""What the HMC chapter reads off one data set and one network (attnpaths.hmc.anatomy): the numbers behind
Fig. 2a (a sequence along the noise directions, the stay fractions) and Fig. 2b (every head's attention)."""

import dataclasses

import numpy as np
import pytest
import torch
from helpers import assert_rounding_close

from attnpaths.hmc import anatomy
from attnpaths.hmc.data import HMCTask
from attnpaths.hmc.networks import four_path_network, two_path_network


def _data(num_examples=40, seed=3, **task):
    return HMCTask(**task).sample(num_examples, torch.Generator().manual_seed(seed))


def test_task_example_splits_a_sequence_along_the_noise_directions():
    data = _data()
    example = anatomy.task_example(data, 3)
    # exact on any CPU: copies of the data set's inputs and (integer) hidden states, and the signs of +-10 + noise
    assert np.array_equal(example["x"], data.x[3].numpy())
    assert np.array_equal(example["hidden_states"], data.hidden_states[[0, 20]].numpy())
    # along e_B a token is its hidden state times |v| / sqrt(2) = 10, plus sigma_B = 1 noise
    states = data.hidden_states[3].numpy()
    assert np.array_equal(np.sign(example["along_e_B"]), states)  # exact on any CPU: signs of +-10 + noise
    assert np.abs(example["along_e_B"] - 10 * states).max() < 5
    # along e_A every token sits at +10, whatever its state
    assert abs(example["along_e_A"].mean() - 10) < 1
    # the out-of-plane noise has root-mean-square sigma_perp per direction
    assert abs(example["perp_rms"].mean() - 1) < 0.05
    noisy = anatomy.task_example(_data(sigma_perp=5.0), 3)
    assert abs(noisy["perp_rms"].mean() - 5) < 0.25
    for bad in (-1, 40, 1.5, True):
        with pytest.raises(ValueError, match="example"):
            anatomy.task_example(data, bad)


def test_stay_fraction_is_the_stay_probability_of_each_class():
    fractions = anatomy.stay_fraction(_data(400))
    assert abs(fractions["y=+1"] - 0.7) < 0.02 and abs(fractions["y=-1"] - 0.3) < 0.02
    swapped = anatomy.stay_fraction(_data(400, p_a_plus=0.3, p_a_minus=0.3, p_b_plus=0.7, p_b_minus=0.7))
    assert swapped["y=+1"] < 0.35 < 0.65 < swapped["y=-1"]
    # by hand: one sequence that always stays, one that stays half of the time, one that never stays
    data = _data(4)
    states = torch.tensor([[1, 1, 1, 1, 1], [1, 1, -1, -1, 1], [1, -1, 1, -1, 1], [-1, 1, -1, 1, -1]])
    hand = dataclasses.replace(data, hidden_states=states)
    assert anatomy.stay_fraction(hand) == {"y=+1": 0.75, "y=-1": 0.0}
    one_class = dataclasses.replace(data, y=torch.ones(4, dtype=torch.float64))
    with pytest.raises(ValueError, match="both classes"):
        anatomy.stay_fraction(one_class)


def test_attention_matrices_name_every_head_and_are_its_attention():
    data = _data()
    network = four_path_network(data)
    matrices = anatomy.attention_matrices(network, data.x[5])
    assert list(matrices) == ["layer1_head1", "layer1_head2", "layer2_head1", "layer2_head2"]
    for l, layer in enumerate(network.attention.layers):
        full = layer.matrices(data.x[5][None])[0]
        for h in range(layer.num_heads):
            # determinism: layer.matrices of the same sequence, once per head and once for the layer
            np.testing.assert_array_equal(matrices[f"layer{l + 1}_head{h + 1}"], full[h].numpy())
    for m in matrices.values():
        assert_rounding_close(m.sum(axis=0), 1.0, what="column sums")  # each query's weights sum to one
    assert list(anatomy.attention_matrices(two_path_network(data), data.x[5])) == [
        "layer1_head1",
        "layer1_head2",
        "layer2_head1",
    ]
    with pytest.raises(ValueError, match="one sequence"):
        anatomy.attention_matrices(network, data.x[:2])
