"""The reproducibility chapter's report builders (attnpaths_book.report): tables from the chapters' sources,
timings and results files, and from the benchmark records."""

import pytest
from book_helpers import write_chapter, write_toc
from helpers import verdict as stand_in_verdict
from scipy.stats import norm

from attnpaths.claims import Outcome
from attnpaths_book import report, runner
from attnpaths_book.chapters import book_chapters, execution_order
from attnpaths_book.results import write_results as _write_results
from attnpaths_book.store import commit_unit


def write_results(chapter, profile, parameters, values, results):
    """A results file as a successful run of the runner leaves it: written, then committed with its manifest
    (the report reads only results that match their manifest's checksum)."""
    path = _write_results(chapter, profile, parameters, values, results)
    commit_unit(
        results.parent,
        results,
        chapter,
        {"results": (path, path.read_text()), "notebook": (results.parent / "executed" / f"{chapter}.ipynb", "{}")},
        {"cache_key": "key", "profile": profile, "execution": {}},
    )
    return path


def verdict(claim, outcome=Outcome.HOLDS):
    """A verdict whose statement names its claim."""
    return stand_in_verdict(claim, outcome, statement=f"claim {claim}")


@pytest.fixture
def book(tiny_book):
    root = tiny_book.root
    write_chapter(root, "intro", "n = 3\nlabel = 'x'", "values = {}", profiles={"smoke": {}, "paper": {"n": 30}})
    write_chapter(
        root,
        "theory",
        "widths = [10, 100]\nlevel = 0.01",
        "values = {}",
        profiles={"smoke": {}, "paper": {"widths": [10, 1000]}},
    )
    write_chapter(root, "summary", "", "values = {}", report=True)
    write_toc(root, ["intro", "theory", "summary"])
    return tiny_book


def test_markdown_table_and_its_row_check():
    assert report.markdown_table(["a", "b"], [[1, "x"], ("2", 3.5)]) == "| a | b |\n|---|---|\n| 1 | x |\n| 2 | 3.5 |"
    with pytest.raises(ValueError, match="rows must have 2 cells"):
        report.markdown_table(["a", "b"], [[1]])


def test_reported_chapters_are_those_executed_before_the_report(book):
    assert [c.name for c in report.reported_chapters(book, "summary")] == ["intro", "theory"]
    with pytest.raises(ValueError, match="a report chapter of the book \\(summary\\), got 'theory'"):
        report.reported_chapters(book, "theory")


def test_a_report_early_in_the_toc_executes_after_every_other_chapter(book):
    """A report chapter placed first in the toc (an introduction that answers the paper's claims) still runs
    after the chapters it reads, and a report after it reads it too."""
    write_chapter(book.root, "answers", "", "values = {}", report=True)
    write_toc(book.root, ["answers", "intro", "theory", "summary"])
    order = [c.name for c in execution_order(book_chapters(book))]
    assert order == ["intro", "theory", "answers", "summary"]
    assert [c.name for c in report.reported_chapters(book, "answers")] == ["intro", "theory"]
    assert [c.name for c in report.reported_chapters(book, "summary")] == ["intro", "theory", "answers"]
    assert [name for name, _ in runner.chapter_states(book, "smoke")] == order


def test_profile_differences_show_only_parameters_that_differ(book):
    chapters = report.reported_chapters(book, "summary")
    assert report.profile_differences(chapters, ("smoke", "paper")) == [
        ["intro", "`n`", "`3`", "`30`"],
        ["theory", "`widths`", "`[10, 100]`", "`[10, 1000]`"],
    ]
    assert report.profile_differences(chapters, ("smoke", "smoke")) == []


def test_timing_table_totals_only_complete_profiles(book):
    chapters = report.reported_chapters(book, "summary")
    timings = {
        "smoke": {
            "intro": {"wall_s": 2.04, "peak_rss_mib": 300.4},
            "theory": {"wall_s": 10.0, "peak_rss_mib": 512.6},
            "summary": {"wall_s": 1.0, "peak_rss_mib": 1.0},
        },
        "paper": {"theory": {"wall_s": 50.0, "peak_rss_mib": 900.0}},
    }
    table = report.timing_table(chapters, timings, ("smoke", "paper"))
    assert table.totals == {"smoke": pytest.approx(12.04), "paper": None}
    assert table.rows == [
        ["intro", "2.0", "300", "not run", "not run"],
        ["theory", "10.0", "513", "50.0", "900"],
        ["**total**", "**12.0**", "", "—", ""],
    ]
    assert table.timings["paper"] == {"intro": None, "theory": timings["paper"]["theory"]}  # this chapter left out
    assert table.markdown().splitlines()[0] == (
        "| chapter | smoke: wall time (s) | smoke: peak memory (MiB) | "
        "paper: wall time (s) | paper: peak memory (MiB) |"
    )
    assert [report.total_text(t) for t in (12.04, None)] == ["12 s", "not measured yet"]
    assert [report.budget_verdict(t, 180) for t in (180.0, 180.5, None)] == ["within", "over", "not measured yet"]


