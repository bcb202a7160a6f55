"""``python -m attnpaths_book bench solver``: the entry point at tiny size, the fits of the cost's growth, the Adam
reference and the committed record."""

import json
import math

import numpy as np
import pytest
import torch
from helpers import random_problem

from attnpaths.theory import solve
from attnpaths_book.benchmarks import _fits as fits
from attnpaths_book.benchmarks import solver as bench
from attnpaths_book.benchmarks.record import committed_record_path, read_record


def test_exponent_fit_recovers_known_exponents():
    rng = np.random.default_rng(0)
    sizes = np.array([100, 200, 400, 800, 1600])
    for exponent in (1.0, 2.0, 3.0):
        seconds = 1e-9 * sizes**exponent * np.exp(rng.normal(0, 0.05, sizes.size))  # 5 % timing noise
        assert fits.fit_exponent(sizes, seconds) == pytest.approx(exponent, abs=0.1)
    assert fits.fit_exponent([10, 100], [1.0, 100.0]) == pytest.approx(2.0, rel=1e-12)
    with pytest.raises(ValueError, match="sizes and seconds"):
        fits.fit_exponent([1, 2], [1.0, -1.0])


def test_two_term_fit_recovers_the_crossover():
    sizes = np.array([100, 200, 400, 800, 1600, 3200], dtype=float)
    a, b, c = 2e-9, 1e-6, 3e-3  # a P^3 = b P^2 at P = 500, and a constant cost
    fit = fits.fit_two_terms(sizes, a * sizes**3 + b * sizes**2 + c, (3.0, 2.0))
    assert fit["coefficients"] == pytest.approx([a, b, c], rel=1e-6)
    assert fits.fit_two_terms(sizes, a * sizes**3 + b * sizes**2, (3.0, 2.0), constant=False)[
        "coefficients"
    ] == pytest.approx([a, b], rel=1e-6)
    assert fit["crossover"] == pytest.approx(500.0, rel=1e-6)
    assert fit["share_of_the_higher_term"][0] < 0.5 < fit["share_of_the_higher_term"][-1]
    assert fit["crossover_within_sizes"]
    # one term alone: no crossover within the sizes (at most a rounding-sized higher term)
    alone = fits.fit_two_terms(sizes, b * sizes**2, (3.0, 2.0), constant=False)
    assert not alone["crossover_within_sizes"] and max(alone["share_of_the_higher_term"]) < 1e-9
    with pytest.raises(ValueError, match="exponents"):
        fits.fit_two_terms(sizes, sizes, (2.0, 3.0))


@pytest.mark.usefixtures("long_computation")
def test_adam_reaches_the_solver_minimum_within_its_tolerance():
    xi, y = random_problem(P=20, n0=5, heads=(2, 2), seed=3)
    exact = solve(xi, y, heads=(2, 2), width=10, temperature=0.1)
    adam = bench.adam_minimise(xi, y, (2, 2), 10, 0.1, lr=0.05, gradient_tolerance=1e-5, max_steps=20000)
    assert adam["converged"] and adam["max_gradient"] < 1e-5 and adam["steps"] > 10
    # the same minimum: Adam's action lies above it by no more than its stopping tolerance allows
    assert 0 <= adam["action"] - exact.action < 1e-6 * abs(exact.action)
    assert np.abs(adam["U_layers"][0] - exact.U).max() < 1e-3
    capped = bench.adam_minimise(xi, y, (2, 2), 10, 0.1, max_steps=3)
    assert not capped["converged"] and capped["steps"] == 3


@pytest.mark.usefixtures("long_computation")
def test_entry_point_runs_at_tiny_size_and_writes_its_record(tmp_path, capsys, monkeypatch):
    from threadpoolctl import threadpool_info

    output = tmp_path / "records" / "solver.json"
    argv = ["--quick", "--output", str(output), "--cache-dir", str(tmp_path / "cache")]
    threads = torch.get_num_threads()
    seen = []  # (torch threads, BLAS threads of numpy/scipy) during every timed solve

    def solve_counting_threads(*args, **kwargs):
        seen.append((torch.get_num_threads(), {p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"}))
        return solve(*args, **kwargs)

    monkeypatch.setattr(bench, "solve", solve_counting_threads)
    report = bench.main(argv)
    assert torch.get_num_threads() == threads  # restored
    assert seen and all(torch_threads == 1 and blas <= {1} for torch_threads, blas in seen), seen
    record = read_record(output)
    assert record["benchmark"] == "solver" and record["command"] == "python -m attnpaths_book bench solver " + " ".join(
        argv
    )
    assert record["machine"]["load_average_1min"] is not None and record["machine"]["load_average_1min_start"] >= 0
    saved = record["report"]
    assert json.loads(json.dumps(report, default=float)).keys() == saved.keys()
    assert saved["quick"] and saved["threads"] == 1 and saved["targets"] == bench.TARGETS
    for name, expected_heads in (("hmc", [2, 2]), ("image", [2, 2])):
        row = saved["problems"][name]
        assert row["heads"] == expected_heads and row["solver"]["converged"]
        assert row["solver"]["gradient_norm"] < 1e-8 and row["solver"]["hessian_min_eigenvalue"] > 0
        assert row["speedup"] == pytest.approx(row["adam"]["ms"] / row["solver"]["ms"])
        assert row["speedup_is_lower_bound"] == (not row["adam"]["converged"])
        assert row["adam"]["steps"] <= 20 and row["adam"]["lr"] == 0.1 and row["adam"]["gradient_tolerance"] == 1e-5
        assert len(row["solver"]["ms_all"]) == (2 if name == "hmc" else 1)  # the image problem: a third
    assert saved["problems"]["image"]["input_width"] == 64
    for key, sizes, exponents in (("examples", [20, 30, 40], [3.0, 2.0]), ("paths", [4, 9], [6.0, 4.0])):
        growth = saved["growth"][key]
        label = "P" if key == "examples" else "paths"
        assert [row[label] for row in growth["rows"]] == sizes
        assert growth["expected_exponents"] == exponents and math.isfinite(growth["exponent_per_iteration"])
        assert math.isfinite(growth["exponent_per_iteration_largest_two"])
        assert all(row["converged"] and row["energy_route"] in ("sample", "feature") for row in growth["rows"])
        assert set(growth["two_terms"]) >= {"coefficients", "crossover", "share_of_the_higher_term"}
    assert "record written to" in capsys.readouterr().out


def test_committed_record_is_complete_and_consistent():
    record = read_record(committed_record_path("solver"))
    report = record["report"]
    assert record["benchmark"] == "solver" and record["commit"] is not None and not report["quick"]
    for row in report["problems"].values():
        assert row["adam"]["gradient_tolerance"] > 0 and row["adam"]["lr"] > 0
        assert row["solver"]["converged"] and row["speedup"] == pytest.approx(row["adam"]["ms"] / row["solver"]["ms"])
    assert [row["P"] for row in report["growth"]["examples"]["rows"]] == [100, 200, 400, 800, 1400, 2000]
    assert [row["paths"] for row in report["growth"]["paths"]["rows"]] == [4, 16, 64]
