"""The HMC data set ``markov_optionE`` (sec-hmc-task): statistics, layout, determinism, the authors' RNG order."""

import math

import pytest
import torch
from helpers import Z_MAX, assert_rounding_close

from attnpaths.hmc import HMCTask, markov_optionE, paper_test_set, paper_train_set
from attnpaths.hmc.data import TEST_SEED, TRAIN_SEED

# Statistical checks accept deviations up to Z_MAX standard errors, while the smallest error they guard
# against (e.g. swapping the two classes' probabilities, or a noise strength on the wrong direction) is tens
# of standard errors away.


def generator(seed):
    return torch.Generator().manual_seed(seed)


@pytest.fixture(scope="module")
def test_set():
    return paper_test_set()


@pytest.fixture(scope="module")
def distinct_noise_set():
    # Three different noise strengths, so that a strength applied along the wrong direction is detected.
    return markov_optionE(200, generator(1), sigma_A=0.5, sigma_B=2.0, sigma_perp=3.0)


def test_shapes_dtypes_and_class_sorting(test_set):
    d = test_set
    assert d.x.shape == (1000, 231, 31) and d.x.dtype == torch.float64
    assert d.hidden_states.shape == (1000, 30) and d.hidden_states.dtype == torch.int64
    assert set(d.hidden_states.unique().tolist()) == {-1, 1}
    assert d.y.dtype == torch.float64
    assert torch.equal(d.y, torch.cat([torch.ones(500), -torch.ones(500)]).double())  # exact on any CPU: +-1 labels
    assert d.task.input_width == 231 and d.task.num_tokens == 31 and d.seed == TEST_SEED


def test_bos_is_zero_and_positions_are_one_hot(test_set):
    d = test_set
    # exact on any CPU: the BOS column is written as zeros and the positions as a one-hot code
    assert torch.equal(d.x[:, :200, 0], torch.zeros(1000, 200, dtype=torch.float64))
    assert torch.equal(d.x[:, 200:, :], torch.eye(31, dtype=torch.float64).expand(1000, 31, 31))


def test_features_are_state_vectors_plus_noise(test_set):
    d = test_set
    v_plus, v_minus = d.v_plus, d.v_minus
    assert torch.allclose(v_plus @ v_plus, torch.tensor(200.0, dtype=torch.float64), rtol=1e-14)
    assert torch.allclose(v_minus @ v_minus, torch.tensor(200.0, dtype=torch.float64), rtol=1e-14)
    # exact on any CPU: v_+ and v_- have disjoint supports, so every product in the dot product is an exact zero
    assert v_plus @ v_minus == 0 and (v_plus[:100] > 0).all() and (v_plus[100:] == 0).all()
    clean = d.clean_features
    # exact on any CPU: the clean features are copies of v_+ or v_-, and the features are the one correctly
    # rounded elementwise sum clean + noise that the data set was built from
    assert torch.equal(clean[:, :, 4], torch.where(d.hidden_states[:, 4:5] == 1, v_plus, v_minus))
    assert torch.equal(d.features, clean + d.noise)


def test_stay_frequencies(test_set):
    d = test_set
    previous, current = d.hidden_states[:, :-1], d.hidden_states[:, 1:]
    stays = previous == current
    expected = [
        (slice(0, 500), 1, 0.7),
        (slice(0, 500), -1, 0.7),
        (slice(500, 1000), 1, 0.3),
        (slice(500, 1000), -1, 0.3),
    ]
    for rows, state, p in expected:
        from_state = previous[rows] == state
        n = int(from_state.sum())
        frequency = stays[rows][from_state].double().mean().item()
        # Given the number n of transitions out of `state`, the stays are Binomial(n, p).
        assert abs(frequency - p) < Z_MAX * math.sqrt(p * (1 - p) / n), (rows, state, frequency, n)


def _sd_of_plus_fraction(p_stay, seq_len, num_chains):
    # A symmetric two-state chain started in its stationary 50/50 law has corr(s_t, s_t+k) = lam^k with
    # lam = 2 p_stay - 1, so Var(sum_t s_t) = T + 2 sum_k (T - k) lam^k; the fraction of +1 states of
    # num_chains independent chains is (1 + mean s)/2.
    lam = 2 * p_stay - 1
    var_sum = seq_len + 2 * sum((seq_len - k) * lam**k for k in range(1, seq_len))
    return math.sqrt(var_sum / num_chains) / (2 * seq_len)


