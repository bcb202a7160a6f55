"""The exact blocked-Gibbs posterior sampler (sec-hmc-theory) against pyro's NUTS, the generic sampler of the book's
sampler benchmark (``attnpaths_book.benchmarks.sampler``): a two-sample KS test on f(x*) that must also reject a
wrong temperature and a wrong prior, at two and three layers; and the benchmark's committed record."""

import re

import pytest
import torch
from book_helpers import TINY_SAMPLER_SIZES
from helpers import ALPHA, gibbs_against_nuts_pvalues, random_inputs, sampler_problem

from attnpaths_book.benchmarks import sampler as benchmark
from attnpaths_book.benchmarks.record import committed_record_path, read_record

NUTS_TEMPERATURE = 1.0


NUTS_PROBLEMS = {
    2: dict(seed=1, widths=3),  # N = 3, H = (2, 2): about 10 s on an idle core
    3: dict(seed=7, heads=(2, 1, 2), widths=2),  # N = 2, H = (2, 1, 2): tens of seconds
}
"""The networks whose posterior NUTS samples, by their number of layers (``sampler_problem``'s arguments; P = 8)."""


@pytest.fixture(scope="module", params=list(NUTS_PROBLEMS), ids=["two layers", "three layers"])
def nuts_problem(request):
    """A network of :data:`NUTS_PROBLEMS` and its posterior sampled once with pyro's NUTS, and its number of layers.

    f is compared on the eight training inputs, where the fit, hence the temperature, shows most
    directly, and on two unseen inputs.
    """
    network, x, y, g = sampler_problem(**NUTS_PROBLEMS[request.param], variances=1.0, num_examples=8)
    points = torch.cat([x, random_inputs(g, 2, 4, 3)])
    nuts = benchmark.run_nuts(network, x, y, NUTS_TEMPERATURE, g, num_warmup=100, num_samples=300)
    return network, x, y, network.features(points), nuts, request.param


@pytest.mark.parametrize(
    "temperature_factor, variance, same_posterior",
    [(1.0, 1.0, True), (0.5, 1.0, False), (3.0, 1.0, False), (1.0, 2.0, False)],
    ids=["same posterior", "temperature too low", "temperature too high", "prior too wide"],
)
def test_gibbs_agrees_with_nuts_and_the_comparison_detects_wrong_posteriors(
    nuts_problem, temperature_factor, variance, same_posterior
):
    network, x, y, test_features, nuts, num_layers = nuts_problem
    assert network.num_layers == num_layers
    pvalues = gibbs_against_nuts_pvalues(
        network, x, y, test_features, nuts, temperature_factor * NUTS_TEMPERATURE, variance
    )
    # Bonferroni over the test points
    assert bool((pvalues.min() * len(pvalues)) > ALPHA) == same_posterior


def test_committed_benchmark_record_is_complete_and_consistent():
    record = read_record(committed_record_path("sampler"))
    report = record["report"]
    assert record["benchmark"] == "sampler" and re.match(
        r"python -m attnpaths(_book)? bench sampler", record["command"]
    )  # committed before the companion was a package of its own
    assert record["commit"] is not None and len(record["commit"]) == 40
    ratio = report["gibbs"]["min_predictor_ess_per_s"] / report["nuts"]["min_predictor_ess_per_s"]
    assert report["ess_per_s_ratio"] == pytest.approx(ratio)
    for name in ("gibbs", "nuts"):
        summary = report[name]
        assert summary["min_predictor_ess_per_s"] == pytest.approx(
            summary["min_predictor_ess"] / summary["wall_time_s"]
        )


def test_reading_a_missing_or_incomplete_record_names_the_file(tmp_path):
    with pytest.raises(ValueError, match="no benchmark record at .*nothing.json"):
        read_record(tmp_path / "nothing.json")
    (tmp_path / "partial.json").write_text('{"benchmark": "sampler"}')
    with pytest.raises(ValueError, match="partial.json is missing the keys"):
        read_record(tmp_path / "partial.json")
    with pytest.raises(ValueError, match="name"):
        committed_record_path("../sampler")


@pytest.mark.usefixtures("long_computation")
def test_benchmark_entry_point_runs_at_tiny_sizes_and_writes_its_record(capsys, tmp_path):
    output = tmp_path / "records" / "bench.json"
    argv = [
        *TINY_SAMPLER_SIZES,
        "--num-warmup",
        "10",
        "--num-samples",
        "10",
        "--gibbs-warmup",
        "10",
        "--gibbs-samples",
        "20",
        "--num-chains",
        "2",
        "--temperature",
        "0.5",
        "--output",
        str(output),
    ]
    report = benchmark.main(argv)
    record = read_record(output)
    assert record["benchmark"] == "sampler" and record[
        "command"
    ] == "python -m attnpaths_book bench sampler " + " ".join(argv)
    assert record["report"]["ess_per_s_ratio"] == pytest.approx(report["ess_per_s_ratio"])
    assert record["machine"]["cpu_count"] >= 1 and record["versions"]["torch"] == torch.__version__
    # every NUTS iteration evaluates the potential at least once (one leapfrog step); one step size per chain
    assert report["nuts"]["potential_evaluations_per_iteration"] >= 1
    assert len(report["nuts"]["step_sizes"]) == 2 and all(h > 0 for h in report["nuts"]["step_sizes"])
    assert set(report) >= {"gibbs", "nuts", "ess_per_s_ratio", "max_mean_predictor_z", "sizes"}
    assert report["sizes"]["widths"] == [2, 2, 2]
    assert (report["gibbs"]["num_samples"], report["nuts"]["num_samples"]) == (20, 10)
    assert report["gibbs"]["num_chains"] == report["nuts"]["num_chains"] == 2
    assert "ESS/s ratio" in capsys.readouterr().out
