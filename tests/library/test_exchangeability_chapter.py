"""The exchangeability chapter's package functions: the predicted best temperature of (ex-mse) and the figures."""

import numpy as np
import pytest

from attnpaths.exchangeability.convergence import BandwidthResult, CmeComparisonResult, LengthConvergenceResult
from attnpaths.exchangeability.erm import ErmResult
from attnpaths.exchangeability.estimators import predicted_attention_mse, predicted_best_temperature
from attnpaths.exchangeability.representation import ConceptPosteriorResult, GaussianRepresentationResult
from attnpaths.exchangeability.transfer import TransferResult

SIGMA = np.array([[1.0, 0.3], [0.3, 0.5]])
QUERY = np.array([0.5, -0.3])


@pytest.fixture
def plots(plt):
    """The chapter's figure functions (:mod:`attnpaths.exchangeability.plots`), which need the plots extra; ``plt``
    closes their figures after the test."""
    from attnpaths.exchangeability import plots

    return plots


# --------------------------------------------------------------------------------------------------------
# predicted_best_temperature


@pytest.mark.parametrize("length", [16, 64, 4096])
def test_best_temperature_is_the_minimum_of_the_predicted_error(length):
    inv = np.linalg.inv(SIGMA)

    def grid_minimum(grid):
        return grid[int(np.argmin([predicted_attention_mse(b * inv, QUERY, SIGMA, 0.5, length) for b in grid]))]

    coarse = grid_minimum(np.linspace(0.25, 2.0, 176))  # step 0.01, then step 1e-5 around its minimum
    best = grid_minimum(np.linspace(coarse - 0.01, coarse + 0.01, 2001))
    beta = predicted_best_temperature(QUERY, SIGMA, 0.5, length, bounds=(0.25, 2.0))
    assert beta == pytest.approx(best, abs=2e-5)


def test_best_temperature_is_softer_at_short_lengths_and_with_more_noise():
    betas = [predicted_best_temperature(QUERY, SIGMA, 0.5, L, bounds=(0.25, 2.0)) for L in (16, 256, 4096, 1e9)]
    assert all(np.diff(betas) > 0) and betas[0] < 0.9  # finite L: a softer attention trades bias for variance
    assert betas[-1] == pytest.approx(1.0, abs=1e-5)  # the variance term vanishes: the unbiased W = Sigma^-1
    noisier = predicted_best_temperature(QUERY, SIGMA, 2.0, 256, bounds=(0.25, 2.0))
    assert noisier < betas[1] - 0.01


def test_best_temperature_stays_in_its_bounds():
    assert predicted_best_temperature(QUERY, SIGMA, 0.5, 1e9, bounds=(0.25, 0.75)) == pytest.approx(0.75, abs=1e-5)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(bounds=(1.0, 0.5)), "bounds must satisfy"),
        (dict(bounds=(-1.0, 0.5)), "bounds must satisfy"),
        (dict(bounds=0.5), "bounds must be a pair"),
        (dict(bounds=(0.25, 2.0), length=[16, 32]), "length must be one positive number"),
        (dict(bounds=(0.25, 2.0), length=0), "length must be positive"),
        (dict(bounds=(0.25, 2.0), key_cov=np.zeros((2, 2))), "key_cov must be an invertible"),
        (dict(bounds=(0.25, 2.0), tolerance=0.0), "tolerance"),
    ],
)
def test_best_temperature_rejects_bad_arguments(kwargs, match):
    arguments = dict(query=QUERY, key_cov=SIGMA, value_noise=0.5, length=64) | kwargs
    with pytest.raises(ValueError, match=match):
        predicted_best_temperature(**arguments)


# --------------------------------------------------------------------------------------------------------
# figures: each draws its inputs, the E3 error bars are the standard errors over the repetitions


def _lines(ax):
    return [(line.get_xdata(), line.get_ydata()) for line in ax.get_lines()]