def test_states_are_stationary_50_50(test_set):
    d = test_set
    for rows, p_stay in ((slice(0, 500), 0.7), (slice(500, 1000), 0.3)):
        plus_fraction = (d.hidden_states[rows] == 1).double().mean().item()
        assert abs(plus_fraction - 0.5) < Z_MAX * _sd_of_plus_fraction(p_stay, 30, 500), plus_fraction
    first_plus = (d.hidden_states[:, 0] == 1).double().mean().item()
    assert abs(first_plus - 0.5) < Z_MAX * math.sqrt(0.25 / 1000)


def test_noise_variance_per_direction(distinct_noise_set):
    d = distinct_noise_set
    task = d.task
    samples = d.noise.permute(0, 2, 1).reshape(-1, task.feature_width)  # [P * T_seq, N_f]
    n = samples.shape[0]
    relative_tolerance = Z_MAX * math.sqrt(2 / n)  # sd of a variance estimate of n Gaussian samples (mean 0)
    along_a, along_b = samples @ task.e_A, samples @ task.e_B
    assert abs((along_a**2).mean().item() / 0.5**2 - 1) < relative_tolerance
    assert abs((along_b**2).mean().item() / 2.0**2 - 1) < relative_tolerance
    assert abs((along_a * along_b).mean().item()) < Z_MAX * 0.5 * 2.0 / math.sqrt(n)
    # Individual out-of-plane directions: differences of two coordinates within the same half.
    for i, j in ((0, 1), (10, 57), (100, 101), (150, 199)):
        direction = torch.zeros(task.feature_width, dtype=torch.float64)
        direction[i], direction[j] = 2**-0.5, -(2**-0.5)
        assert abs(direction @ task.v_plus) < 1e-12 and abs(direction @ task.v_minus) < 1e-12
        assert abs(((samples @ direction) ** 2).mean().item() / 3.0**2 - 1) < relative_tolerance, (i, j)
    # All N_f - 2 out-of-plane directions together.
    out_of_plane = samples - along_a[:, None] * task.e_A - along_b[:, None] * task.e_B
    per_direction = (out_of_plane**2).sum(1).mean().item() / (task.feature_width - 2)
    assert abs(per_direction / 3.0**2 - 1) < Z_MAX * math.sqrt(2 / (n * (task.feature_width - 2)))


def test_noise_components_split_the_noise(distinct_noise_set):
    d = distinct_noise_set
    parts = d.noise_components()
    assert torch.allclose(parts["A"] + parts["B"] + parts["perp"], d.noise, atol=1e-12)
    assert torch.allclose(torch.einsum("i,bit->bt", d.task.e_B, parts["A"]), torch.zeros(()).double(), atol=1e-12)
    assert torch.allclose(torch.einsum("i,bit->bt", d.task.e_A, parts["perp"]), torch.zeros(()).double(), atol=1e-12)
    assert torch.allclose(torch.einsum("i,bit->bt", d.task.e_B, parts["perp"]), torch.zeros(()).double(), atol=1e-12)


def test_same_seed_same_data_different_seed_different_data():
    first, again = markov_optionE(20, generator(4)), markov_optionE(20, generator(4))
    # determinism: the same sampler from the same seed, twice
    assert torch.equal(first.x, again.x) and torch.equal(first.hidden_states, again.hidden_states)
    other = markov_optionE(20, generator(5))
    assert not torch.equal(first.x, other.x) and not torch.equal(first.hidden_states, other.hidden_states)
    assert torch.equal(paper_train_set().x, paper_train_set().x)  # determinism: the same set drawn twice


def test_skip_advances_the_generator_exactly_past_one_set():
    task = HMCTask(seq_len=7, feature_width=4)
    for size in (2, 20, 40):  # small and large draws (torch fills short and long normal draws differently)
        drawn, skipped = generator(8), generator(8)
        task.sample(size, drawn)
        task.skip(size, skipped)
        # determinism: generator states are bytes; then the same sampler from the same state
        assert torch.equal(drawn.get_state(), skipped.get_state())
        assert torch.equal(task.sample(6, drawn).x, task.sample(6, skipped).x)
    with pytest.raises(ValueError, match="num_examples"):
        task.skip(3, generator(8))


