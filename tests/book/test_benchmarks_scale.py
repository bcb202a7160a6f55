"""``python -m attnpaths_book bench scale``: the entry point at tiny size (each row in its own process), on the
hidden-Markov-chain task and on the one-shot image task, and the committed record of the Gram route streamed up to
``P = 10^5`` against the dense route."""

import json
import math

import pytest

from attnpaths_book.benchmarks import scale as bench
from attnpaths_book.benchmarks.record import committed_record_path, read_record

AGREEMENT = 1e-10
"""Relative difference allowed between the two routes' ``U`` and action at one ``P`` where both certified their
minimum: both minimise the same action, the Gram route from ``F^T F`` and ``F^T y``, the dense one from the
``[P, P]`` kernel; they differ by the rounding of their sums, amplified by the conditioning of the minimum (seen:
at most 5e-12 at ``P = 1000, 2000``)."""
UNCERTIFIED_AGREEMENT = 1e-9
"""The same for ``U`` where the dense route stopped uncertified (``P >= 4000`` at ``T = 0.01``): its trust region
collapses where the rounding of its ``P``-term sums exceeds the gradient tolerance (its gradient norm there:
2e-8 to 2e-7), so its ``U`` is only that precise (seen: 1.6e-10 at ``P = 4000``; the dense route started at the
Gram route's minimum moves 1e-10 and stops uncertified again). The actions still agree within :data:`AGREEMENT`."""
ROW_FIELDS = {
    "route",
    "P",
    "D",
    "chunks",
    "wall_s",
    "features_s",
    "accumulate_s",
    "solve_s",
    "iterations",
    "converged",
    "gradient_norm",
    "hessian_min_eigenvalue",
    "action",
    "U_layers",
    "solver_memory_estimate_gib",
    "rss_after_imports_mib",
    "peak_rss_mib",
    "threads",
}
IMAGE_ROW_FIELDS = ROW_FIELDS | {"setup_s", "attention"}
"""An image row also holds the seconds of loading the data set and building the model, and its statement that
the attention is untrained (timing only)."""


def _check_rows(report, fields=ROW_FIELDS):
    rows = report["rows"]
    assert {row["route"] for row in rows} == {"gram", "dense"}
    assert [row["P"] for row in rows if row["route"] == "gram"] == report["gram_sizes"]
    assert [row["P"] for row in rows if row["route"] == "dense"] == report["dense_sizes"]
    assert set(report["dense_sizes"]) <= set(report["gram_sizes"])
    for row in rows:
        assert set(row) == fields, row["route"]
        assert row["threads"] == {"torch": 1, "blas": [1]}  # one thread in the row's own process
        assert 0 < row["rss_after_imports_mib"] <= row["peak_rss_mib"]
        assert row["chunks"] == math.ceil(row["P"] / report["chunk_size"])
        assert row["wall_s"] == pytest.approx(
            row["features_s"] + row["accumulate_s"] + row["solve_s"], rel=0.05, abs=0.05
        )
        assert math.isfinite(row["action"]) and row["iterations"] >= 1 and len(row["U_layers"]) == 2
        if row["route"] == "gram":
            # certified by the solver (its tolerance, 1e-8, is on the gradient in log-Cholesky coordinates); the
            # certificate's gradient norm recorded here is bounded by the tolerance or by the rounding of an action
            # that sums P terms (1e-13 of it, as the million-example record's test argues), whichever is larger
            assert row["converged"] and row["hessian_min_eigenvalue"] > 0
            assert row["gradient_norm"] < max(1e-8, 1e-13 * abs(row["action"])), row
        else:
            assert row["accumulate_s"] == 0.0 and row["P"] <= report["dense_max"]
    assert [c["P"] for c in report["comparisons"]] == report["dense_sizes"]
    for c in report["comparisons"]:
        assert c["gram_converged"]
        U_bound = AGREEMENT if c["dense_converged"] else UNCERTIFIED_AGREEMENT
        assert c["U_relative_difference"] < U_bound and c["action_relative_difference"] < AGREEMENT, c
        assert c["time_ratio_dense_over_gram"] > 0
    for skipped in report["dense_skipped"]:
        assert skipped["P"] > report["dense_max"] or skipped["memory_estimate_gib"] > report["dense_memory_gib"]
        assert skipped["reason"]


