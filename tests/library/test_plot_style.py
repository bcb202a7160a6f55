"""The book's categorical palette (attnpaths.plot_style) stays distinguishable for colour-blind readers.

Every pair of the palette's colours and its neutrals (black, grey) is simulated for protanopia, deuteranopia
and tritanopia with the matrices of Machado, Oliveira and Fernandes (2009, "A physiologically-based model for
simulation of color vision deficiency", IEEE TVCG 15(6)) at severity 1.0, applied to linear RGB, and compared
in CIELAB (D65) by the CIEDE2000 difference (Sharma, Wu and Dalal 2005). The figures take their series
colours from the palette only (checked on their sources), so every pair of colours used together in one
figure is among the pairs checked here.
"""

from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path

import numpy as np
import pytest

from attnpaths import plot_style

to_rgb = pytest.importorskip(
    "matplotlib.colors", reason="the figures' palette is read by matplotlib: pip install 'attnpaths[plots]'"
).to_rgb

MACHADO_2009 = {
    "protanopia": np.array(
        [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]]
    ),
    "deuteranopia": np.array(
        [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]]
    ),
    "tritanopia": np.array(
        [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.303900]]
    ),
    "normal vision": np.eye(3),
}
"""Machado et al. (2009), severity 1.0, acting on linear RGB."""

MIN_DELTA_E00 = 10.0
"""A CIEDE2000 difference of about 1 is just noticeable between two large patches side by side; the figures'
series are lines and markers a few pixels wide, matched to a legend entry elsewhere on the figure, which needs
an order of magnitude more, hence 10."""

SRGB_TO_XYZ = np.array(
    [[0.4124564, 0.3575761, 0.1804375], [0.2126729, 0.7151522, 0.0721750], [0.0193339, 0.1191920, 0.9503041]]
)
D65 = np.array([0.95047, 1.0, 1.08883])

PLOT_MODULES = (
    "attnpaths/diagrams.py",
    "attnpaths/theory/plots.py",
    "attnpaths/experiments/plots.py",
    "attnpaths/experiments/learning_curve_plots.py",
    "attnpaths/hmc/networks.py",
    "attnpaths/hmc/plots.py",
    "attnpaths/hmc/depth/plots.py",
    "attnpaths/oneshot/plots.py",
    "attnpaths/exchangeability/plots.py",
    "attnpaths/pruning/plots.py",
    "attnpaths/related/plots.py",
    "attnpaths_book/benchmark_plots.py",
)
"""The modules that draw the book's figures with categorical colours, all from the palette."""

CATEGORICAL_LITERAL = re.compile(r"""["'](?:tab:\w+|C\d|#[0-9A-Fa-f]{6})["']|get_cmap\(\s*["']tab""")


def linear_rgb(color) -> np.ndarray:
    """sRGB in [0, 1] -> linear RGB (the sRGB transfer function inverted)."""
    c = np.asarray(to_rgb(color), dtype=float)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def lab(linear: np.ndarray) -> np.ndarray:
    """Linear RGB -> CIELAB under D65."""
    t = SRGB_TO_XYZ @ np.clip(linear, 0.0, 1.0) / D65
    f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def delta_e00(lab1, lab2) -> float:
    """The CIEDE2000 colour difference (Sharma, Wu and Dalal 2005, eqs. 1-22)."""
    L1, a1, b1 = lab1
    L2, a2, b2 = lab2
    c_mean = (np.hypot(a1, b1) + np.hypot(a2, b2)) / 2
    g = 0.5 * (1 - np.sqrt(c_mean**7 / (c_mean**7 + 25.0**7)))
    a1p, a2p = (1 + g) * a1, (1 + g) * a2
    c1p, c2p = np.hypot(a1p, b1), np.hypot(a2p, b2)
    h1p = np.degrees(np.arctan2(b1, a1p)) % 360 if c1p else 0.0
    h2p = np.degrees(np.arctan2(b2, a2p)) % 360 if c2p else 0.0
    dh = 0.0 if c1p * c2p == 0 else (h2p - h1p + 180) % 360 - 180
    d_big_h = 2 * np.sqrt(c1p * c2p) * np.sin(np.radians(dh) / 2)
    l_mean, cp_mean = (L1 + L2) / 2, (c1p + c2p) / 2
    if c1p * c2p == 0:
        h_mean = h1p + h2p
    elif abs(h1p - h2p) <= 180:
        h_mean = (h1p + h2p) / 2
    else:
        h_mean = (h1p + h2p + (360 if h1p + h2p < 360 else -360)) / 2
    t = (
        1
        - 0.17 * np.cos(np.radians(h_mean - 30))
        + 0.24 * np.cos(np.radians(2 * h_mean))
        + 0.32 * np.cos(np.radians(3 * h_mean + 6))
        - 0.20 * np.cos(np.radians(4 * h_mean - 63))
    )
    rotation = (
        -np.sin(np.radians(60 * np.exp(-(((h_mean - 275) / 25) ** 2))))
        * 2
        * np.sqrt(cp_mean**7 / (cp_mean**7 + 25.0**7))
    )
    s_l = 1 + 0.015 * (l_mean - 50) ** 2 / np.sqrt(20 + (l_mean - 50) ** 2)
    s_c, s_h = 1 + 0.045 * cp_mean, 1 + 0.015 * cp_mean * t
    dl, dc, dh_term = (L2 - L1) / s_l, (c2p - c1p) / s_c, d_big_h / s_h
    return float(np.sqrt(dl**2 + dc**2 + dh_term**2 + rotation * dc * dh_term))


def seen(color, condition: str) -> np.ndarray:
    """The colour as a reader with ``condition`` sees it, in CIELAB."""
    return lab(MACHADO_2009[condition] @ linear_rgb(color))