def test_claims_are_read_from_the_results_files_of_the_chapters_that_have_one(book, tmp_path):
    results = tmp_path / "results"
    write_results(
        "theory",
        "paper",
        {},
        {"verdicts": [verdict("T1").to_dict(), verdict("T2", Outcome.NOT_SIGNIFICANT).to_dict()]},
        results,
    )
    write_results("intro", "smoke", {}, {"glued": {}}, results)  # a chapter without claims
    chapters = book_chapters(book)
    claims = report.read_claims(chapters, results)  # summary has no results file: left out
    assert [(c.chapter, c.profile, [v.claim for v in c.verdicts]) for c in claims] == [
        ("intro", "smoke", []),
        ("theory", "paper", ["T1", "T2"]),
    ]
    assert report.claims_rows(claims) == [
        ["{doc}`theory`", "paper", "T1", "claim T1", "1 %", "**holds**"],
        ["{doc}`theory`", "paper", "T2", "claim T2", "1 %", "**not significant**"],
    ]
    outcomes, counts = report.claim_outcomes(claims)
    assert outcomes == {"intro": {}, "theory": {"T1": "holds", "T2": "not significant"}}
    assert counts == {"holds": 1, "not significant": 1, "contradicted": 0}


def test_the_paper_report_refuses_results_of_another_profile_or_none(book, tmp_path):
    results = tmp_path / "results"
    write_results("theory", "paper", {}, {"verdicts": [verdict("T1").to_dict()]}, results)
    write_results("intro", "smoke", {}, {"glued": {}}, results)
    chapters = book_chapters(book)
    with pytest.raises(ValueError, match=r"missing: intro \(smoke profile\), summary \(no results\)"):
        report.read_claims(chapters, results, profile="paper")
    write_results("intro", "paper", {}, {"glued": {}}, results)
    paper = [c for c in chapters if c.name != "summary"]
    assert [c.profile for c in report.read_claims(paper, results, profile="paper")] == ["paper", "paper"]


def test_family_z_limit_is_the_bonferroni_bound():
    assert report.family_z_limit(100, 0.01) == pytest.approx(3.8906, abs=1e-4)
    assert report.family_z_limit(1, 0.05) == pytest.approx(norm.ppf(0.975))
    for bad in (0, 2.0, True):
        with pytest.raises(ValueError, match="num_tests"):
            report.family_z_limit(bad)
    with pytest.raises(ValueError, match="level"):
        report.family_z_limit(10, 1.5)


def test_words_for_the_prose():
    assert report.predictor_agreement(2.97, 3.89) == "they agree"
    assert report.predictor_agreement(4.2, 3.89).startswith("**they differ")
    assert report.commit_label("2f4e43ff59ca72e876448109ddcdfc9ccc3de706", False) == "2f4e43ff59"
    assert report.commit_label(None, True) == "unknown (with local changes)"
    assert report.inline_code("python -m attnpaths_book bench sampler") == "`python -m attnpaths_book bench sampler`"
    assert report.inline_code("a `b` c") == "``a `b` c``"
    assert report.inline_code("`x`") == "`` `x` ``"


def _sampler_report(with_accuracy=True):
    summary = dict(
        wall_time_s=3.8,
        num_chains=1,
        num_samples=1000,
        min_predictor_ess=231.09,
        median_predictor_ess=790.2,
        max_predictor_rhat=1.00557,
        min_predictor_ess_per_s=60.75,
        min_order_parameter_ess=24.33,
        sampled_order_parameter=[[1.0]],
    )
    if with_accuracy:
        summary["test_accuracy"] = 0.97
    nuts = dict(summary, wall_time_s=737.61, num_samples=50, min_predictor_ess_per_s=0.01185)
    return {
        "gibbs": summary,
        "nuts": nuts,
        "ess_per_s_ratio": 5127.6,
        "max_mean_predictor_z": 2.97,
        "sizes": {"num_test": 100},
    }


