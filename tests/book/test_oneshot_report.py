"""Tests of attnpaths_book.oneshot_report (the one-shot chapter's descriptions and tables) and of the figure helpers
of attnpaths.oneshot.plots that the chapter calls: each table row and each plotted line carries the numbers it
is given, in the chapter's formats."""

import json
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import numpy as np
import torch
from matplotlib import pyplot as plt

from attnpaths.oneshot import plots
from attnpaths.oneshot.digits import DigitPairs
from attnpaths.oneshot.imagesets import ImageClasses, ImageDataset
from attnpaths.oneshot.sequences import Sequences
from attnpaths_book import oneshot_report as report


# ---------------------------------------------------------------------------------------------------- report
def test_stage_clock_charges_the_time_since_the_previous_lap(monkeypatch):
    ticks = iter([10.0, 12.5, 13.0, 20.0, 26.0])
    monkeypatch.setattr(report.time, "perf_counter", lambda: next(ticks))
    clock = report.StageClock()  # 10.0
    assert clock.lap("data") == 2.5  # 12.5
    assert clock.lap() == 0.5  # 13.0, not charged
    assert clock.lap("training") == 7.0  # 20.0
    assert clock.seconds == {"data": 2.5, "training": 7.0}
    assert clock.total() == 16.0  # 26.0


def _classes(n, alphabets, seed):
    images = np.random.default_rng(seed).uniform(size=(n, 2, 8, 8)).astype(np.float32)
    return ImageClasses(images, tuple(f"c{seed}-{k}" for k in range(n)), tuple(alphabets))


def test_data_set_description_counts_classes_and_alphabets_per_split():
    dataset = ImageDataset(
        _classes(4, ["Latin", "Greek", "Latin", "Greek"], 0),
        _classes(2, ["Coptic"] * 2, 1),
        _classes(3, ["N'Ko", "Armenian", "N'Ko"], 2),
        parameters={"source": "glyphs"},
    )
    digits = DigitPairs(np.zeros((2, 5, 8, 8), np.float32), np.zeros((7, 8, 8), np.float32), np.zeros(7, int), (0, 1))
    description = report.data_set_description(dataset, digits, instances_per_class=2, seed=3)
    assert description["source"] == "glyphs" and description["image_size"] == 8 and description["seed"] == 3
    assert description["splits"]["train"] == {"alphabets": ["Greek", "Latin"], "num_alphabets": 2, "num_classes": 4}
    assert description["splits"]["test"] == {"alphabets": ["Armenian", "N'Ko"], "num_alphabets": 2, "num_classes": 3}
    assert description["ood"] == {
        "digits": [0, 1],
        "support_per_digit": 5,
        "queries": 7,
        "source": "sklearn.datasets.load_digits",
    }


def test_training_cost_reports_measured_devices_and_the_command_for_the_others(tmp_path):
    record = {
        "benchmark": "training",
        "command": "bench",
        "finished_utc": "2025-01-02T03:04:05",
        "commit": "abcdef0123456",
        "commit_dirty": True,
        "machine": {"cpu_count": 2},
        "versions": {"torch": "2.9"},
        "report": {
            "device_name": None,
            "num_threads": 2,
            "median_step_s": 0.01234,
            "timed_steps": 20,
            "validation_s": 1.5,
            "config": {"steps": 41240},
            "num_validations": 42,
            "projected_total_hours": 3.21,
        },
    }
    cpu = tmp_path / "training_cpu.json"
    cpu.write_text(json.dumps(record))
    missing = tmp_path / "training_cuda.json"
    text, costs = report.training_cost({"cpu": cpu, "cuda": missing})
    first, second = text.split("\n")
    assert first == (
        "- CPU (2 CPU cores, 2 torch threads, torch 2.9, commit abcdef0123 with local changes, 2025-01-02): "
        "0.0123 s a step (median of 20), 1.5 s a validation pass; 41240 steps and 42 validations: "
        "**3.21 hours**."
    )
    assert second.startswith(
        "- CUDA: not measured yet (`python -m attnpaths_book bench training --device cuda --output "
    )
    assert costs == {
        "cpu": {"median_step_s": 0.01234, "validation_s": 1.5, "projected_total_hours": 3.21, "commit": "abcdef0123456"}
    }


