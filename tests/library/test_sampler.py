"""The exact blocked-Gibbs posterior sampler (sec-hmc-theory) and its diagnostics.

(i)  each block's conditional draw against the closed-form Gaussian conditional, with the design matrix
     built independently from the layer-by-layer forward (eq-forward);
(ii) its diagnostics (effective sample size, split R-hat) and its devices.
The whole sampler against pyro's NUTS is a test of the book's (``tests/book/test_sampler_against_nuts.py``).
"""

import math

import numpy as np
import pytest
import torch
from helpers import (
    ALPHA,
    Z_MAX,
    conditional_draw_mismatch,
    random_inputs,
    rejects,
    sampler_problem,
)
from scipy import stats

from attnpaths.network import AttentionNetwork
from attnpaths.sampler import PosteriorSampler, effective_sample_size, split_rhat


@pytest.mark.parametrize("block", ["a", "V_2", "V_1", "V_0"])
def test_conditional_draw_is_the_exact_gaussian_conditional(block):
    network, x, y, g = sampler_problem()
    matches, wrong_temperature = conditional_draw_mismatch(network, x, y, g, block, temperature=0.3)
    assert not rejects(matches)
    assert rejects(wrong_temperature)


def test_conditional_draw_of_a_layer_narrower_than_the_heads_above_it():
    # V_1 with outputs of width 2 under the 3 heads of layer 2: its left vectors' 3 x 3 overlaps have rank 2, and the
    # factor that forms its Gram is 2 x 3
    network, x, y, g = sampler_problem(heads=(2, 3), widths=(2, 2, 2))
    matches, wrong_temperature = conditional_draw_mismatch(network, x, y, g, "V_1", temperature=0.3)
    assert not rejects(matches)
    assert rejects(wrong_temperature)


def test_scale_move_preserves_the_output_and_leaves_the_prior_invariant():
    # The move only involves the prior (f is unchanged), so applied to independent prior draws it must
    # return prior draws: |W|^2 / s ~ chi2(dim W) for every block.
    network, x, y, g = sampler_problem(widths=(2, 5, 3))
    sampler = PosteriorSampler(network, y, 0.1, x=x)
    before = network.sample_prior(g, 20000)
    after = sampler.scale_move(before, g)
    torch.testing.assert_close(network.forward(x, after), network.forward(x, before), rtol=1e-10, atol=1e-10)
    for (name, old), new, s in zip(before.as_dict().items(), after.as_dict().values(), network.variances):
        norms = (new**2).reshape(20000, -1).sum(dim=1) / s
        chi2 = stats.chi2(old[0].numel())
        assert stats.kstest(norms.numpy(), chi2.cdf).pvalue > ALPHA, name
        assert stats.kstest(1.05 * norms.numpy(), chi2.cdf).pvalue < ALPHA  # the check sees a 5 % drift
        moved = ((new - old).reshape(20000, -1).abs().amax(dim=1) > 0).to(torch.float64).mean()
        assert moved > 0.5, f"{name}: the move was rejected too often ({moved:.2f} accepted)"


# -- diagnostics -----------------------------------------------------------------------------------------
def ar1_chains(generator, num_chains, num_draws, phi, num_entries=3):
    """Stationary AR(1) chains, whose ESS is ``draws (1 - phi) / (1 + phi)``."""
    noise = torch.randn(num_chains, num_draws, num_entries, generator=generator, dtype=torch.float64)
    chains = torch.empty_like(noise)
    chains[:, 0] = noise[:, 0] / math.sqrt(1 - phi**2)
    for t in range(1, num_draws):
        chains[:, t] = phi * chains[:, t - 1] + noise[:, t]
    return chains


@pytest.mark.parametrize("phi", [0.0, 0.8, -0.3])
def test_effective_sample_size_of_ar1_chains(phi):
    g = torch.Generator().manual_seed(7)
    chains = ar1_chains(g, num_chains=4, num_draws=5000, phi=phi)
    expected = 4 * 5000 * (1 - phi) / (1 + phi)
    expected = min(expected, 4 * 5000 * math.log10(4 * 5000))  # the antithetic cap
    ess = effective_sample_size(chains)
    assert ess.shape == (3,)
    assert torch.all((ess / expected - 1).abs() < 0.15), ess


