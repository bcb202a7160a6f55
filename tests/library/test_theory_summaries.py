"""The numbers the chapter ``theory`` quotes about the approach of the order parameter to its GP value."""

import numpy as np
import pytest

from attnpaths.theory.claims import approach_summary


def test_approach_summary_reads_the_figure_and_the_far_widths_apart():
    widths, far = [10, 100, 1000], [10**5, 10**6]
    # slope -2 between the figure's first two widths, -0.5 to the third, exactly -1 beyond
    distance = np.array([1.0, 1e-2, 1e-2 * 10**-0.5])
    far_distance = distance[-1] * np.array([1e-2, 1e-3])
    summary = approach_summary(widths, distance, far, far_distance)
    assert summary["num_widths"] == 3 and summary["max_width"] == 1000
    assert summary["dist_small"] == 1.0 and summary["dist_large"] == pytest.approx(1e-2 * 10**-0.5)
    assert summary["slope_figure_min"] == pytest.approx(-2) and summary["slope_figure_max"] == pytest.approx(-0.5)
    assert summary["slope_sweep"] == pytest.approx(-0.5)
    assert summary["slope_far"] == pytest.approx(-1)
    assert (summary["far_first"], summary["far_last"]) == (10**5, 10**6)


def test_approach_summary_needs_matching_lengths():
    with pytest.raises(ValueError, match="far_distance"):
        approach_summary([10, 100], [1.0, 0.1], [1000, 10000], [0.01])