def closest_pair(colors, condition: str) -> tuple[float, str, str]:
    """The smallest CIEDE2000 difference between two of ``colors`` seen with ``condition``, and the pair."""
    return min((delta_e00(seen(a, condition), seen(b, condition)), a, b) for a, b in itertools.combinations(colors, 2))


@pytest.mark.parametrize(
    ("lab1", "lab2", "expected"),
    [  # Sharma, Wu and Dalal (2005), Table 1, pairs 1, 2, 7 and 17
        ((50.0, 2.6772, -79.7751), (50.0, 0.0, -82.7485), 2.0425),
        ((50.0, 3.1571, -77.2803), (50.0, 0.0, -82.7485), 2.8615),
        ((50.0, 0.0, 0.0), (50.0, -1.0, 2.0), 2.3669),
        ((50.0, 2.5, 0.0), (73.0, 25.0, -18.0), 27.1492),
    ],
)
def test_ciede2000_matches_the_reference_data(lab1, lab2, expected):
    assert delta_e00(lab1, lab2) == pytest.approx(expected, abs=1e-4)
    assert delta_e00(lab2, lab1) == pytest.approx(expected, abs=1e-4)


def test_machado_matrices_keep_white_and_grey():
    # each row of the matrices sums to one: achromatic colours look the same to every reader
    for condition, matrix in MACHADO_2009.items():
        assert matrix.sum(axis=1) == pytest.approx(np.ones(3), abs=1e-5), condition
        assert delta_e00(seen("0.5", condition), seen("0.5", "normal vision")) < 0.01


@pytest.mark.parametrize("condition", list(MACHADO_2009))
def test_every_pair_of_the_palette_stays_apart(condition):
    colors = list(dict.fromkeys((*plot_style.CATEGORICAL, *plot_style.NEUTRALS)))
    difference, a, b = closest_pair(colors, condition)
    assert difference >= MIN_DELTA_E00, f"{a} and {b} differ by only {difference:.1f} (CIEDE2000) for {condition}"


@pytest.mark.parametrize(
    ("pair", "condition"),
    [
        (("#B22222", "#228B22"), "deuteranopia"),  # firebrick and forest green: a red and a green
        (("#D62728", "#2CA02C"), "deuteranopia"),  # matplotlib's tab:red and tab:green
        (("#1F77B4", "#9467BD"), "protanopia"),  # tab:blue and tab:purple, the paths d and a2 before
    ],
)
def test_the_check_rejects_pairs_that_colour_blind_readers_confuse(pair, condition):
    # (pure #FF0000 and #00FF00 are told apart by lightness alone, 19 for deuteranopia: a red and a green of
    # similar lightness are what these readers confuse)
    difference, _, _ = closest_pair(pair, condition)
    assert difference < MIN_DELTA_E00
    assert closest_pair(pair, "normal vision")[0] >= MIN_DELTA_E00  # and only for them


def test_the_figures_take_their_colours_from_the_palette():
    src = Path(plot_style.__file__).resolve().parents[1]
    found = {module: CATEGORICAL_LITERAL.findall((src / module).read_text(encoding="utf-8")) for module in PLOT_MODULES}
    assert not {module: hits for module, hits in found.items() if hits}


def test_the_path_colours_are_the_palette():
    from attnpaths.hmc.networks import PATH_COLORS

    assert set(PATH_COLORS.values()) <= set(plot_style.CATEGORICAL)
    assert len(set(PATH_COLORS.values())) == len(PATH_COLORS)


def test_every_figure_function_draws_with_the_palette_as_its_colour_cycle():
    src = Path(plot_style.__file__).resolve().parents[1]
    undecorated = []
    for module in PLOT_MODULES:
        for node in ast.parse((src / module).read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("plot_"):
                names = {d.id for d in node.decorator_list if isinstance(d, ast.Name)}
                if "palette_cycle" not in names:
                    undecorated.append(f"{module}: {node.name}")
    assert not undecorated


def test_series_without_a_colour_take_the_palette_in_its_order():
    from matplotlib import pyplot as plt
    from matplotlib.colors import same_color

    @plot_style.palette_cycle
    def draw(series):
        fig, ax = plt.subplots()
        for k in range(series):
            ax.plot([0, 1], [k, k])
        return fig

    default = plt.rcParams["axes.prop_cycle"]
    fig = draw(len(plot_style.CATEGORICAL) + 1)
    drawn = [line.get_color() for line in fig.axes[0].lines]
    plt.close(fig)
    expected = [*plot_style.CATEGORICAL, plot_style.CATEGORICAL[0]]
    assert all(same_color(a, b) for a, b in zip(drawn, expected, strict=True))
    assert plt.rcParams["axes.prop_cycle"] == default  # nothing changed outside the figure
    assert draw.palette_cycle and draw.__wrapped__.__name__ == "draw"


def test_the_rankings_drawn_together_in_a_pruning_figure_have_their_own_colours():
    from attnpaths.pruning.claims import PRACTICAL_FAMILY, THEORY_FAMILY
    from attnpaths.pruning.plots import COLORS

    palette = {*plot_style.CATEGORICAL, *plot_style.NEUTRALS}
    assert set(COLORS.values()) <= palette
    # the pruning-curve figure: the paper's score, the theory and the practical score chosen on validation
    # images, the gradient importance, the random expectation and the best subset
    for theory, practical in itertools.product(THEORY_FAMILY, PRACTICAL_FAMILY):
        shown = list(dict.fromkeys(["theory", theory, practical, "michel", "random", "best"]))
        colors = [COLORS[name] for name in shown]
        assert len(set(colors)) == len(colors), shown
    assert COLORS["theory"] != COLORS["theory_removal"]  # the sensitivity figures draw these two