@pytest.mark.usefixtures("long_computation")
def test_entry_point_runs_at_tiny_size_and_writes_a_complete_record(tmp_path, capsys):
    output = tmp_path / "records" / "scale.json"
    argv = ["--quick", "--output", str(output)]
    report = bench.main(argv)
    record = read_record(output)
    assert record["benchmark"] == "scale"
    assert record["command"] == "python -m attnpaths_book bench scale " + " ".join(argv)
    assert record["machine"]["load_average_1min"] is not None
    saved = record["report"]
    assert json.loads(json.dumps(report, default=float)).keys() == saved.keys()
    assert saved["quick"] and saved["task"] == bench.QUICK_TASK and saved["heads"] == [2, 2]
    assert saved["gram_sizes"] == [20, 40, 80] and saved["dense_sizes"] == [40]
    assert [s["P"] for s in saved["dense_skipped"]] == [80] and "P > 40" in saved["dense_skipped"][0]["reason"]
    _check_rows(saved)
    assert all(row["D"] == 14 * 4 for row in saved["rows"])
    out = capsys.readouterr().out
    assert "peak RSS MiB" in out and "record written to" in out


def test_the_image_task_runs_at_tiny_size_with_untrained_attention(tmp_path, process_environment):
    """``--task image --quick``: one-shot episodes of a small rendered glyph set through an untrained model of
    2 layers of 2 heads (``N0 = 16``, ``D = 64``), streamed and dense; the routes agree as on the hmc task. With
    ``--threads 1`` no row is run again on threads."""
    output = tmp_path / "image.json"
    report = bench.main(["--quick", "--task", "image", "--threads", "1", "--output", str(output)])
    saved = read_record(output)["report"]
    assert json.loads(json.dumps(report, default=float)) == saved
    assert saved["problem"] == "image" and saved["quick"]
    assert saved["task"] == json.loads(
        json.dumps({"glyphs": bench.QUICK_IMAGE_GLYPHS, "model": bench.QUICK_IMAGE_MODEL})
    )
    assert saved["heads"] == [2, 2] and saved["width"] == 512 and saved["temperature"] == 0.01
    assert saved["gram_sizes"] == [20, 40, 80] and saved["dense_sizes"] == [40]
    assert saved["threaded_rows"] == [] and saved["threaded"] == []
    _check_rows(saved, IMAGE_ROW_FIELDS)
    for row in saved["rows"]:
        assert row["D"] == 16 * 4 and row["setup_s"] > 0
        assert row["attention"].startswith("timing only: untrained attention")
    assert "timing only: untrained attention" in saved["note"]


def test_the_committed_record_streams_to_a_hundred_thousand_examples():
    record = read_record(committed_record_path("scale"))
    report = record["report"]
    assert record["benchmark"] == "scale" and record["commit"] is not None and not report["quick"]
    assert (report["heads"], report["width"], report["temperature"], report["task"]) == ([2, 2], 10, 0.01, {})
    assert {1000, 10_000, 100_000} <= set(report["gram_sizes"])
    assert report["dense_sizes"] and max(report["dense_sizes"]) == 8000 and report["dense_memory_gib"] == 4.0
    assert report["gradient_tolerance"] == bench.GRADIENT_TOLERANCE
    _check_rows(report)
    # the routes agree within AGREEMENT where the dense one certified its minimum (at least at P = 1000)
    assert any(c["dense_converged"] for c in report["comparisons"])
    gram = {row["P"]: row for row in report["rows"] if row["route"] == "gram"}
    dense = {row["P"]: row for row in report["rows"] if row["route"] == "dense"}
    assert all(row["solver_memory_estimate_gib"] <= 4.0 for row in dense.values())
    # the Gram route's memory does not grow with P: the same estimate at every P, and a measured peak far below
    # the dense route's at 8000 (it grows a little over the first chunks, as the allocator keeps freed memory)
    assert len({row["solver_memory_estimate_gib"] for row in gram.values()}) == 1
    assert gram[100_000]["peak_rss_mib"] < min(2.0 * gram[1000]["peak_rss_mib"], dense[8000]["peak_rss_mib"])
    # time: 12.5 times the examples in at most TIME_RATIO_BOUND (1: no more) times the dense route's time at 8000
    assert report["time_ratio_bound"] == bench.TIME_RATIO_BOUND
    ratio = gram[100_000]["wall_s"] / dense[8000]["wall_s"]
    assert ratio == pytest.approx(report["largest_gram_over_largest_dense_time"])
    assert ratio <= bench.TIME_RATIO_BOUND
    # the largest row again on the machine's cores in one process: the same solution, bit for bit, in less time
    (threaded,) = report["threaded"]
    assert threaded["P"] == 100_000 and threaded["threads"] >= 2 and threaded["same_U_bits"]
    assert threaded["speedup"] > 1.0 and threaded["peak_rss_mib"] < 2 * 1024


