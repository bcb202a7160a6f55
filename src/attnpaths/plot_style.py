"""The book's colours: one categorical palette for every figure, safe for colour-blind readers.

The palette is Okabe and Ito's (2008, "Color Universal Design"), chosen so that its colours stay apart for
readers with protanopia, deuteranopia or tritanopia; ``tests/library/test_plot_style.py`` checks every pair
of it, with black and :data:`GREY`, after simulating each deficiency (Machado, Oliveira and Fernandes 2009).
A figure takes its series colours from here by name, so that "blue" in a caption is the same blue
everywhere: the theory is blue, a GP limit red (vermillion), samples black.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

BLUE = "#0072B2"
ORANGE = "#E69F00"
GREEN = "#009E73"
"""Okabe-Ito's bluish green."""
VERMILLION = "#D55E00"
"""Okabe-Ito's vermillion, the book's red."""
PURPLE = "#CC79A7"
"""Okabe-Ito's reddish purple."""
SKY_BLUE = "#56B4E9"
YELLOW = "#F0E442"
BLACK = "#000000"
GREY = "#595959"
"""A dark grey (sRGB 0.35) for reference series drawn beside the palette; lighter greys come too close to
:data:`GREEN` for deuteranopia."""

CATEGORICAL = (BLUE, ORANGE, GREEN, VERMILLION, PURPLE, SKY_BLUE, YELLOW, BLACK)
"""The series colours in the order a figure with several unnamed series takes them."""

NEUTRALS = (BLACK, GREY)
"""Colours of reference series (samples, random baselines, identity lines) drawn with the palette."""


def palette_cycle(function: Callable) -> Callable:
    """Make ``function`` draw with :data:`CATEGORICAL` as matplotlib's colour cycle: the axes it creates give
    their series without a colour of their own the palette's colours, in its order, instead of matplotlib's
    default ``tab10`` (whose red and green, blue and purple, collide for colour-blind readers)."""

    @functools.wraps(function)
    def drawn_with_the_palette(*args, **kwargs):
        from matplotlib import pyplot as plt
        from matplotlib.rcsetup import cycler  # matplotlib's own (cycler is its dependency, not ours)

        with plt.rc_context({"axes.prop_cycle": cycler(color=CATEGORICAL)}):
            return function(*args, **kwargs)

    drawn_with_the_palette.palette_cycle = True
    return drawn_with_the_palette