def _has_line(ax, x, y):
    return any(len(lx) == len(x) and np.allclose(lx, x) and np.allclose(ly, y) for lx, ly in _lines(ax))


def test_representation_figure_draws_the_risks_and_the_reliability_of_nonempty_bins(plots):
    lengths = np.array([1, 4, 16])
    risks = {
        name: np.array([1.0, 0.5, 0.2]) * k
        for k, name in enumerate(
            ["risk_posterior", "risk_posterior_theory", "risk_first_token", "risk_first_token_theory", "risk_flat_ls"],
            start=1,
        )
    }
    gaussian = GaussianRepresentationResult(
        lengths=lengths,
        **risks,
        perm_diff_posterior=np.zeros(3),
        perm_diff_flat_ls=np.ones(3),
        sq_error_posterior=np.ones((3, 2)),
        sq_error_first_token=np.ones((3, 2)),
        sq_error_flat_ls=np.ones((3, 2)),
    )
    concepts = ConceptPosteriorResult(
        lengths=lengths,
        accuracy=np.array([0.4, 0.7, 0.9]),
        confidence=np.array([0.45, 0.72, 0.88]),
        calibration_se=np.full(3, 0.01),
        accuracy_se=np.full(3, 0.01),
        perm_diff=np.zeros(3),
        bin_edges=np.linspace(0, 1, 5),
        bin_confidence=np.array([0.1, 0.4, 0.6, 0.9]),
        bin_accuracy=np.array([0.0, 0.35, 0.65, 0.92]),
        bin_count=np.array([0, 3, 5, 7]),
        means=np.zeros((5, 3)),
    )
    fig = plots.plot_representation(gaussian, concepts)
    axes = fig.axes
    assert len(axes) == 3
    assert all(_has_line(axes[0], lengths, risks[name]) for name in risks)
    assert _has_line(axes[1], lengths, concepts.accuracy) and _has_line(axes[1], lengths, concepts.confidence)
    assert _has_line(axes[2], [0.4, 0.6, 0.9], [0.35, 0.65, 0.92])  # the empty first bin is left out


def _convergence(W, lengths, rmse):
    rmse = np.asarray(rmse, float)
    return LengthConvergenceResult(
        lengths=np.asarray(lengths),
        W=W,
        mse=rmse**2,
        mse_cov=np.zeros(rmse.shape * 2),
        rmse=rmse,
        rmse_se=0.1 * rmse,
        rmse_predicted=1.1 * rmse,
        bias_floor=np.zeros(len(W)),
    )


def test_attention_convergence_figure_marks_the_error_at_the_best_temperature(plots):
    lengths = [16, 64, 256]
    e2 = _convergence(np.zeros((2, 2, 2)), lengths, [[0.4, 0.2, 0.1], [0.5, 0.45, 0.44]])
    temperatures = [0.5, 1.0, 1.5]
    short = _convergence(np.zeros((4, 2, 2)), [64], [[0.3], [0.2], [0.25], [0.19]])
    long = _convergence(np.zeros((3, 2, 2)), [4096], [[0.1], [0.05], [0.07]])
    fig = plots.plot_attention_convergence(e2, ["a", "b"], temperatures, short, 64, long, 4096, 0.8)
    left, right = fig.axes
    assert _has_line(left, lengths, e2.rmse[1]) and _has_line(left, lengths, e2.rmse_predicted[0])
    assert _has_line(right, temperatures, short.rmse_predicted[:3, 0])
    assert _has_line(right, temperatures, long.rmse_predicted[:, 0])
    assert _has_line(right, [0.8], [0.19])


