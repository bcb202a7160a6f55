"""The numbers and sentences of the HMC chapter drawn from its results (attnpaths.hmc.bands, attnpaths.hmc.claims):
the accuracy summary of Fig. 2c, the predictor-variance record of claims 2v and 2ve, and the sentences that follow
the outcomes of claims 1, 2, 2w and 2v."""

import dataclasses
import math

import numpy as np
import pytest
import torch
from helpers import sampled_point

from attnpaths.claims import Outcome, exact
from attnpaths.experiments import sampling
from attnpaths.experiments.path_data import path_data
from attnpaths.experiments.sweep import theory_sweep
from attnpaths.hmc import bands as ex
from attnpaths.hmc import claims as hmc_claims
from attnpaths.hmc.data import HMCTask
from attnpaths.hmc.networks import four_path_network


@pytest.fixture(scope="module")
def curve_and_band():
    """The 4-path theory at N = 5 and 50 (T = 0.1) on a small HMC problem and its band over two data sets."""
    task = HMCTask()
    generator = torch.Generator().manual_seed(3)
    train, test = task.sample(20, generator), task.sample(40, generator)
    curve = theory_sweep(path_data(four_path_network(train), train, test), [5, 50], [0.1], progress=False)
    sets = ex.draw_data_sets(2, torch.Generator().manual_seed(4), num_train=20, num_test=30)
    return curve, ex.data_set_band(sets, four_path_network, [5, 50], 0.1, progress=False)


def test_accuracy_summary_quotes_the_curve_the_band_and_the_samples(curve_and_band):
    curve, band = curve_and_band
    theory = curve.accuracy["test"][:, 0]
    samples = {
        5: sampled_point(5, curve.U_at(5), accuracy=theory[0] - 0.03),
        50: sampled_point(50, curve.U_at(50), accuracy=theory[1] + 0.01),
    }
    gp = {"all": 0.7, "g": 0.8, "g+d": 0.75}
    summary = ex.accuracy_summary(curve, band, samples, gp)
    # exact on any CPU: the summary copies numbers of its inputs
    assert (summary["gp_all"], summary["gp_g"], summary["gp_gd"]) == (0.7, 0.8, 0.75)
    assert (summary["acc_small"], summary["acc_large"]) == (theory[0], theory[1])
    assert (summary["N_small"], summary["N_large"]) == (5, 50)
    assert (summary["band_small_lo"], summary["band_small_hi"]) == (
        band.accuracy[:, 0].min(),
        band.accuracy[:, 0].max(),
    )
    assert (summary["band_gp_lo"], summary["band_gp_hi"]) == (band.gp["all"].min(), band.gp["all"].max())
    assert math.isclose(summary["max_sampled_diff"], 0.03)
    with pytest.raises(ValueError, match="GP lines"):
        ex.accuracy_summary(curve, band, samples, {"all": 0.7})


def _variance_point(width, mean_variance, se):
    return dataclasses.replace(sampled_point(width, np.eye(2)), mean_variance=mean_variance, mean_variance_se=se)


def _exact(width, mean_variance):
    return sampling.ExactOrderParameter(
        width=width,
        U=np.eye(2),
        U_se=np.zeros((2, 2)),
        mode=np.eye(2),
        diagnostics={},
        mean_variance=mean_variance,
        mean_variance_se=0.01,
    )


def test_predictor_variance_record_and_its_summary_at_the_smallest_width():
    samples = {100: _variance_point(100, 1.1, 0.02), 10: _variance_point(10, 3.0, 0.5)}
    exact_means = {100: _exact(100, 1.05), 10: _exact(10, 2.5)}
    theory = {100: np.array([0.9, 1.1]), 10: np.array([1.0, 3.0])}
    record = ex.predictor_variance_record(samples, exact_means, theory)
    assert list(record) == ["100", "10"]
    assert record["100"]["theory"] == 1.0 and math.isclose(record["100"]["relative_deviation"], 0.1)
    assert math.isclose(record["100"]["exact_relative_deviation"], 1.1 / 1.05 - 1)
    summary = ex.predictor_variance_summary(record)  # N = 10, the smallest width, not the first key
    assert math.isclose(summary["dev_small"], 0.5) and math.isclose(summary["z_small"], 2.0)
    assert math.isclose(summary["exact_dev_small"], 0.2) and math.isclose(summary["saddle_exact_small"], -0.2)
    with pytest.raises(ValueError, match="every sampled width"):
        ex.predictor_variance_record(samples, {100: exact_means[100]}, theory)


def _verdict(claim, outcome):
    v = exact(claim, "s", source="x", statistic="d", value=1.0, criterion="c", satisfied=True, measured="m")
    return dataclasses.replace(v, outcome=outcome)


def _run(label, num_paths, widths):
    curve = type("Curve", (), {"names": tuple("abcdefgh"[:num_paths])})()
    return ex.NetworkRun(label, curve, None, {w: None for w in widths}, {}, np.ones(2))


def test_readings_follow_the_weakest_outcome_of_each_claim():
    runs = (_run("4 paths", 4, [10, 100]), _run("2 paths", 2, [10, 100]))
    holds = [_verdict(f"{c} ({r.label})", Outcome.HOLDS) for c in ("1", "2", "2w") for r in runs]
    texts = hmc_claims.readings(holds, runs)
    assert texts["band_reading"].startswith("over the data sets the gap is significant (claim 1)")
    assert "find the samples in agreement" in texts["samples_reading"]
    one_off = [dataclasses.replace(v, outcome=Outcome.CONTRADICTED) if v.claim == "2w (2 paths)" else v for v in holds]
    texts = hmc_claims.readings(one_off, runs)
    assert texts["band_reading"].startswith("over the data sets the gap is significant")
    assert "find a disagreement" in texts["samples_reading"] and "lie off the predicted lines" in texts["shift_reading"]
    with pytest.raises(ValueError, match="missing"):
        hmc_claims.readings(holds[:-1], runs)


def test_variance_readings_state_the_range_and_the_unpowered_tests():
    small = (_run("4 paths", 4, [10, 100]), _run("2 paths", 2, [10, 100]))  # (n + 1) / N = 0.5 and 0.3
    texts = hmc_claims.variance_readings(small, [_verdict("2v (4 paths)", Outcome.NOT_SIGNIFICANT)])
    assert texts["variance_range_small"] == "outside the claim's range ((n + 1)/N above 0.05)"
    assert texts["variance_power_reading"].startswith("At this run's lengths the test of 2v (4 paths) has less")
    large = (_run("4 paths", 4, [200, 1000]), _run("2 paths", 2, [100]))  # 0.025 and 0.03
    texts = hmc_claims.variance_readings(large, [_verdict("2b (4 paths)", Outcome.NOT_SIGNIFICANT)])
    assert texts["variance_range_small"] == "inside the claim's range"
    assert texts["variance_power_reading"].startswith("The test has the power a claim needs")