def test_sampler_rows_and_summary():
    rows = report.sampler_rows(_sampler_report())
    assert len(rows) == 8 and rows[-1] == ["test accuracy of the mean predictor", "0.970", "0.970"]
    assert rows[0] == ["wall time (s)", "3.8", "737.6"]
    assert rows[1] == ["chains x stored draws", "1 x 1000", "1 x 50"]
    assert rows[5] == ["**smallest ESS of f per second**", "**60.8**", "**0.0118**"]
    assert len(report.sampler_rows(_sampler_report(with_accuracy=False))) == 7
    bench = _record(_sampler_report(), commit="abc", command="c", finished_utc="2026-11-30T01:59:47+00:00")
    summary = report.sampler_summary(bench, goal=100)
    assert summary["goal"] == 100 and summary["ess_per_s_ratio"] == 5127.6 and summary["commit"] == "abc"
    assert "sampled_order_parameter" not in summary["gibbs"] and summary["nuts"]["num_samples"] == 50


def _record(
    report_,
    commit="6cc0eecf553bc569334b11c354382641483d9210",
    command="python -m attnpaths_book bench x",
    finished_utc="2026-11-30T22:00:59+00:00",
):
    """A benchmark record of ``report_`` made on a clean checkout at ``commit`` on two CPUs."""
    return {
        "command": command,
        "commit": commit,
        "commit_dirty": False,
        "finished_utc": finished_utc,
        "machine": {"cpu_count": 2},
        "report": report_,
    }


def test_engine_benchmarks_rows_notes_and_summary():
    book = _record(
        {
            "profile": "paper",
            "html_wall_s": 24.69,
            "book_wall_s": 776.82,
            "runs": [
                {"workers": 1, "wall_s": 1159.3, "model_cache_warm_at_start": True},
                {"workers": 2, "wall_s": 752.13, "model_cache_warm_at_start": False},
            ],
        }
    )
    sweep = _record(
        {
            "num_tasks": 20,
            "speedup": {"1": 1.0, "2": 1.091},
            "projection": {"2": {"speedup": 1.997}, "4": {"speedup": 3.981}},
            "runs": [
                {"workers": 1, "wall_s": 41.274, "identical_to_first_run": True},
                {"workers": 2, "wall_s": 37.829, "identical_to_first_run": False},
            ],
        }
    )
    tests = _record(
        {
            "runs": [
                {
                    "tier": "full",
                    "command": "python -m pytest",
                    "wall_s": 541.2,
                    "summary": "1520 passed in 540.01s",
                    "book_html_at_start": False,
                },
                {
                    "tier": "fast",
                    "command": 'python -m pytest -m "not slow"',
                    "wall_s": 88.0,
                    "summary": "900 passed in 87s",
                    "book_html_at_start": True,
                },
            ]
        }
    )
    engines = report.engine_benchmarks(book, sweep, tests)
    assert engines.rows == [
        ["book, paper profile", "1", "in-process", "19.3 min"],
        ["book, paper profile", "2", "embedded LocalCluster", "12.5 min"],
        ["HTML build after it", "-", "-", "25 s (book and HTML 12.9 min)"],
        ["sweep, 20 tasks", "1", "in-process", "41.3 s (speed-up 1.00)"],
        ["sweep, 20 tasks", "2", "embedded LocalCluster", "37.8 s (speed-up 1.09)"],
        ["tests, full tier: `python -m pytest`", "-", "-", "9.0 min (1520 passed in 540.01s)"],
        ["tests, fast tier: `python -m pytest -m \"not slow\"`", "-", "-", "1.5 min (900 passed in 87s)"],
    ]
    assert engines.notes[0] == ("Book: `python -m attnpaths_book bench x`, commit 6cc0eecf55, 2026-11-30, 2 CPU cores.")
    assert "did not start with the same one-shot model cache" in engines.notes[1]
    assert "the same numbers as the first: **no**" in engines.notes[2]
    assert "2 workers 2.0, 4 workers 4.0." in engines.notes[2]
    assert engines.summary["book"]["wall_s"] == {"1": 1159.3, "2": 752.13}
    assert engines.summary["book"]["book_wall_s"] == 776.82
    assert engines.summary["tests"]["wall_s"] == {"full": 541.2, "fast": 88.0}
    assert engines.notes[-1].endswith("2 CPU cores; the full tier built the smoke book itself.")
    assert engines.summary["sweep"]["speedup"] == {"1": 1.0, "2": 1.091}
    assert engines.markdown().startswith("| what | workers | engine | wall time |")
    empty = report.engine_benchmarks(None, None)
    assert (empty.rows, empty.summary) == ([], {})
    assert empty.markdown() == (
        "The book benchmark has not been recorded yet. "
        "The sweep benchmark has not been recorded yet. "
        "The test-suite benchmark has not been recorded yet."
    )


