"""The numpyro NUTS benchmark (``python -m attnpaths_book bench numpyro_nuts``).

jax and numpyro are the optional ``bench`` extra, which CI does not install: the clear error when they are
missing is tested everywhere (their import is made to fail); the JAX potential and the entry point run only
where numpyro is importable.
"""

import importlib.util
import math
import re
import sys

import numpy as np
import pytest
import torch
from book_helpers import TINY_SAMPLER_SIZES
from helpers import random_attention, random_inputs

from attnpaths.network import AttentionNetwork
from attnpaths_book import cli
from attnpaths_book.benchmarks import numpyro_nuts as bench
from attnpaths_book.benchmarks.record import read_record
from attnpaths_book.benchmarks.sampler import _hmc_inputs, _random_inputs, potential_energy

HAVE_NUMPYRO = importlib.util.find_spec("numpyro") is not None and importlib.util.find_spec("jax") is not None
needs_numpyro = pytest.mark.skipif(
    not HAVE_NUMPYRO, reason='numpyro and jax are the optional "bench" extra (pip install -e ".[bench]")'
)

TINY_ARGV = [
    *TINY_SAMPLER_SIZES,
    "--num-warmup",
    "20",
    "--round-samples",
    "10",
    "--max-samples",
    "30",
    "--gibbs-warmup",
    "10",
    "--gibbs-samples",
    "40",
    "--num-chains",
    "2",
    "--temperature",
    "0.5",
]


# -- without numpyro ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("missing", ["numpyro", "jax"])
def test_missing_dependency_is_a_clear_error_naming_the_bench_extra(missing, monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, missing, None)  # makes `import missing` fail, installed or not
    with pytest.raises(ModuleNotFoundError, match=r'install them with pip install -e "\.\[bench\]"'):
        bench.require_numpyro()
    output = tmp_path / "record.json"
    assert bench.main([*TINY_ARGV, "--output", str(output)]) == 2
    assert 'pip install -e ".[bench]"' in capsys.readouterr().err
    assert cli.main(["bench", "numpyro_nuts", *TINY_ARGV, "--output", str(output)]) == 2
    assert 'pip install -e ".[bench]"' in capsys.readouterr().err
    assert not output.exists()


@pytest.mark.parametrize(
    "max_rhat, drawn, elapsed, last_round, expected",
    [
        (1.005, 10, 1.0, 1.0, "rhat"),
        (1.01, 100, 99.0, 50.0, "rhat"),  # R-hat first, even past the other limits
        (float("nan"), 10, 1.0, 1.0, ""),  # no R-hat yet: go on
        (1.2, 90, 1.0, 1.0, "max_samples"),  # 90 + 20 > 100
        (1.2, 80, 1.0, 1.0, ""),  # 80 + 20 = 100 is allowed
        (1.2, 10, 60.0, 41.0, "time_budget"),  # the next round would end at 101 s > 100 s
        (1.2, 10, 60.0, 40.0, ""),
    ],
)
def test_stopping_rule(max_rhat, drawn, elapsed, last_round, expected):
    reason = bench.stop_reason_after_round(
        max_rhat, drawn, elapsed, last_round, rhat_target=1.01, round_samples=20, max_samples=100, time_budget_s=100.0
    )
    assert reason == expected
    assert (
        bench.stop_reason_after_round(
            1.2, 10, 1e9, 1e9, rhat_target=1.01, round_samples=20, max_samples=100, time_budget_s=None
        )
        == ""
    )


def test_ratio_over_repeats_is_the_ratio_of_geometric_means_with_its_standard_error():
    out = bench.ratio_over_repeats([100.0, 400.0], [1.0, 1.0, 4.0, 4.0])
    assert out["geometric_mean_ratio"] == pytest.approx(200.0 / 2.0)
    log2 = math.log(4.0)  # log-spread of each set: var(log g) = log(4)^2 / 2, var(log n) = log(4)^2 / 3
    assert out["log_se"] == pytest.approx(math.sqrt(log2**2 / 2 / 2 + log2**2 / 3 / 4))
    low, high = out["interval_68"]
    assert low < out["geometric_mean_ratio"] < high and low * high == pytest.approx(out["geometric_mean_ratio"] ** 2)
    assert bench.ratio_over_repeats([5.0], [1.0, 2.0])["log_se"] is None


# -- with numpyro ------------------------------------------------------------------------------------------
def _weight_points(network, generator, scales=(0.3, 1.0, 2.5)):
    """Prior draws of the weights, scaled to move away from the typical prior point."""
    return [{k: s * v for k, v in network.sample_prior(generator).as_dict().items()} for s in scales]


def _potential_pairs(network, x, y, temperature, generator, dtype):
    import jax
    import jax.numpy as jnp

    torch_energy = potential_energy(network, x, y, temperature)
    jax_energy = bench.jax_potential_energy(network, x, y, temperature, dtype)
    gradient = jax.jit(jax.grad(jax_energy))
    jax_energy = jax.jit(jax_energy)
    for point in _weight_points(network, generator):
        as_jax = {k: jnp.asarray(v.numpy(), dtype=dtype) for k, v in point.items()}
        leaves = {k: v.clone().requires_grad_(True) for k, v in point.items()}
        expected = torch_energy(leaves)
        expected_grad = dict(zip(leaves, torch.autograd.grad(expected, list(leaves.values()))))
        yield expected.item(), jax_energy(as_jax), expected_grad, gradient(as_jax)