def test_bandwidth_figure_draws_the_textbook_slopes_through_the_first_point(plots):
    lengths = np.array([64, 256, 1024])
    bandwidths = np.geomspace(0.02, 1.0, 4)
    result = BandwidthResult(
        lengths=lengths,
        bandwidths=bandwidths,
        mse=np.ones((3, 4)),
        mse_se=np.ones((3, 4)),
        h_star=np.array([0.3, 0.2, 0.15]),
        mse_star=np.array([0.01, 0.004, 0.001]),
        sq_error=np.ones((2, 3, 4)),
    )
    fig = plots.plot_bandwidth(result, -0.2, -0.8)
    right = fig.axes[1]
    assert _has_line(right, lengths, 0.3 * (lengths / 64) ** -0.2)
    assert _has_line(right, lengths, 0.01 * (lengths / 64) ** -0.8)
    assert "slope -0.20" in right.get_legend().get_texts()[0].get_text()


def test_cme_figure_draws_both_errors_and_the_floor(plots):
    lengths = np.array([64, 128])
    result = CmeComparisonResult(
        lengths=lengths,
        queries=np.zeros(7),
        mse_cme=np.array([0.02, 0.01]),
        mse_softmax=np.array([0.03, 0.025]),
        mse_cme_se=np.full(2, 1e-3),
        mse_softmax_se=np.full(2, 1e-3),
        sq_error_cme=np.ones((3, 2)),
        sq_error_softmax=np.ones((3, 2)),
    )
    ax = plots.plot_cme_vs_softmax(result, 0.022).axes[0]
    assert _has_line(ax, lengths, result.mse_cme) and _has_line(ax, lengths, result.mse_softmax)
    assert _has_line(ax, [0, 1], [0.022, 0.022])


def test_erm_figure_error_bars_are_standard_errors_over_the_repetitions(plots):
    rng = np.random.default_rng(0)
    excess = rng.normal(size=(2, 3, 5))
    results = {
        mode: ErmResult(
            mode=mode,
            lengths=np.array([8, 32]),
            sample_sizes=np.array([50, 200, 800]),
            W_reference=np.zeros((2, 2, 2)),
            reference_cov=np.zeros((2, 4, 2, 4)),
            approximation=np.array([0.5, 0.2]),
            approximation_cov=np.eye(2),
            approximation_se=np.array([0.05, 0.02]),
            temperature=np.array([0.6, 0.9]),
            temperature_se=np.array([0.01, 0.01]),
            excess=scale * excess,
            excess_mean=scale * excess.mean(axis=2),
        )
        for mode, scale in (("supervised", 1.0), ("masked", 2.0))
    }
    fig = plots.plot_erm(results)
    assert len(fig.axes) == 3
    assert _has_line(fig.axes[0], [8, 32], [0.4, 0.1])  # the shortfall 1 - c_L
    for ax, res in zip(fig.axes[1:], results.values()):
        for j, container in enumerate(ax.containers):
            segments = container.lines[2][0].get_segments()
            half_lengths = [(seg[1][1] - seg[0][1]) / 2 for seg in segments]
            expected = res.excess[j].std(axis=1, ddof=1) / np.sqrt(5)
            np.testing.assert_allclose(half_lengths, expected)
            np.testing.assert_allclose(container.lines[0].get_ydata(), res.excess_mean[j])


def test_transfer_figure_draws_ratio_prediction_and_both_directions(plots):
    kappa = np.array([1, 2, 4])
    result = TransferResult(
        condition_numbers=kappa,
        downstream_excess=np.array([[0.1, 0.1], [0.1, 0.2], [0.1, 0.4]]),
        ratio=np.array([1.0, 2.0, 4.0]),
        ratio_predicted=np.array([1.0, 1.9, 3.7]),
        pretrain_excess=np.array([0.01, 0.01, 0.01]),
        downstream_sq=np.ones((3, 2, 2)),
        pretrain_sq=np.ones((3, 2)),
    )
    left, right = plots.plot_transfer(result).axes
    assert _has_line(left, kappa, result.ratio) and _has_line(left, kappa, result.ratio_predicted)
    assert _has_line(right, kappa, result.downstream_excess[:, 1]) and _has_line(right, kappa, result.pretrain_excess)
