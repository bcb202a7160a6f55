"""The numbers and sentences of the depth chapter drawn from its results (attnpaths.hmc.depth.networks,
attnpaths.hmc.depth.claims): one network's record and summary, the sampler table, and the sentences that follow
the outcomes of the claims."""

import dataclasses

import numpy as np
import pytest
import torch
from helpers import sampled_point

from attnpaths.claims import Outcome, exact
from attnpaths.experiments import sampling
from attnpaths.experiments.path_data import path_data
from attnpaths.experiments.sweep import theory_sweep
from attnpaths.hmc.data import HMCTask
from attnpaths.hmc.depth import claims as dc
from attnpaths.hmc.depth import networks as dn


@pytest.fixture(scope="module")
def deep_curve():
    """The three-layer network's theory at N = 10, 30 and 100 with its GP limit (P = 20, T = 0.1)."""
    task = HMCTask()
    generator = torch.Generator().manual_seed(5)
    train, test = task.sample(20, generator), task.sample(40, generator)
    data = path_data(dn.three_layer_network(train), train, test)
    return theory_sweep(data, [10, 30, 100], [0.1], gp_limit=True, progress=False)


def _diagnostics(wall_time):
    return {
        "num_chains": 2,
        "num_samples": 30,
        "num_warmup": 20,
        "min_predictor_ess": 11.2,
        "max_predictor_rhat": 1.15,
        "min_U_ess": 16.0,
        "max_U_rhat": 1.0941,
        "wall_time_s": wall_time,
    }


def _exact(width, U):
    diagnostics = {"num_chains": 8, "num_samples": 100, "min_ess": 10.0, "max_rhat": 3.17, "wall_time_s": 1.4}
    return sampling.ExactOrderParameter(width=width, U=U, U_se=np.full_like(U, 0.01), mode=U, diagnostics=diagnostics)


def test_network_record_and_summary_quote_the_theory_and_the_samples(deep_curve):
    curve = deep_curve
    U10 = curve.U_at(10)
    good = curve.names.index("ssu")
    _, (i, j) = dc.largest_cross_weight(U10)
    sampled = U10.copy()
    sampled[good, good] *= 1.2
    sampled[i, j] = sampled[j, i] = U10[i, j] + 0.3
    theory = curve.accuracy["test"][:, 0]
    samples = {
        30: sampled_point(30, curve.U_at(30), accuracy=theory[1] + 0.04, diagnostics=_diagnostics(1.6)),
        10: sampled_point(10, sampled, accuracy=theory[0] - 0.01, se=0.1, diagnostics=_diagnostics(1.2)),
    }
    samples = {w: dataclasses.replace(p, U_upper=(), U_upper_se=()) for w, p in samples.items()}
    record = dn.network_record(curve, samples, {30: _exact(30, curve.U_at(30))})
    assert set(record) == {"theory", "gp_accuracy", "sampled", "exact", "path_order"}
    assert list(record["theory"]["U"]) == ["10", "30", "100"] and record["path_order"] == list(curve.names)
    assert len(record["theory"]["U_layers"]["30"]) == 3  # U_1, U_2, U_3 of the three layers
    assert record["gp_accuracy"] == curve.gp.accuracy["test"][0, 0]
    assert record["sampled"]["10"]["wall_time_s"] == 1.2 and record["exact"]["30"]["max_rhat"] == 3.17

    summary = dn.network_summary(curve, samples, "ssu")
    # exact on any CPU: copies and ratios of the numbers given
    assert (summary["acc_min"], summary["acc_max"]) == (theory[0], theory[-1])
    assert summary["sampled_min"] == theory[0] - 0.01  # at N = 10, the smallest sampled width, not the first key
    assert np.isclose(summary["max_sampled_diff"], 0.04)
    assert np.isclose(summary["Ugood_shift"], 0.2) and summary["Ugood_sampled"] == sampled[good, good]
    assert summary["cross_entry"] == f"U[{curve.names[i]},{curve.names[j]}]"
    assert np.isclose(summary["cross_z_min"], 3.0) and summary["cross_theory"] == U10[i, j]
    assert summary["cross_ratio_max"] < summary["cross_ratio_min"]  # the cross weights vanish towards the GP limit
    with pytest.raises(ValueError, match="good_path"):
        dn.network_summary(curve, samples, "uuu")

    table = dn.sampler_table({"3 layers": (samples, {30: _exact(30, curve.U_at(30))})}).splitlines()
    assert len(table) == 4 and table[1] == "|---|---|---|---|---|---|---|---|---|"
    assert table[2] == "| 3 layers | 30 | 2 x 30 (20) | 11 | 1.150 | 16 | 1.094 | 1.6 | 8 x 100, 10, 3.17, 1.4 |"
    assert table[3].startswith("| 3 layers | 10 |") and table[3].endswith("| 1.2 | - |")


def _verdict(claim, outcome):
    v = exact(claim, "s", source="x", statistic="d", value=1.0, criterion="c", satisfied=True, measured="m")
    return dataclasses.replace(v, outcome=outcome)


def test_readings_follow_the_outcomes_of_claims_a_and_aw():
    networks = ["3 layers", "4 + 2 heads"]
    verdicts = [_verdict(f"{c} ({n})", Outcome.HOLDS) for c in ("a", "aw", "b", "c", "d") for n in networks]
    texts = dc.readings(verdicts, networks)
    assert texts["samples_reading"].startswith("Claims a and aw below find the samples in agreement")
    assert texts["outcomes"].startswith("claim a: holds (3 layers), holds (4 + 2 heads); claim aw: holds")
    verdicts[1] = _verdict("a (4 + 2 heads)", Outcome.NOT_SIGNIFICANT)
    texts = dc.readings(verdicts, networks)
    assert "cannot decide" in texts["samples_reading"] and "is not decided" in texts["summary_reading"]
    assert "claim a: holds (3 layers), not significant (4 + 2 heads);" in texts["outcomes"]
    with pytest.raises(ValueError, match="missing"):
        dc.readings(verdicts[:-1], networks)


def test_range_and_margin_readings_follow_their_conditions():
    assert dc.saddle_range_reading(0.9).startswith("a width outside the saddle point's range ((n + 1)/N above 0.05)")
    assert dc.saddle_range_reading(0.04).startswith("a width inside the saddle point's range")
    assert dc.cross_margins_reading(3.0).startswith("so agreement within the margin means")
    assert dc.cross_margins_reading(2.9).startswith("too few for agreement")
    with pytest.raises(ValueError, match="fewest"):
        dc.cross_margins_reading(float("nan"))
