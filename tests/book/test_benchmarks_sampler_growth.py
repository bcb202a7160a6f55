"""``python -m attnpaths_book bench sampler_growth``: the entry point at tiny size, its fits and the committed record."""

import json
import math

import pytest
import torch

from attnpaths_book.benchmarks import sampler_growth as bench
from attnpaths_book.benchmarks._fits import fit_exponent
from attnpaths_book.benchmarks.record import committed_record_path, read_record


def assert_ess_fits_use_converged_points(fit: dict, key: str):
    """The ESS exponents of a series are fitted to the points whose chains converged, and only to those."""
    converged = [row for row in fit["rows"] if row["converged"]]
    assert fit["ess_sizes"] == [row[key] for row in converged]
    for exponent, column in (
        ("exponent_ess_per_s", "min_predictor_ess_per_s"),
        ("exponent_ess_per_sweep", "min_predictor_ess_per_sweep"),
    ):
        if len(converged) < 2:
            assert fit[exponent] is None
        else:
            assert fit[exponent] == pytest.approx(fit_exponent(fit["ess_sizes"], [row[column] for row in converged]))


@pytest.mark.usefixtures("long_computation")
def test_entry_point_runs_at_tiny_size_and_writes_its_record(tmp_path, capsys):
    output = tmp_path / "records" / "sampler_growth.json"
    argv = ["--quick", "--output", str(output)]
    threads = torch.get_num_threads()
    report = bench.main(argv)
    assert torch.get_num_threads() == threads  # restored
    record = read_record(output)
    assert record["command"] == "python -m attnpaths_book bench sampler_growth " + " ".join(argv)
    saved = record["report"]
    assert json.loads(json.dumps(report, default=float)) == saved
    assert saved["quick"] and saved["threads"] == 1 and (saved["warmup"], saved["samples"]) == (5, 20)
    for label, sizes, key in (("width", [10, 20], "width"), ("examples", [20, 40], "num_train")):
        fit = saved["growth"][label]
        assert [row[key] for row in fit["rows"]] == sizes and fit["sizes"] == sizes
        assert fit["expected_exponents"] == list(bench.EXPECTED_EXPONENTS[label])
        for row in fit["rows"]:
            assert row["ms_per_sweep"] == pytest.approx(1e3 * row["wall_time_s"] / 25)
            assert row["min_predictor_ess_per_s"] == pytest.approx(row["min_predictor_ess"] / row["wall_time_s"])
            assert row["min_predictor_ess_per_sweep"] == pytest.approx(row["min_predictor_ess"] / (4 * 20))
            assert row["max_predictor_rhat"] > 0.9 and row["converged"] == (
                row["max_predictor_rhat"] <= bench.RHAT_LIMIT
            )
        assert math.isfinite(fit["exponent_per_sweep"])
        assert_ess_fits_use_converged_points(fit, key)
    assert "record written to" in capsys.readouterr().out


@pytest.mark.usefixtures("long_computation")
def test_same_seed_same_chains():
    settings = dict(chains=2, warmup=2, samples=20, seed=5)
    first, second = bench.sample_point(10, 20, **settings), bench.sample_point(10, 20, **settings)
    for key in ("min_predictor_ess", "max_predictor_rhat"):
        assert first[key] == second[key]
    assert bench.sample_point(10, 20, **{**settings, "seed": 6})["min_predictor_ess"] != first["min_predictor_ess"]


@pytest.mark.parametrize("argv", [["--quick", "--widths", "20", "10"], ["--quick", "--num-train", "1", "4"]])
def test_bad_sizes_are_refused(argv, tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:  # argparse's error: exit status 2, the option named on stderr
        bench.main([*argv, "--output", str(tmp_path / "r.json")])
    assert stop.value.code == 2 and argv[1] in capsys.readouterr().err


def test_committed_record_is_complete_and_consistent():
    record = read_record(committed_record_path("sampler_growth"))
    report = record["report"]
    assert record["benchmark"] == "sampler_growth" and record["commit"] is not None and not report["quick"]
    assert report["threads"] == 1 and report["samples"] >= 400
    assert report["growth"]["width"]["sizes"] == [10, 30, 100, 300]
    assert report["growth"]["examples"]["sizes"] == [50, 100, 200, 400, 800]
    for label, key in (("width", "width"), ("examples", "num_train")):
        fit = report["growth"][label]
        assert [row[key] for row in fit["rows"]] == fit["sizes"]
        assert all(row["converged"] == (row["max_predictor_rhat"] <= bench.RHAT_LIMIT) for row in fit["rows"])
        assert_ess_fits_use_converged_points(fit, key)
        assert fit["exponent_per_sweep"] == pytest.approx(
            fit_exponent(fit["sizes"], [r["ms_per_sweep"] for r in fit["rows"]])
        )
