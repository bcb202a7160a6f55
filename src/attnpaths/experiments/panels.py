"""Drawing steps that the chapters' figures share: a panel of series with its axes settings and legend."""

from __future__ import annotations

LOG_LOG = {"xscale": "log", "yscale": "log"}
"""The axes settings of a panel with both axes logarithmic."""


def draw_panel(ax, series, *, legend: float = 8, **settings):
    """Draw ``series`` on the axes ``ax`` in order, then apply ``settings`` (``ax.set``) and add a legend of font
    size ``legend``.

    Each series is ``(x, y, fmt, style)``: ``ax.plot(x, y, fmt, **style)``; ``ax.errorbar(x, y, fmt=fmt, **style)``
    when ``style`` has a ``yerr``; ``ax.axhline(y, ls=fmt, **style)`` when ``x`` is None.
    """
    for x, y, fmt, style in series:
        if x is None:
            ax.axhline(y, ls=fmt, **style)
        elif "yerr" in style:
            ax.errorbar(x, y, fmt=fmt, **style)
        else:
            ax.plot(x, y, fmt, **style)
    ax.set(**settings)
    ax.legend(fontsize=legend)
    return ax


def finished(fig):
    """``fig`` with its layout tightened (``tight_layout``), as a figure function returns it."""
    fig.tight_layout()
    return fig