def _selection(temperatures, test, validation):
    return {
        "temperature": np.array(temperatures),
        "accuracy": {"test": np.array(test), "validation": np.array(validation)},
    }


def test_temperature_table_has_a_row_per_width_and_one_for_the_gp_limit():
    table = report.temperature_table(
        [10, 100],
        _selection([0.5, 1.0], [0.86, 0.85], [0.9, 0.875]),
        _selection([0.25, 1.0], [0.88, 0.85], [0, 0]),
        _selection([0.25], [0.84], [0.8125]),
        _selection([0.1], [0.845], [0]),
    )
    assert table.split("\n") == [
        "| N | T (validation) | A test | A validation | T (test, authors' rule) | A test |",
        "|---|---|---|---|---|---|",
        "| 10 | 0.5 | 86.0 % | 90.0 % | 0.25 | 88.0 % |",
        "| 100 | 1 | 85.0 % | 87.5 % | 1 | 85.0 % |",
        "| GP | 0.25 | 84.0 % | 81.2 % | 0.1 | 84.5 % |",
    ]


def test_sampler_table_and_stage_table():
    diagnostics = {
        "num_chains": 2,
        "num_samples": 20,
        "num_warmup": 10,
        "min_predictor_ess": 12.4,
        "median_predictor_ess": 30.6,
        "max_predictor_rhat": 1.0123,
        "min_U_ess": 8.5,
        "wall_time_s": 3.14,
    }
    table = report.sampler_table({10: SimpleNamespace(diagnostics=diagnostics)}, [0.5])
    assert table.split("\n")[2] == "| 10 | 0.5 | 2 x 20 (10) | 12 / 31 | 1.012 | 8 | 3.1 |"
    stages = report.stage_table({"data": 1.26, "episodes_and_path_features": 0.04})
    assert stages.split("\n") == [
        "| stage | wall time (s) |",
        "|---|---|",
        "| data | 1.3 |",
        "| episodes and path features | 0.0 |",
    ]