def test_committed_records():
    assert report.committed_record("sampler")["benchmark"] == "sampler"
    assert report.committed_record("not_recorded") is None
    with pytest.raises(ValueError, match="no benchmark record"):
        report.committed_record("not_recorded", required=True)


def test_rerun_example_doubles_the_first_positive_integer_parameter(book):
    chapters = report.reported_chapters(book, "summary")
    assert report.rerun_example(chapters) == "python -m attnpaths_book run intro --profile smoke --set n=6"
    assert report.rerun_example(chapters[1:]) is None  # widths is a list, level a float


def test_numpyro_rows_show_each_run_and_the_ratio_with_its_interval():
    def run(accept, rhat, ess_per_s, stop="time_budget"):
        return {
            "num_chains": 2,
            "num_samples": 30,
            "wall_time_s": 100.0,
            "max_predictor_rhat": rhat,
            "stop_reason": stop,
            "rhat_target": 1.01,
            "mean_accept_prob": [accept, 0.25],
            "divergences": [3, 10],
            "potential_evaluations_per_iteration": 512.0,
            "min_predictor_ess_per_s": ess_per_s,
        }

    bench_report = {
        "gibbs": run(1.0, 1.004, 30.0),
        "nuts_float64": run(0.5, 2.3, 0.01),
        "nuts_float32": run(0.9, 1.009, 0.03, stop="rhat"),
        "ess_per_s_ratio": {"float64": 3000.0, "float32": 1000.0},
        "ess_per_s_ratio_repeats": {
            "float64": {"interval_68": [2000.0, 4500.0]},
            "float32": {"interval_68": [700.0, 1500.0]},
        },
    }
    rows = {row[0]: row[1:] for row in report.numpyro_rows(bench_report)}
    assert rows["largest split R-hat of f"] == ["1.004", "2.300", "1.009"]
    assert rows["stopped by"][1:] == ["time budget (R-hat target 1.01)", "R-hat target 1.01 reached"]
    assert rows["Gibbs / NUTS ratio (68 % interval over chains)"][1:] == [
        "3e+03 (2e+03 to 4.5e+03)",
        "1e+03 (700 to 1.5e+03)",
    ]
    assert rows["**smallest ESS of f per second**"] == ["**30**", "**0.01**", "**0.03**"]
    assert rows["divergent transitions per chain"] == ["none", "3, 10", "3, 10"]
    assert rows["mean acceptance probability per chain (target 0.8)"][1] == "0.50, 0.25"
    assert report.committed_record("numpyro_nuts")["report"]["nuts_float64"]["rhat_target"] == 1.01


def solver_record():
    """A solver record's shape with made-up numbers: Adam stopped by its limit on the image problem only."""

    def problem(ms, speedup, lower_bound, heads):
        return {
            "num_train": 100,
            "heads": heads,
            "width": 10,
            "temperature": 0.01,
            "solver": {"ms": ms, "iterations": 7, "ms_per_iteration": ms / 7, "gradient_norm": 1e-12},
            "adam": {
                "ms": ms * speedup,
                "steps": 1000,
                "converged": not lower_bound,
                "time_limit_s": 300.0,
                "action_excess": 1e-8,
                "max_abs_difference_U": 1e-4,
            },
            "speedup": speedup,
            "speedup_is_lower_bound": lower_bound,
        }

    def series(label, sizes, crossover):
        rows = [{label: s, "num_train": 200, "ms_per_iteration": 0.01 * s**2} for s in sizes]
        return {
            "width": 10,
            "temperature": 0.1,
            "rows": rows,
            "exponent_per_iteration": 2.0,
            "exponent_per_iteration_largest_two": 2.0,
            "exponent_per_solve": 2.1,
            "expected_exponents": [3.0, 2.0],
            "two_terms": {
                "exponents": [3.0, 2.0],
                "constant": False,
                "coefficients": [0.0 if crossover is None else 1e-5, 0.01],
                "crossover": crossover,
                "crossover_within_sizes": crossover is not None,
            },
        }

    return _record(
        {
            "targets": {"hmc_ms": 5.0},
            "problems": {"hmc": problem(20.0, 300.0, False, [2, 2]), "image": problem(900.0, 330.0, True, [4, 4])},
            "growth": {"examples": series("P", [100, 200, 400], None), "paths": series("paths", [4, 16, 64], 1000.0)},
        },
        commit="abc",
        command="python -m attnpaths_book bench solver",
        finished_utc="2026-12-01T00:00:00+00:00",
    )