def _sequential_reference(num_examples, seq_len, feature_width, probabilities, rand, randn):
    """The authors' call order, one uniform per decision: per example (class a first) s_1 (+1 iff u >= 0.5),
    then seq_len - 1 transitions (stay iff u < p_state); finally one normal draw [P, N_f, T_seq]."""
    states = []
    for example in range(num_examples):
        p_plus, p_minus = probabilities[0] if example < num_examples // 2 else probabilities[1]
        state = 1 if rand().item() >= 0.5 else -1
        chain = [state]
        for _ in range(seq_len - 1):
            stay_probability = p_plus if state == 1 else p_minus
            state = state if rand().item() < stay_probability else -state
            chain.append(state)
        states.append(chain)
    return torch.tensor(states), randn(num_examples, feature_width, seq_len)


def test_rng_order_matches_sequential_reference():
    # Asymmetric probabilities, so that mixing up plus/minus, the classes or the comparisons changes states.
    probabilities = ((0.9, 0.2), (0.4, 0.65))
    d = markov_optionE(
        6, generator(11), p_a_plus=0.9, p_a_minus=0.2, p_b_plus=0.4, p_b_minus=0.65, seq_len=7, feature_width=4
    )
    g = generator(11)
    states, eta = _sequential_reference(
        6,
        7,
        4,
        probabilities,
        lambda: torch.rand(1, generator=g, dtype=torch.float64),
        lambda *shape: torch.randn(*shape, generator=g, dtype=torch.float64),
    )
    assert torch.equal(d.hidden_states, states)  # exact on any CPU: integer states
    # With all strengths 1 the noise is eta up to the rounding of the projections (on the unit scale of eta).
    assert_rounding_close(d.noise, eta, scale=1.0, what="noise")


def test_paper_sets_reproduce_the_authors_global_seeding():
    # The authors call seed_everything(27) / (59) and draw from torch's global generator in float64.
    for make, seed, size in ((paper_train_set, TRAIN_SEED, 100), (lambda: paper_test_set(20), TEST_SEED, 20)):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            states, eta = _sequential_reference(
                size,
                30,
                200,
                ((0.7, 0.7), (0.3, 0.3)),
                lambda: torch.rand(1, dtype=torch.float64),
                lambda *shape: torch.randn(*shape, dtype=torch.float64),
            )
        d = make()
        assert torch.equal(d.hidden_states, states)  # exact on any CPU: integer states
        assert_rounding_close(d.noise, eta, scale=1.0, what="noise")  # as above: eta up to the projections' rounding


def test_resample_keeps_parameters_and_vectors():
    train = paper_train_set(sigma_perp=5.0)
    test = train.resample(40, generator(TEST_SEED))
    assert test.task == train.task and test.task.sigma_perp == 5.0
    # exact on any CPU: v_+ and v_- are built from the task's parameters alone (a constant and its flip)
    assert torch.equal(test.v_plus, train.v_plus) and torch.equal(test.v_minus, train.v_minus)
    # determinism: the same task samples from the same seed
    assert torch.equal(test.x, paper_test_set(40, sigma_perp=5.0).x)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"num_examples": 7}, "num_examples"),
        ({"num_examples": 0}, "num_examples"),
        ({"p_a_plus": 1.5}, "p_a_plus"),
        ({"p_b_minus": -0.1}, "p_b_minus"),
        ({"feature_width": 201}, "feature_width"),
        ({"seq_len": 0}, "seq_len"),
        ({"sigma_perp": -1.0}, "sigma_perp"),
        ({"sigma_A": float("nan")}, "sigma_A"),
        ({"sigma_B": float("inf")}, "sigma_B"),
        ({"generator": 27}, "generator"),
        ({"dense": "yes"}, "dense"),
    ],
)
def test_bad_arguments_raise_value_error_naming_them(kwargs, name):
    arguments = {"num_examples": 4, "generator": generator(0), **kwargs}
    with pytest.raises(ValueError, match=name):
        markov_optionE(**arguments)


def test_task_rejects_bad_fields():
    with pytest.raises(ValueError, match="feature_width"):
        HMCTask(feature_width=3)


# --------------------------------------------------------------------------------------------------------
# the fast construction against the whole-array reference


