"""The related-results chapter's package functions: per-network log-residual ratios, the first layer below a
residual, and the figures R1-R5."""

import numpy as np
import pytest

from attnpaths.related.bayesian_attention import BayesianAttentionResult
from attnpaths.related.lipschitz import ScalingResult, SequenceLengthResult
from attnpaths.related.measures import MeasureResult
from attnpaths.related.rank_collapse import RankCollapseResult, first_layer_below, network_log_ratios


@pytest.fixture
def plots(plt):
    """The chapter's figure functions (:mod:`attnpaths.related.plots`), which need the plots extra; ``plt``
    closes their figures after the test."""
    from attnpaths.related import plots

    return plots


# --------------------------------------------------------------------------------------------------------
# network_log_ratios, first_layer_below

PURE = np.array(
    [
        [0.9, 0.08, 0.08**3, 0.08**9, 1e-16, 0.0],  # two ratios of 3, then below machine precision
        [0.5, 0.08, 0.08**2, 0.08**4, 0.08**8, 0.08**16],  # three ratios of 2; 0.08**16 ~ 3e-18 is below 1e-12
        [0.9, 0.8, 0.7, 0.6, 0.5, 0.4],  # never in the asymptotic regime: no ratio
    ]
)


def test_network_log_ratios_are_each_rows_ratios_in_order():
    ratios = network_log_ratios(PURE)
    assert [r.size for r in ratios] == [2, 3, 0]
    np.testing.assert_allclose(ratios[0], [3.0, 3.0])
    np.testing.assert_allclose(ratios[1], [2.0, 2.0, 2.0])
    # a narrower regime keeps fewer ratios: those starting at r = 0.08 > 0.06 go
    assert [r.size for r in network_log_ratios(PURE, below=0.06)] == [1, 2, 0]
    assert [r.size for r in network_log_ratios(PURE, above=1e-15)] == [2, 3, 0]
    assert [r.size for r in network_log_ratios(PURE, above=1e-8)] == [1, 2, 0]


def test_network_log_ratios_need_one_network_per_row():
    with pytest.raises(ValueError, match="residuals must have 2 dimension"):
        network_log_ratios(PURE[0])


def test_first_layer_below_a_threshold_and_depth_plus_one_when_never():
    np.testing.assert_array_equal(first_layer_below(PURE, 1e-10), [4, 5, 6])  # 0.08**9 ~ 1.3e-10 is not below
    np.testing.assert_array_equal(first_layer_below(PURE, 1e-3), [2, 3, 6])
    np.testing.assert_array_equal(first_layer_below(PURE, 0.85), [1, 0, 1])
    assert first_layer_below(PURE).dtype.kind == "i"


@pytest.mark.parametrize("threshold", [0.0, 1.0, -1e-10, True, "1e-10"])
def test_first_layer_below_rejects_a_threshold_outside_the_unit_interval(threshold):
    with pytest.raises(ValueError, match="threshold must be a number in"):
        first_layer_below(PURE, threshold)


# --------------------------------------------------------------------------------------------------------
# figures: each draws its inputs


def _lines(ax):
    return [(np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)) for line in ax.get_lines()]


def _has_line(ax, x, y):
    return any(len(lx) == len(x) and np.allclose(lx, x) and np.allclose(ly, y) for lx, ly in _lines(ax))


def test_rank_collapse_figure_floors_the_pure_residuals_and_draws_every_ratio(plots):
    skip = np.full_like(PURE, 0.3)
    fig = plots.plot_rank_collapse(RankCollapseResult(residual_pure=PURE, residual_skip=skip))
    left, right = fig.axes
    layers = np.arange(6)
    assert _has_line(left, layers, [0.9, 0.08, 0.08**3, 0.08**9, 1e-16, 1e-17])  # 0 and 3e-18 are floored
    assert _has_line(left, layers, [0.5, 0.08, 0.08**2, 0.08**4, 0.08**8, 1e-17])
    assert _has_line(left, layers, PURE[2]) and _has_line(left, layers, skip[0])
    assert len(left.get_lines()) == 6  # pure and skip, for each of the 3 networks
    assert _has_line(right, np.arange(5), [3.0, 3.0, 2.0, 2.0, 2.0])


def test_input_scaling_figure_draws_both_maps(plots):
    scales = np.array([1.0, 2.0, 4.0])
    result = ScalingResult(
        scales=scales,
        dot_product=np.array([1.0, 4.0, 16.0]),
        l2=np.array([1.0, 1.1, 1.2]),
        dot_product_draws=np.ones((2, 3)),
        l2_draws=np.ones((2, 3)),
    )
    ax = plots.plot_input_scaling(result).axes[0]
    assert _has_line(ax, scales, result.dot_product) and _has_line(ax, scales, result.l2)
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")


def test_sequence_length_figure_draws_the_square_root_through_the_last_adversarial_point(plots):
    n = np.array([4, 16, 64])
    result = SequenceLengthResult(
        num_tokens=n,
        adversarial=np.array([1.0, 1.5, 3.0]),
        random=np.array([1.0, 1.2, 1.3]),
        random_draws=np.ones((2, 3)),
    )
    ax = plots.plot_sequence_length(result).axes[0]
    assert _has_line(ax, n, result.adversarial) and _has_line(ax, n, result.random)
    assert _has_line(ax, n, [0.75, 1.5, 3.0])  # 3 sqrt(n / 64)


def test_measures_figure_draws_ratios_and_distances(plots):
    n = np.array([8, 32, 128])
    result = MeasureResult(
        num_atoms=n,
        duplication_diff=0.0,
        ratio_max=np.array([0.5, 0.4, 0.3]),
        ratio_mean=np.array([0.3, 0.25, 0.2]),
        w1_mean=np.array([0.4, 0.2, 0.1]),
        delta_mean=np.array([0.1, 0.05, 0.02]),
        w1=np.ones((3, 2)),
        delta=np.ones((3, 2)),
    )
    left, right = plots.plot_measures(result).axes
    assert _has_line(left, n, result.ratio_max) and _has_line(left, n, result.ratio_mean)
    assert _has_line(right, n, result.w1_mean) and _has_line(right, n, result.delta_mean)
    assert left.get_ylim()[0] == 0


def test_context_window_figure_draws_the_geometric_windows_and_the_uniform_line(plots):
    rates = np.array([0.01, 0.1, 0.9])
    result = BayesianAttentionResult(
        max_weight_diff=0.0,
        max_output_diff=0.0,
        rates=rates,
        window=np.array([9.0, 5.0, 1.2]),
        window_uniform=9.5,
        window_trials=np.ones((2, 3)),
        window_uniform_trials=np.ones(2),
    )
    ax = plots.plot_context_window(result).axes[0]
    assert _has_line(ax, rates, result.window)
    assert _has_line(ax, [0, 1], [9.5, 9.5])