def test_gram_rows_streamed_over_workers_give_the_same_solution(tmp_path, process_environment):
    """``--workers 2``: the chunks of a Gram row are tasks of an embedded two-worker cluster, whose statistics
    are the same bits as in the row's own process, so the solve is too; each worker's peak memory is recorded."""
    common = ["--quick", "--gram-only", "--gram-sizes", "20", "40", "--threads", "1"]
    here = bench.main([*common, "--output", str(tmp_path / "here.json")])
    there = bench.main([*common, "--workers", "2", "--output", str(tmp_path / "there.json")])
    assert here["dense_sizes"] == there["dense_sizes"] == [] and there["workers"] == 2
    for a, b in zip(here["rows"], there["rows"]):
        assert (a["route"], a["P"]) == (b["route"], b["P"]) == ("gram", a["P"])
        assert a["U_layers"] == b["U_layers"] and a["action"] == b["action"]
        assert "workers" not in a and b["workers"] == 2 and b["features_s"] is None
        assert len(b["worker_peak_rss_mib"]) == 2 and all(m > 0 for m in b["worker_peak_rss_mib"])


def test_the_largest_gram_row_run_again_on_threads_gives_the_same_solution(tmp_path, process_environment):
    """``--threads 2``: the largest Gram row once more with its chunks made on two threads of its one process,
    the same solution bit for bit as on one thread, and the speed-up recorded beside it."""
    argv = ["--quick", "--gram-only", "--gram-sizes", "20", "40", "--threads", "2"]
    report = bench.main([*argv, "--output", str(tmp_path / "threads.json")])
    (row,) = report["threaded_rows"]
    assert row["P"] == max(report["gram_sizes"]) and row["task_threads"] == 2 and row["features_s"] is None
    (threaded,) = report["threaded"]
    one_thread = next(r for r in report["rows"] if r["route"] == "gram" and r["P"] == row["P"])
    assert threaded["same_U_bits"] and one_thread["U_layers"] == row["U_layers"]
    assert threaded["speedup"] == pytest.approx(one_thread["wall_s"] / row["wall_s"])


def _million_example_row(name: str, workers: int) -> dict:
    """The one row of a committed ``bench scale --gram-only --gram-sizes 1000000 --workers K`` record, checked to be
    that run's: P = 10^6 on the hmc task (D = 924), streamed on ``workers`` processes, certified."""
    record = read_record(committed_record_path(name))
    report = record["report"]
    assert record["benchmark"] == "scale" and not report["quick"] and report["gram_sizes"] == [1_000_000]
    assert report["dense_sizes"] == [] and report["workers"] == workers
    (row,) = report["rows"]
    assert row["P"] == 1_000_000 and row["D"] == 924 and row["converged"] and row["hessian_min_eigenvalue"] > 0
    return row


def test_the_committed_million_example_record_streams_without_holding_the_features():
    """The record of ``bench scale --gram-only --gram-sizes 1000000 --workers 2`` (one run on 2 cores): P = 10^6
    streamed, certified, every process far below the 7.4 GB that the features [10^6, 231, 4] would take."""
    row = _million_example_row("scale_million", workers=2)
    # certified; its gradient norm (1.3e-7) is the rounding of an action of 1.4e7 (a sum over 10^6 examples), as the
    # committed record's grows with P (7.5e-13 at P = 10^3, 8.6e-9 at 10^5): 1e-14 of the action, not 1e-8
    assert row["gradient_norm"] < 1e-13 * abs(row["action"])
    features_mib = 8.0 * row["P"] * row["D"] / 2**20
    assert max(row["peak_rss_mib"], *row["worker_peak_rss_mib"]) < features_mib / 4


def test_the_committed_one_process_million_example_record_streams_in_one_process():
    """The record of ``bench scale --gram-only --gram-sizes 1000000 --workers 1``: P = 10^6 streamed in the calling
    process alone, certified, its peak memory far below the 7.4 GB that the features [10^6, 231, 4] would take and
    below the 4 GiB that a reader's laptop spares."""
    row = _million_example_row("scale_million_one_process", workers=1)
    assert "worker_peak_rss_mib" not in row and row["features_s"] is not None
    features_mib = 8.0 * row["P"] * row["D"] / 2**20
    assert row["peak_rss_mib"] < min(features_mib / 4, 4 * 1024)


def test_the_committed_image_record_reaches_a_hundred_thousand_episodes_at_the_authors_size():
    """The record of ``bench scale --task image``: the one-shot task at the authors' model size (D = 3072, timing only),
    streamed Gram rows up to P = 10^5, certified, each within 4 GiB; the dense route beside it where it fits."""
    record = read_record(committed_record_path("scale_image"))
    report = record["report"]
    assert "untrained attention" in report["note"]
    gram = [r for r in report["rows"] if r["route"] == "gram"]
    assert max(r["P"] for r in gram) == 100_000 and all(r["D"] == 3072 and r["converged"] for r in gram)
    assert all(r["peak_rss_mib"] < 4 * 1024 for r in report["rows"])
    assert {c["P"] for c in report["comparisons"]} == {r["P"] for r in report["rows"] if r["route"] == "dense"}