@needs_numpyro
@pytest.mark.parametrize("problem", ["hmc N=10", "random L=1", "random L=3"])
def test_jax_potential_equals_the_torch_potential_in_float64(problem):
    g = torch.Generator().manual_seed(5)
    if problem == "hmc N=10":  # the benchmark's posterior: 4-path network of Figure 2, P = 100, T = 0.01
        attention, x, y, _, _ = _hmc_inputs(100, 2)
        network, temperature = AttentionNetwork(attention, width=10), 0.01
    else:
        heads = (3,) if problem == "random L=1" else (2, 1, 2)
        network = AttentionNetwork(
            random_attention(g, heads, 4),
            width=(3, 2, 4, 2)[: len(heads) + 1],
            variances=[0.5, 1.5, 0.8, 2.0, 1.2][: len(heads) + 2],
        )
        x, y, temperature = random_inputs(g, 7, 4, 5), torch.tensor([1.0, -1, 1, -1, 1, 1, -1]), 0.3
    with bench.x64(True):
        for expected, energy, expected_grad, grad in _potential_pairs(network, x, y, temperature, g, "float64"):
            assert str(energy.dtype) == "float64"
            assert float(energy) == pytest.approx(expected, rel=1e-10, abs=0.0)
            for name, value in expected_grad.items():
                torch.testing.assert_close(
                    torch.from_numpy(np.array(grad[name])), value, rtol=1e-9, atol=1e-9 * value.abs().max().item()
                )


@needs_numpyro
def test_jax_potential_in_float32_is_the_float64_one_to_single_precision():
    attention, x, y, _, _ = _hmc_inputs(100, 2)
    network = AttentionNetwork(attention, width=10)
    with bench.x64(False):
        pairs = list(_potential_pairs(network, x, y, 0.01, torch.Generator().manual_seed(6), "float32"))
    for expected, energy, _, _ in pairs:
        assert str(energy.dtype) == "float32"
        assert float(energy) == pytest.approx(expected, rel=1e-4)
        assert float(energy) != expected  # it did compute in single precision
    with bench.x64(False), pytest.raises(ValueError, match="jax_enable_x64"):
        bench.jax_potential_energy(network, x, y, 0.01, "float64")
    with pytest.raises(ValueError, match="dtype must be one of"):
        bench.jax_potential_energy(network, x, y, 0.01, "float16")


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """The entry point at tiny size, both precisions (compilation is most of its 10-30 s)."""
    import jax

    x64_before = bool(jax.config.jax_enable_x64)
    output = tmp_path_factory.mktemp("records") / "numpyro_nuts.json"
    report = bench.main([*TINY_ARGV, "--output", str(output)])
    return report, read_record(output), x64_before, bool(jax.config.jax_enable_x64)


@needs_numpyro
def test_entry_point_runs_at_tiny_size_and_writes_its_record(tiny_run, capsys):
    import jax
    import numpyro

    report, record, x64_before, x64_after = tiny_run
    assert x64_after == x64_before  # jax_enable_x64 is restored
    assert record["benchmark"] == "numpyro_nuts"
    assert record["command"].startswith(
        "python -m attnpaths_book bench numpyro_nuts " + " ".join(TINY_ARGV) + " --output "
    )
    assert record["versions"]["numpyro"] == numpyro.__version__ and record["versions"]["jax"] == jax.__version__
    assert (
        record["machine"]["load_average_1min_start"] is not None and record["machine"]["load_average_1min"] is not None
    )
    assert record["report"]["ess_per_s_ratio"] == pytest.approx(report["ess_per_s_ratio"])
    assert report["sizes"]["widths"] == [2, 2, 2]
    gibbs = report["gibbs"]
    assert (gibbs["num_chains"], gibbs["num_samples"], len(gibbs["chain_wall_times_s"])) == (2, 40, 2)
    assert gibbs["wall_time_s"] == pytest.approx(sum(gibbs["chain_wall_times_s"]))
    for precision in bench.PRECISIONS:
        nuts = report[f"nuts_{precision}"]
        assert nuts["draw_dtype"] == precision
        assert nuts["num_chains"] == 2 and nuts["num_samples"] in (10, 20, 30)
        history = nuts["rhat_history"]
        assert [h["draws_per_chain"] for h in history] == list(range(10, nuts["num_samples"] + 1, 10))
        assert history[-1]["max_predictor_rhat"] == pytest.approx(nuts["max_predictor_rhat"], nan_ok=True)
        assert nuts["stop_reason"] in ("rhat", "max_samples")  # no time budget given
        assert nuts["converged"] == (nuts["max_predictor_rhat"] <= 1.01)
        assert nuts["wall_time_s"] == pytest.approx(sum(nuts["chain_wall_times_s"]))
        assert nuts["min_predictor_ess_per_s"] == pytest.approx(nuts["min_predictor_ess"] / nuts["wall_time_s"])
        assert report["ess_per_s_ratio"][precision] == pytest.approx(
            gibbs["min_predictor_ess_per_s"] / nuts["min_predictor_ess_per_s"]
        )
        assert report["ess_per_cpu_s_ratio"][precision] == pytest.approx(
            gibbs["min_predictor_ess_per_cpu_s"] / nuts["min_predictor_ess_per_cpu_s"]
        )
        assert len(nuts["chain_cpu_times_s"]) == 2 and all(t > 0 for t in nuts["chain_cpu_times_s"])
        # every iteration takes at least one leapfrog step; one adapted step size per chain
        assert nuts["potential_evaluations_per_iteration"] >= 1
        assert len(nuts["step_sizes"]) == 2 and all(h > 0 for h in nuts["step_sizes"])
        assert nuts["compile_time_s"] > 0 and 0 <= nuts["max_tree_depth_fraction"] <= 1
        repeats = report["ess_per_s_ratio_repeats"][precision]
        assert len(nuts["per_chain_min_predictor_ess_per_s"]) == 2
        low, high = repeats["interval_68"]
        assert low <= repeats["geometric_mean_ratio"] <= high
        assert math.isfinite(report["max_mean_predictor_z"][precision])