def test_effective_sample_size_is_positive_and_capped_for_short_antithetic_chains():
    # one split pair of two draws each, perfectly alternating: lag-1 autocorrelation below -1, tau <= 0
    chains = torch.tensor([[1.0, -1.0, 1.2, -1.2]], dtype=torch.float64)[..., None]
    ess = effective_sample_size(chains)
    assert ess.item() == pytest.approx(4 * math.log10(4))


@pytest.mark.needs("diagnostics")
@pytest.mark.parametrize("num_chains, num_draws", [(1, 4), (1, 5), (2, 7), (4, 50), (3, 101), (8, 400)])
def test_effective_sample_size_is_arvizs_for_every_entry(num_chains, num_draws):
    # evaluated for all entries at once, it is ArviZ's ess(method="mean") of each entry up to rounding (the sums
    # over the chains and the lags run in another order): AR(1) chains from antithetic to nearly frozen, which end
    # Geyer's sequences at every lag from the first to the last, a constant entry (M draws) and a trend
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # ArviZ's notice of a coming refactor
        import arviz

    g = torch.Generator().manual_seed(num_chains * 1000 + num_draws)
    chains = torch.cat(
        [ar1_chains(g, num_chains, num_draws, phi) for phi in (-0.9, -0.3, 0.0, 0.5, 0.95, 0.999)], dim=-1
    )
    chains[:, :, 0] = 3.0
    chains[:, :, 1] = torch.arange(num_draws, dtype=torch.float64)
    expected = [arviz.ess(chains[:, :, k].numpy(), method="mean") for k in range(chains.shape[-1])]
    torch.testing.assert_close(
        effective_sample_size(chains), torch.tensor(expected, dtype=torch.float64), rtol=1e-12, atol=0.0
    )
    assert effective_sample_size(chains)[0] == 2 * num_chains * (num_draws // 2)


def test_effective_sample_size_in_chunks_of_entries_is_the_same(monkeypatch):
    from attnpaths import _effective_sample_size

    chains = ar1_chains(torch.Generator().manual_seed(5), 3, 64, 0.7, num_entries=11)
    whole = effective_sample_size(chains)
    monkeypatch.setattr(_effective_sample_size, "CHUNK_NUMBERS", 6 * 64 * 2)  # two entries a chunk
    assert torch.equal(effective_sample_size(chains), whole)
    assert effective_sample_size(chains[:, :, :0]).shape == (0,)
    # autocovariances that overflow have no estimate (ArviZ: NaN), where a finite entry beside them keeps its own
    with np.errstate(over="ignore", invalid="ignore"):
        overflowing = effective_sample_size(torch.cat([chains[:, :, :1] * 1e200, chains[:, :, 1:]], dim=-1))
    assert torch.isnan(overflowing[0]) and torch.equal(overflowing[1:], whole[1:])


@pytest.mark.needs("diagnostics")
def test_split_rhat_flags_disagreeing_chains_and_trends():
    g = torch.Generator().manual_seed(8)
    chains = ar1_chains(g, num_chains=4, num_draws=2000, phi=0.5)
    assert torch.all(split_rhat(chains) < 1.01)
    shifted = chains + torch.arange(4, dtype=torch.float64)[:, None, None]
    assert torch.all(split_rhat(shifted) > 1.1)
    # a single chain with a trend: only the split into halves can see it
    trend = chains[:1] + torch.linspace(0, 3, 2000, dtype=torch.float64)[None, :, None]
    assert torch.all(split_rhat(trend) > 1.1)
    # too short half-chains (fewer than 4 draws) have no R-hat
    assert torch.all(torch.isnan(split_rhat(chains[:, :7])))


# Split R-hat and ESS of the AR(1) chains ar1_chains(Generator().manual_seed(11), C, S, phi), entries 0-2,
# computed by the package's own implementation that ArviZ replaced (attnpaths.sampler at commit 1c620f5).
REPLACED_IMPLEMENTATION = {
    # (phi, C, S): (ESS, split R-hat)
    (0.0, 4, 1000): (
        [3767.7551214887317, 4352.169680962128, 3912.5486616379626],
        [1.0000626003213031, 0.9997369927011078, 1.0000215836525193],
    ),
    (0.5, 4, 1000): (
        [1326.2732663258403, 1619.3626375037493, 1274.2171192460744],
        [1.0020348124363119, 1.0013815191634765, 1.002030392981599],
    ),
    (0.9, 4, 1000): (
        [140.64987818567027, 227.3267151595422, 160.1691343411207],
        [1.0166857173064239, 1.0157360850077377, 1.0174794987660691],
    ),
    (-0.3, 4, 1000): (
        [7081.993753134319, 10458.14372908021, 7614.016837337658],
        [0.9995778381113307, 0.9993895533790434, 0.999544519876713],
    ),
    (0.5, 2, 200): (
        [59.618902196871126, 117.85407124784228, 95.80488768350989],
        [1.0542553090299804, 1.0189229203637657, 1.0316439889766835],
    ),
}


@pytest.mark.needs("diagnostics")
@pytest.mark.parametrize("phi, num_chains, num_draws", list(REPLACED_IMPLEMENTATION))
def test_diagnostics_agree_with_the_replaced_implementation(phi, num_chains, num_draws):
    """Split R-hat is the same number. ESS (ArviZ's "mean" method) differs in two documented ways: ArviZ
    sets the lag-0 autocorrelation to 1 where the replaced code used ``1 - W / (n var_plus)``, and, as Stan,
    adds the even autocorrelation of the first non-positive pair when it is positive. Both only increase
    the autocorrelation time ``tau = M / ESS``: by ``2 W / (n var_plus) ~ 2 / n`` (``n`` draws per
    half-chain) plus one autocorrelation estimate at a lag where the chains have decorrelated, below
    ``Z_MAX`` of its standard error ``sqrt(tau / M)``."""
    chains = ar1_chains(torch.Generator().manual_seed(11), num_chains, num_draws, phi)
    old_ess, old_rhat = (
        torch.tensor(v, dtype=torch.float64) for v in REPLACED_IMPLEMENTATION[phi, num_chains, num_draws]
    )
    torch.testing.assert_close(split_rhat(chains), old_rhat, rtol=1e-12, atol=0.0)
    total, per_half = num_chains * num_draws, num_draws // 2
    old_tau, tau = total / old_ess, total / effective_sample_size(chains)
    assert torch.all(tau >= old_tau), (tau, old_tau)
    assert torch.all(tau - old_tau <= 2 / (per_half - 1) + Z_MAX * torch.sqrt(old_tau / total)), (tau, old_tau)


# -- the sampler's API -------------------------------------------------------------------------------------
def test_run_is_reproducible_and_predicts_from_inputs_or_features():
    network, x, y, g = sampler_problem(seed=3)
    x_test = random_inputs(g, 5, 4, 3)
    runs = []
    for _ in range(2):
        sampler = PosteriorSampler(network, y, 0.2, x=x)
        runs.append(sampler.run(torch.Generator().manual_seed(4), 3, 6, num_chains=2, progress=False))
    # determinism: the same sampler run twice from the same seed
    assert torch.equal(runs[0].path_input_weights, runs[1].path_input_weights)
    assert torch.equal(runs[0].order_parameters, runs[1].order_parameters)
    result = runs[1]
    assert result.path_input_weights.shape == (2, 6, network.num_paths, network.input_width)
    assert result.order_parameters.shape == (2, 6, network.num_paths, network.num_paths)
    features = network.features(x_test)
    torch.testing.assert_close(sampler.predict(x_test), result.predictor_samples(features).mean(dim=(0, 1)))
    torch.testing.assert_close(sampler.predict(features=features), sampler.predict(x_test))


@pytest.mark.needs("diagnostics")
def test_diagnostics_of_a_run_have_one_entry_per_order_parameter_and_test_input():
    network, x, y, g = sampler_problem(seed=3)
    features = network.features(random_inputs(g, 5, 4, 3))
    result = PosteriorSampler(network, y, 0.2, x=x).run(
        torch.Generator().manual_seed(4), 3, 6, num_chains=2, progress=False
    )
    diagnostics = result.diagnostics(features)
    assert diagnostics["predictor_ess"].shape == (5,)
    assert diagnostics["order_parameter_rhat"].shape == (4, 4)


def test_invalid_arguments_raise_value_errors_naming_them():
    network, x, y, g = sampler_problem()
    with pytest.raises(ValueError, match="temperature"):
        PosteriorSampler(network, y, 0.0, x=x)
    with pytest.raises(ValueError, match="targets must"):
        PosteriorSampler(network, y[:-1], 0.1, x=x)
    with pytest.raises(ValueError, match="exactly one of x"):
        PosteriorSampler(network, y, 0.1)
    sampler = PosteriorSampler(network, y, 0.1, features=network.features(x))
    with pytest.raises(ValueError, match="predict"):
        sampler.predict(x)
    with pytest.raises(ValueError, match="num_samples"):
        sampler.run(g, 0, 0)
    with pytest.raises(ValueError, match="block"):
        sampler.conditional_draw("V_9", network.sample_prior(g, 2), g)
    with pytest.raises(ValueError, match="samples"):
        effective_sample_size(torch.zeros(2, 3))
    with pytest.raises(ValueError, match=r"chains >= 1"):  # no chain: no estimate, for either diagnostic
        effective_sample_size(torch.zeros(0, 10, 3))
    with pytest.raises(ValueError, match=r"chains >= 1"):
        split_rhat(torch.zeros(0, 10, 3))


def test_cuda_is_refused_where_there_is_no_gpu(monkeypatch):
    network, x, y, _ = sampler_problem()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="device='cuda' asks for a CUDA GPU"):
        PosteriorSampler(network, y, 0.5, x=x, device="cuda")
    with pytest.raises(ValueError, match="device must be one of"):
        PosteriorSampler(network, y, 0.5, x=x, device="tpu")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_chains_on_cuda_equal_the_cpu_chains_to_rounding():
    """Same seed, same draws (taken on the CPU): a few sweeps on the GPU give the CPU's samples to rounding."""
    network, x, y, _ = sampler_problem()
    runs = {}
    for device in ("cpu", "cuda"):
        sampler = PosteriorSampler(network, y, 0.5, x=x, device=device)
        runs[device] = sampler.run(torch.Generator().manual_seed(3), 2, 5, num_chains=4, progress=False)
    for name in ("path_input_weights", "order_parameters"):
        cpu, gpu = getattr(runs["cpu"], name), getattr(runs["cuda"], name)
        assert gpu.device.type == "cpu"  # samples come back as CPU tensors
        torch.testing.assert_close(gpu, cpu, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("width", [6, 3])
def test_stored_pair_kernels_give_the_chains_of_the_direct_gram_matrix(monkeypatch, width):
    # V0's Gram matrix from the stored path-pair kernels equals the direct contraction up to rounding: a few
    # sweeps from the same generator give the same chains. Without the kernels, N_1 = 6 >= 4 paths contracts
    # the overlaps of the left vectors with the data, N_1 = 3 < 4 paths builds V0's design matrix.
    from attnpaths import hmc
    from attnpaths import sampler as sampler_module

    train = hmc.paper_train_set(20)
    network = AttentionNetwork(hmc.four_path_network(train).attention, width=width)

    def run():
        sampler = PosteriorSampler(network, train.y, 0.05, x=train.x)
        return sampler, sampler.run(torch.Generator().manual_seed(2), 1, 4, 2, progress=False)

    stored, with_kernels = run()
    monkeypatch.setattr(sampler_module, "MAX_PAIR_KERNEL_ENTRIES", 0)
    direct, without = run()
    assert stored._pair_kernels is not None and direct._pair_kernels is None
    torch.testing.assert_close(with_kernels.path_input_weights, without.path_input_weights, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(with_kernels.order_parameters, without.order_parameters, rtol=1e-9, atol=1e-12)