def _whole_array_reference(task, num_examples, g):
    """The construction the data set had before it was done block by block: the same draws, every step on the
    whole ``[P, N_f, T_seq]`` arrays, the projection coefficients by ``einsum``, ``x`` by concatenation."""
    from attnpaths.hmc.data import _hidden_states, _random_draws

    coins, eta = _random_draws(task, num_examples, g)
    states = _hidden_states(task, coins)
    clean = torch.where((states == 1).unsqueeze(1), task.v_plus[None, :, None], task.v_minus[None, :, None])
    along_a = task.e_A[None, :, None] * torch.einsum("b,cbd->cd", task.e_A, eta)[:, None, :]
    along_b = task.e_B[None, :, None] * torch.einsum("b,cbd->cd", task.e_B, eta)[:, None, :]
    noise = task.sigma_A * along_a + task.sigma_B * along_b + task.sigma_perp * (eta - along_a - along_b)
    bos = torch.zeros(num_examples, task.feature_width, 1, dtype=torch.float64)
    positions = torch.eye(task.num_tokens, dtype=torch.float64).expand(num_examples, -1, -1)
    x = torch.cat([torch.cat([bos, clean + noise], dim=2), positions], dim=1)
    return x, noise, states, eta


REFERENCE_CASES = [
    (HMCTask(), 100, 0),
    (HMCTask(), 38, 5),  # not a whole number of blocks
    (HMCTask(sigma_perp=5.0), 2, 27),  # fewer examples than a block
    (HMCTask(sigma_perp=3.0, sigma_A=0.5, sigma_B=2.0, seq_len=7, feature_width=12, p_a_plus=0.9), 50, 11),
]


@pytest.mark.parametrize("task, num_examples, seed", REFERENCE_CASES)
def test_the_blockwise_construction_gives_the_whole_array_numbers(task, num_examples, seed):
    from attnpaths.hmc.data import _coefficients, _hidden_states, _inputs, _random_draws, sample_inputs

    x, noise, states, eta = _whole_array_reference(task, num_examples, generator(seed))
    data = task.sample(num_examples, generator(seed))
    assert torch.equal(data.hidden_states, states)  # exact on any CPU: integer states from the same coins
    # the coefficients e^T eta: a batched product instead of the einsum's single one (the same bits seen on the
    # Intel CPU and MKL here; another BLAS kernel may round differently)
    for e in (task.e_A, task.e_B):
        assert_rounding_close(_coefficients(e, eta), torch.einsum("b,cbd->cd", e, eta), what="e^T eta")
    assert_rounding_close(data.x, x, what="x")
    assert_rounding_close(data.noise, noise, what="noise")
    # Given the coefficients, every element gets the same IEEE operations in the same order as the whole-array
    # expressions, block by block: exact on any CPU.
    coins, eta = _random_draws(task, num_examples, generator(seed))
    blockwise_states = _hidden_states(task, coins)
    blockwise_x, blockwise_noise = _inputs(task, blockwise_states, eta)
    along = {}
    for name, e in (("a", task.e_A), ("b", task.e_B)):
        along[name] = e[None, :, None] * _coefficients(e, eta)[:, None, :]
    expected_noise = (
        task.sigma_A * along["a"] + task.sigma_B * along["b"] + task.sigma_perp * (eta - along["a"] - along["b"])
    )
    clean = torch.where((states == 1).unsqueeze(1), task.v_plus[None, :, None], task.v_minus[None, :, None])
    assert torch.equal(blockwise_noise, expected_noise)  # exact on any CPU (see above)
    assert torch.equal(blockwise_x[:, : task.feature_width, 1:], clean + expected_noise)  # exact on any CPU
    assert torch.equal(blockwise_x[:, : task.feature_width, 0], torch.zeros(num_examples, task.feature_width))
    eye = torch.eye(task.num_tokens, dtype=torch.float64).expand(num_examples, -1, -1)
    assert torch.equal(blockwise_x[:, task.feature_width :], eye)  # exact on any CPU: copied zeros and ones
    # sample_inputs: the same x and y as the data set, and the generator left where sample leaves it
    g1, g2 = generator(seed), generator(seed)
    inputs, labels = sample_inputs(task, num_examples, g1)
    again = task.sample(num_examples, g2)
    assert torch.equal(inputs, again.x) and torch.equal(labels, again.y)  # determinism: the same code path
    assert torch.equal(torch.rand(3, generator=g1), torch.rand(3, generator=g2))  # the same draws consumed


def test_sample_inputs_refuses_bad_arguments():
    from attnpaths.hmc.data import sample_inputs

    with pytest.raises(ValueError, match="num_examples"):
        sample_inputs(HMCTask(), 3, generator(0))
    with pytest.raises(ValueError, match="generator"):
        sample_inputs(HMCTask(), 4, None)