def test_solver_rows_summary_and_crossover_words():
    record = solver_record()
    rows = {row[0]: row[1:] for row in report.solver_rows(record["report"])}
    assert rows["**Adam / solver time**"] == ["**300**", "**>= 330**"]  # only Adam stopped by its limit is a bound
    assert rows["Adam: time"] == ["6 s", "297 s (stopped at the 300 s limit)"]
    assert rows["heads per layer"] == ["2 x 2", "4 x 4"] and rows["Newton iterations"] == ["7", "7"]
    summary = report.solver_summary(record)
    assert summary["commit"] == "abc" and summary["targets"] == {"hmc_ms": 5.0}
    assert summary["problems"]["image"] == {
        "ms": 900.0,
        "iterations": 7,
        "adam_ms": 297000.0,
        "speedup": 330.0,
        "speedup_is_lower_bound": True,
    }
    assert summary["growth"]["paths"]["two_terms"]["crossover"] == 1000.0
    assert report.crossover_text(record["report"]["growth"]["examples"]["two_terms"], "P") == (
        "the fit needs no term in s³ over these sizes: the term in s² describes them, so the crossover lies beyond "
        "the largest size"
    )
    assert report.crossover_text(record["report"]["growth"]["paths"]["two_terms"], "paths").endswith(
        "the terms in s³ and s² are equal at about 1e+03 paths, within the measured sizes"
    )


def test_solver_growth_figure_draws_the_record():
    from attnpaths_book.benchmark_plots import plot_solver_growth

    growth = solver_record()["report"]["growth"]
    fig = plot_solver_growth(growth)
    for ax, (series, key) in zip(fig.axes, (("examples", "P"), ("paths", "paths"))):
        measured, power_law, two_terms = ax.get_lines()
        assert list(measured.get_xdata()) == [row[key] for row in growth[series]["rows"]]
        assert list(measured.get_ydata()) == [row["ms_per_iteration"] for row in growth[series]["rows"]]
        # the data are an exact power law with exponent 2: the fitted line passes through them
        assert power_law.get_ydata()[0] == pytest.approx(measured.get_ydata()[0])
        assert power_law.get_ydata()[-1] == pytest.approx(measured.get_ydata()[-1])
    # the two-term model b s^2 (+ a s^3 on the paths panel) is drawn with its coefficients
    assert fig.axes[0].get_lines()[2].get_ydata()[-1] == pytest.approx(0.01 * 400**2)
    assert fig.axes[1].get_lines()[2].get_ydata()[-1] == pytest.approx(1e-5 * 64**3 + 0.01 * 64**2)


def sampler_growth_record():
    """A sampler-growth record's shape with made-up numbers: time per sweep ~ size, ESS per second ~ 1 / size; the
    chains of the largest P did not converge."""

    def series(label, key, sizes):
        fixed = {"num_train": 100} if key == "width" else {"width": 10}
        rows = [
            {
                key: s,
                **fixed,
                "ms_per_sweep": 1.0 * s,
                "wall_time_s": 0.5 * s,
                "min_predictor_ess": 400.0,
                "min_predictor_ess_per_s": 800.0 / s,
                "min_predictor_ess_per_sweep": 0.25,
                "max_predictor_rhat": 1.004,
                "converged": True,
            }
            for s in sizes
        ]
        if label == "examples":
            rows[-1].update(max_predictor_rhat=1.09, converged=False, min_predictor_ess_per_s=0.1)
        return {
            "sizes": sizes,
            "rows": rows,
            "exponent_per_sweep": 1.0,
            "exponent_per_sweep_largest_two": 1.0,
            "expected_exponents": [2.0, 1.0],
            "ess_sizes": [r[key] for r in rows if r["converged"]],
            "exponent_ess_per_s": -1.0,
            "exponent_ess_per_sweep": 0.0,
            "two_terms": {
                "exponents": [2.0, 1.0],
                "constant": True,
                "coefficients": [0.0, 1.0, 0.0],
                "crossover": None,
                "crossover_within_sizes": False,
            },
        }

    return _record(
        {
            "temperature": 0.01,
            "chains": 4,
            "warmup": 100,
            "samples": 400,
            "threads": 1,
            "growth": {
                "width": series("width", "width", [10, 100]),
                "examples": series("examples", "num_train", [50, 100, 200]),
            },
        },
        commit="abc",
        command="python -m attnpaths_book bench sampler_growth",
        finished_utc="2026-12-01T00:00:00+00:00",
    )