@needs_numpyro
def test_same_key_same_chains_and_budget_stops_after_one_round(tiny_run):
    """The run is a function of its key: rerunning float32 with the benchmark's seed gives the record's
    adapted step sizes and gradient counts again; a tiny time budget stops it after the first round."""
    import jax

    report = tiny_run[0]
    attention, x, y, x_test, _ = _random_inputs(torch.Generator().manual_seed(0), 6, 4, 5, 3)
    network = AttentionNetwork(attention, width=2)
    run = bench.run_numpyro_nuts(
        network,
        x,
        y,
        0.5,
        jax.random.PRNGKey(0),
        network.features(x_test),
        dtype="float32",
        num_warmup=20,
        num_chains=2,
        round_samples=10,
        max_samples=30,
        time_budget_s=1e-3,
    )
    expected = report["nuts_float32"]
    assert run.step_sizes == expected["step_sizes"]
    assert run.samples.num_samples == 10
    assert run.stop_reason == ("rhat" if expected["rhat_history"][0]["max_predictor_rhat"] <= 1.01 else "time_budget")
    assert run.rhat_history[0][1] == pytest.approx(expected["rhat_history"][0]["max_predictor_rhat"], rel=0, abs=0)
    with pytest.raises(ValueError, match="key must be a JAX PRNG key"):
        bench.run_numpyro_nuts(network, x, y, 0.5, 0, network.features(x_test), num_warmup=2, round_samples=2)
    with pytest.raises(ValueError, match="max_samples must be an int >= 10"):
        bench.run_numpyro_nuts(network, x, y, 0.5, jax.random.PRNGKey(0), network.features(x_test), max_samples=5)


# -- the committed record ------------------------------------------------------------------------------------
def test_committed_record_is_complete_and_consistent():
    from attnpaths_book.benchmarks.record import committed_record_path

    record = read_record(committed_record_path("numpyro_nuts"))
    report = record["report"]
    assert re.match(
        r"python -m attnpaths(_book)? bench numpyro_nuts", record["command"]
    )  # committed before the companion was a package of its own
    assert record["commit"] is not None and len(record["commit"]) == 40 and record["commit_dirty"] is False
    assert record["versions"]["numpyro"] and record["versions"]["jax"]
    assert report["sizes"] == {**report["sizes"], "widths": [10, 10, 10], "num_train": 100, "temperature": 0.01}
    gibbs = report["gibbs"]
    for precision in bench.PRECISIONS:
        nuts = report[f"nuts_{precision}"]
        assert nuts["draw_dtype"] == precision
        for summary in (gibbs, nuts):
            assert summary["wall_time_s"] == pytest.approx(sum(summary["chain_wall_times_s"]))
            assert summary["min_predictor_ess_per_s"] == pytest.approx(
                summary["min_predictor_ess"] / summary["wall_time_s"]
            )
        assert report["ess_per_s_ratio"][precision] == pytest.approx(
            gibbs["min_predictor_ess_per_s"] / nuts["min_predictor_ess_per_s"]
        )
        repeats = report["ess_per_s_ratio_repeats"][precision]
        assert repeats == {
            **repeats,
            **bench.ratio_over_repeats(
                gibbs["per_chain_min_predictor_ess_per_s"], nuts["per_chain_min_predictor_ess_per_s"]
            ),
        }
        assert nuts["rhat_history"][-1]["draws_per_chain"] == nuts["num_samples"]
        assert (
            nuts["converged"] == (nuts["stop_reason"] == "rhat") == (nuts["max_predictor_rhat"] <= nuts["rhat_target"])
        )