# ----------------------------------------------------------------------------------------------------- plots
def _episodes(n=6, size=8, tokens=12):
    rng = np.random.default_rng(0)
    return Sequences(
        torch.from_numpy(rng.standard_normal((n, 5, tokens))),
        torch.tensor([1.0] * (n // 2) + [-1.0] * (n // 2)),
        rng.uniform(size=(n, 3, size, size)),
        np.tile([0, 1, 2], (n, 1)),
        np.zeros((n, 3), int),
    )


def test_task_example_holds_the_episodes_that_plot_task_shows():
    episodes = _episodes()
    example = plots.task_example(episodes)
    assert example["episodes"] == [0, 3, 1] == plots.task_episodes(6)
    # exact on any CPU (here and below): the example holds copies of the episodes
    np.testing.assert_array_equal(example["images"], episodes.images[[0, 3, 1]])
    assert example["y"].tolist() == [1.0, -1.0, 1.0]
    assert torch.equal(example["x"], episodes.x[0])


def test_accuracy_plots_draw_the_numbers_they_are_given():
    fig = plots.plot_accuracy_vs_width(
        [10, 100, 1000],
        [0.8, 0.85, 0.84],
        theory_test_rule=[0.82, 0.86, 0.85],
        gp=0.7,
        gp_test_rule=0.72,
        sampled_widths=[10, 100],
        sampled=[0.79, 0.86],
        sampled_sd=[0.01, 0.02],
    )
    lines = {line.get_label(): line.get_ydata() for line in fig.axes[0].get_lines()}
    np.testing.assert_allclose(lines["RN, theory"], [80, 85, 84])
    np.testing.assert_allclose(lines["RN, theory, T chosen on test"], [82, 86, 85])
    np.testing.assert_allclose(lines["GP"], [70, 70])
    np.testing.assert_allclose(lines["GP, T chosen on test"], [72, 72])
    plt.close(fig)
    fig = plots.plot_ood_accuracy([10, 100], [0.9, 0.95], gp=0.6, gd_model=0.75)
    lines = {line.get_label(): line.get_ydata() for line in fig.axes[0].get_lines()}
    np.testing.assert_allclose(lines["GD model"], [75, 75])
    np.testing.assert_allclose(lines["GP"], [60, 60])
    assert fig.axes[0].get_legend() is not None
    plt.close(fig)


def test_order_parameter_comparison_shares_one_scale_for_theory_and_samples():
    U_theory = np.array([[1.0, -0.2], [-0.2, 0.5]])
    U_sampled = np.array([[1.3, 0.1], [0.1, 0.4]])
    U_gd = np.array([[20.0, 5.0], [5.0, 8.0]])
    fig = plots.plot_order_parameter_comparison(U_theory, U_sampled, U_gd, ("1,1", "1,2"), width=10)
    images = [ax.get_images()[0] for ax in fig.axes if ax.get_images()]
    assert [im.get_clim() for im in images] == [(-1.3, 1.3), (-1.3, 1.3), (-20.0, 20.0)]
    assert [ax.get_title() for ax in fig.axes[:3]] == ["theory, N=10", "sampled, N=10", "gradient descent"]
    plt.close(fig)


def _little_loss():
    """A :class:`attnpaths.oneshot.pruning.LittleLoss` of two values of k, two fine-tuning seeds."""
    from attnpaths.oneshot.pruning import LittleLoss

    a = np.array
    return LittleLoss(
        ks=(1, 2),
        num_episodes=400,
        num_seeds=2,
        base_accuracy=0.83,
        base_se=0.019,
        score_sets=[["(1)2"], ["(1)2", "(2)1"]],
        pruned_accuracy=a([0.81, 0.75]),
        pruned_difference=a([-0.02, -0.08]),
        pruned_se=a([0.007, 0.012]),
        random_accuracy=a([0.79, 0.70]),
        minus_random=a([0.02, 0.05]),
        minus_random_se=a([0.006, 0.01]),
        best_accuracy=a([0.82, 0.78]),
        best_sets=[["(2)3"], ["(1)1", "(2)3"]],
        minus_best=a([-0.01, -0.03]),
        minus_best_se=a([0.004, 0.008]),
        tuned_accuracy=a([[0.82, 0.83], [0.80, 0.81]]),
        tuned_difference=a([-0.005, -0.025]),
        tuned_se=a([0.008, 0.011]),
        tuned_df=a([799.0, 2.3]),
        control_accuracy=a([0.84, 0.85]),
        control_difference=0.015,
        control_se=0.007,
        losses={0: np.zeros((2, 3)), 1: np.zeros((2, 3)), 2: np.zeros((2, 3))},
    )


def test_little_loss_table_and_figure_carry_the_numbers_they_are_given():
    ll = _little_loss()
    rows = report.little_loss_table(ll).split("\n")
    assert len(rows) == 4 and "fine-tuned (mean of 2 seeds)" in rows[0]
    assert rows[3] == (
        "| 2 | (1)2, (2)1 | 75.0 % | -8.0 ± 1.2 | 80.5 % | -2.5 ± 1.1 | 70.0 % (+5.0 ± 1.0) | "
        "78.0 %: (1)1, (2)3 (-3.0 ± 0.8) |"
    )
    fig = plots.plot_little_loss(
        ll.base_accuracy,
        ll.base_se,
        0.03,
        [0.83, 0.81, 0.75, 0.6],
        [0.83, 0.79, 0.70, 0.55],
        [0.83, 0.82, 0.78, 0.65],
        ks=ll.ks,
        tuned=ll.tuned_accuracy.mean(axis=1),
        tuned_se=ll.tuned_se,
        pruned_se=ll.pruned_se,
        control=ll.control_accuracy.mean(),
        control_se=ll.control_se,
    )
    lines = {line.get_label(): line.get_ydata() for line in fig.axes[0].get_lines()}
    np.testing.assert_allclose(lines["score order, no fine-tuning"], [83, 81, 75, 60])
    np.testing.assert_allclose(lines["random order (exact expectation)"], [83, 79, 70, 55])
    np.testing.assert_allclose(lines["best set of k heads (optimum)"], [83, 82, 78, 65])
    np.testing.assert_allclose(lines["unpruned minus the margin"], [80, 80])
    bars = {c.get_label(): np.asarray(c.lines[0].get_ydata(), dtype=float) for c in fig.axes[0].containers}
    np.testing.assert_allclose(bars["score order, briefly fine-tuned"], [82.5, 80.5])
    np.testing.assert_allclose(bars["unpruned, same fine-tuning (control)"], [84.5])
    assert fig.axes[0].get_legend() is not None
    plt.close(fig)