def test_sampler_growth_rows_and_summary():
    record = sampler_growth_record()
    rows = report.sampler_growth_rows(record["report"])
    assert [row[0] for row in rows] == ["N = 10", "N = 100", "P = 50", "P = 100", "P = 200"]
    assert rows[1] == ["N = 100", "100 ms", "400", "8", "0.25", "1.004"]
    assert rows[-1][-1] == "1.090 (not converged)"
    summary = report.sampler_growth_summary(record)
    assert summary["commit"] == "abc" and (summary["chains"], summary["samples"]) == (4, 400)
    assert summary["growth"]["examples"]["sizes"] == [50, 100, 200]
    assert summary["growth"]["examples"]["ess_sizes"] == [50, 100]
    assert summary["growth"]["width"]["exponent_ess_per_s"] == -1.0 and "rows" not in summary["growth"]["width"]


def test_sampler_growth_figure_draws_the_record():
    from attnpaths_book.benchmark_plots import plot_sampler_growth

    record = sampler_growth_record()["report"]
    fig = plot_sampler_growth(record)
    top_left, top_right, bottom_left, bottom_right = fig.axes
    assert top_left.get_title() == "4-path network, P = 100, T = 0.01"  # the fixed size, read from the rows
    assert bottom_right.get_title() == "4-path network, N = 10, T = 0.01"
    for ax, series in ((top_left, "width"), (top_right, "examples")):
        measured, power_law, two_terms = ax.get_lines()
        rows = record["growth"][series]["rows"]
        assert list(measured.get_xdata()) == record["growth"][series]["sizes"]
        assert list(measured.get_ydata()) == [row["ms_per_sweep"] for row in rows]
        # exact power law with exponent 1: the fitted line and the model b s (in ms) pass through the points
        assert power_law.get_ydata()[-1] == pytest.approx(measured.get_ydata()[-1])
        assert two_terms.get_ydata()[0] == pytest.approx(measured.get_ydata()[0])
        assert two_terms.get_ydata()[-1] == pytest.approx(measured.get_ydata()[-1])
    measured, power_law = bottom_left.get_lines()  # every width converged; no cost model for the ESS per second
    assert list(measured.get_ydata()) == [row["min_predictor_ess_per_s"] for row in record["growth"]["width"]["rows"]]
    assert power_law.get_ydata()[0] == pytest.approx(measured.get_ydata()[0])
    # the largest P did not converge: drawn apart (open circle), left out of the fitted line
    measured, power_law, unconverged = bottom_right.get_lines()
    assert list(measured.get_xdata()) == [50, 100] and list(unconverged.get_xdata()) == [200]
    assert unconverged.get_markerfacecolor() == "none"
    assert power_law.get_xdata()[-1] == pytest.approx(100)


def test_sampler_mixing_words_name_the_fitted_and_the_unconverged_sizes():
    growth = sampler_growth_record()["report"]["growth"]
    assert report.sampler_mixing_text(growth["examples"], "P", "num_train") == (
        "against P the ESS per kept sweep scales with the exponent 0.00 and the ESS per second with -1.00 (fitted over "
        "P = 50, 100); the chains at P = 200 did not converge within their sweeps (R-hat 1.090), so their ESS is not "
        "used"
    )
    lonely = dict(growth["examples"], ess_sizes=[50], exponent_ess_per_s=None, exponent_ess_per_sweep=None)
    assert report.sampler_mixing_text(lonely, "P", "num_train").startswith(
        "against P no exponent is fitted: fewer than two sizes converged (50)"
    )
