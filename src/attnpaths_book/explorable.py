"""Explorable figures of the HTML book: Bokeh standalone documents that a reader changes with widgets, without a
server or network (BokehJS is served from the book's ``_static``, :mod:`attnpaths_book.local_bokeh`).

:func:`grid_figure` draws the arrays of one point of a precomputed grid, chosen by a slider per numeric axis and a
selector per categorical one; :func:`toggle_figure` draws series that checkboxes show and hide. Both embed exactly
the arrays they are given (the chapter's recorded results) and work from the keyboard. The static matplotlib
figure stays in the book beside each; the interactive one is hidden in print.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

MAX_DOCUMENT_BYTES = 5_000_000
"""The largest embedded document (script and div) of one figure."""

STYLE = (
    "<style>.attnpaths-explorable { overflow-x: clip; }"
    "@media print { .attnpaths-explorable, .attnpaths-explorable-caption { display: none !important; } }</style>"
)
"""The figures' page style. Printed pages (the PDF) show the static figure only; the interactive one and its
caption are hidden. On screen a figure is clipped to its column: Bokeh's layout can round a stretched figure
one pixel wider than the column after a widget changes it, which would give the output a scrollbar."""

MARKER = "attnpaths-explorable"
"""The class of the element around every figure (:mod:`attnpaths_book.local_bokeh` loads BokehJS on the pages
that hold one)."""


@dataclass(frozen=True)
class GridAxis:
    """One axis of a precomputed grid and its widget.

    Attributes:
        key: the axis's short name, part of the widget's model name (``"<figure name>-<key>"``).
        title: the widget's title, e.g. ``"temperature T"``.
        values: the grid's values along the axis: numbers (a slider over them) or strings (a selector).
        initial: the position of the value shown first.
    """

    key: str
    title: str
    values: tuple
    initial: int = 0

    def __post_init__(self):
        values = tuple(self.values)
        if not values:
            raise ValueError(f"values of axis {self.key!r} must not be empty")
        if len({isinstance(v, str) for v in values}) != 1:
            raise ValueError(f"values of axis {self.key!r} must be all numbers or all strings, got {values!r}")
        if not 0 <= self.initial < len(values):
            raise ValueError(f"initial of axis {self.key!r} must be in [0, {len(values) - 1}], got {self.initial!r}")
        object.__setattr__(self, "values", values)

    @property
    def categorical(self) -> bool:
        """Whether the axis is a selector (strings) rather than a slider (numbers)."""
        return isinstance(self.values[0], str)


@dataclass(frozen=True)
class Explorable:
    """A standalone Bokeh document for the HTML book.

    Attributes:
        name: the figure's name (prefix of its models' names).
        layout: the Bokeh layout (figure and widgets).
        alt: the text alternative of the figure (the ``aria-label`` of its element).
        markup: the HTML that embeds it (:meth:`html`).
    """

    name: str
    layout: object
    alt: str
    markup: str

    def html(self) -> str:
        """The HTML of the figure: its document's script and div (``bokeh.embed.components``) inside an element
        of class :data:`MARKER` labelled by the alt text, and :data:`STYLE`."""
        return self.markup

    @property
    def size_bytes(self) -> int:
        """The size of the embedded document in bytes (UTF-8)."""
        return len(self.markup.encode())

    def show(self):
        """The figure as a notebook's HTML output (myst-nb renders it raw into the page)."""
        from IPython.display import HTML

        return HTML(self.markup)


def _embed(name: str, layout, alt: str) -> Explorable:
    from bokeh.embed import components

    script, div = components(layout)
    markup = (
        f'{STYLE}<div class="{MARKER}" id="{html.escape(name)}" role="figure" '
        f'aria-label="{html.escape(alt)}">{div}</div>{script}'
    )
    size = len(markup.encode())
    if size > MAX_DOCUMENT_BYTES:
        raise ValueError(f"the document of figure {name!r} must be at most {MAX_DOCUMENT_BYTES} bytes, got {size}")
    return Explorable(name, layout, alt, markup)


def _figure(name: str, title: str, x_label: str, y_label: str, height: int, figure_options: Mapping | None):
    from bokeh.plotting import figure

    options = dict(sizing_mode="stretch_width", height=height, tools="pan,wheel_zoom,box_zoom,reset,save,hover")
    options.update(figure_options or {})
    return figure(title=title, x_axis_label=x_label, y_axis_label=y_label, name=name, **options)


def _leaf(value, what: str) -> list:
    """One grid point's column: a 1-D list of floats or of strings (``None``, a results file's missing number, as
    ``nan``)."""
    array = np.asarray(value)
    if array.dtype == object and array.ndim == 1 and any(v is None for v in array):
        array = np.array([np.nan if v is None else v for v in array], dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{what} must hold a 1-D array at every grid point, got shape {array.shape}")
    if array.dtype.kind in "US":
        return [str(v) for v in array]
    if array.size and array.dtype.kind not in "biuf":
        raise ValueError(f"{what} must hold numbers or strings, got {array.dtype}")
    return array.astype(np.float64).tolist()


def _cells(value, shape: tuple, what: str) -> list:
    """The columns at every grid point, flat in C order (the last axis fastest)."""
    if not shape:
        return [_leaf(value, what)]
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != shape[0]:
        length = len(value) if hasattr(value, "__len__") else "no length"
        raise ValueError(
            f"{what} must have the grid's shape {list(shape)} (then the points), got {length} along an axis of {shape[0]}"
        )
    return [cell for item in value for cell in _cells(item, shape[1:], what)]


def _equal_lengths(columns: Mapping[str, list], what: str, where: str = "") -> None:
    lengths = {c: len(v) for c, v in columns.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"{what} must have columns of equal length{where}, got {lengths}")


GRID_CALLBACK = """
let index = 0;
for (let k = 0; k < widgets.length; k++) {
    const w = widgets[k];
    const position = categorical[k] ? w.options.indexOf(w.value) : Math.round(w.value);
    index = index * sizes[k] + position;
}
for (let s = 0; s < drawn.length; s++) {
    const data = {};
    for (const column of Object.keys(grids[s].data)) data[column] = grids[s].data[column][index];
    drawn[s].data = data;
}
"""


def grid_figure(
    name: str,
    axes: Sequence[GridAxis],
    data: Mapping[str, Mapping[str, object]],
    draw: Callable,
    *,
    title: str,
    x_label: str,
    y_label: str,
    alt: str,
    figure_options: Mapping | None = None,
) -> Explorable:
    """A figure whose drawn arrays are chosen among a precomputed grid's by a widget per axis of the grid.

    Args:
        name: the figure's name: its models are named ``"<name>-<axis key>"`` (widgets), ``"<name>-<source>"``
            (what is drawn) and ``"<name>-grid-<source>"`` (every grid point's arrays).
        axes: the grid's axes, slowest first (:class:`GridAxis`).
        data: ``{source: {column: values}}``; ``values`` has the grid's shape ``[len(axes[0].values), ...]``
            followed by the points of that source at that grid point (numbers or strings; the columns of one
            source have equal lengths at each grid point, which may differ between grid points).
        draw: ``draw(figure, sources)`` adds the glyphs, ``sources`` the ``{source: ColumnDataSource}`` drawn.
        title, x_label, y_label: of the figure; alt: its text alternative.
        figure_options: further options of ``bokeh.plotting.figure`` (e.g. ``x_axis_type="log"``).

    Raises:
        ValueError: ``axes`` empty or with repeated keys, ``data`` empty or whose values do not have the grid's
            shape, columns of one source of unequal length at a grid point, a document above
            :data:`MAX_DOCUMENT_BYTES`.
    """
    from bokeh.layouts import column
    from bokeh.models import ColumnDataSource, CustomJS, CustomJSTickFormatter, Select, Slider

    axes = list(axes)
    if not axes or not all(isinstance(a, GridAxis) for a in axes):
        raise ValueError("axes must be a non-empty sequence of GridAxis")
    if len({a.key for a in axes}) != len(axes):
        raise ValueError(f"axes must have distinct keys, got {[a.key for a in axes]}")
    if not data:
        raise ValueError("data must name at least one source")
    shape = tuple(len(a.values) for a in axes)
    grids = {}
    for source, columns in data.items():
        if not columns:
            raise ValueError(f"data[{source!r}] must have at least one column")
        cells = {c: _cells(v, shape, f"data[{source!r}][{c!r}]") for c, v in columns.items()}
        for point in range(int(np.prod(shape))):
            _equal_lengths({c: v[point] for c, v in cells.items()}, f"data[{source!r}]", " at every grid point")
        grids[source] = cells
    start = int(np.ravel_multi_index([a.initial for a in axes], shape))
    drawn = {
        s: ColumnDataSource({c: v[start] for c, v in cells.items()}, name=f"{name}-{s}") for s, cells in grids.items()
    }
    stores = [ColumnDataSource(cells, name=f"{name}-grid-{s}") for s, cells in grids.items()]
    plot = _figure(f"{name}-plot", title, x_label, y_label, 380, figure_options)
    draw(plot, drawn)
    widgets = []
    for axis in axes:
        if axis.categorical:
            widget = Select(title=axis.title, options=list(axis.values), value=axis.values[axis.initial])
        else:
            widget = Slider(
                title=axis.title,
                start=0,
                end=max(len(axis.values) - 1, 1),
                step=1,
                value=axis.initial,
                disabled=len(axis.values) == 1,
                format=CustomJSTickFormatter(
                    args=dict(values=[float(v) for v in axis.values]), code="return String(values[Math.round(tick)])"
                ),
                show_value=True,
                sizing_mode="stretch_width",
            )
        widget.name = f"{name}-{axis.key}"
        widgets.append(widget)
    args = dict(widgets=widgets, categorical=[a.categorical for a in axes], sizes=list(shape))
    callback = CustomJS(args=dict(**args, drawn=list(drawn.values()), grids=stores), code=GRID_CALLBACK)
    for widget in widgets:
        widget.js_on_change("value", callback)
    layout = column(*widgets, plot, sizing_mode="stretch_width", name=f"{name}-layout")
    return _embed(name, layout, alt)


TOGGLE_CALLBACK = """
const active = new Set(toggles.active);
for (let k = 0; k < renderers.length; k++) {
    for (const r of renderers[k]) r.visible = active.has(k);
}
"""


def toggle_figure(
    name: str,
    panels: Mapping[str, Mapping[str, Mapping[str, object]]],
    *,
    colors: Mapping[str, str],
    labels: Mapping[str, str] | None = None,
    dashed: Sequence[str] = (),
    title: str,
    x_label: str,
    y_label: str,
    alt: str,
    figure_options: Mapping | None = None,
    decorate: Callable | None = None,
    shown: Sequence[str] | None = None,
) -> Explorable:
    """Series in one or more panels, shown and hidden together by a group of checkboxes (one per series).

    Args:
        name: the figure's name: the checkboxes are ``"<name>-toggles"``, a series' data
            ``"<name>-<panel index>-<series>"``.
        panels: ``{panel title: {series: {"x": [n], "y": [n], optionally "low" and "high": [n] (a band)}}}``.
        colors: ``{series: colour}`` (any CSS colour, e.g. a matplotlib colour as hex); labels: ``{series:
            label}`` of the checkboxes (default the series' key); dashed: series drawn dashed.
        title, x_label, y_label: of the figure (with several panels, each panel's title is its key); alt: the
            text alternative.
        figure_options: further options of ``bokeh.plotting.figure``; decorate: ``decorate(figure)`` on every
            panel once drawn (e.g. an axis format), or None.
        shown: the series shown first (default all); the others start hidden, their checkboxes cleared.

    Raises:
        ValueError: no panels or series, a series without ``x`` and ``y`` of equal length, a band of another
            length, a series without a colour, a document above :data:`MAX_DOCUMENT_BYTES`.
    """
    from bokeh.layouts import column, row
    from bokeh.models import CheckboxGroup, ColumnDataSource, CustomJS, InlineStyleSheet

    if not panels or not all(panels.values()):
        raise ValueError("panels must hold at least one panel, each with at least one series")
    series = list(dict.fromkeys(s for by_series in panels.values() for s in by_series))
    missing = [s for s in series if s not in colors]
    if missing:
        raise ValueError(f"colors must give a colour to every series; missing: {missing}")
    labels = dict(labels or {})
    renderers = {s: [] for s in series}
    plots = []
    for p, (panel, by_series) in enumerate(panels.items()):
        plot = _figure(f"{name}-plot-{p}", panel if len(panels) > 1 else title, x_label, y_label, 360, figure_options)
        for s, columns in by_series.items():
            what = f"panels[{panel!r}][{s!r}]"
            if not {"x", "y"} <= set(columns):
                raise ValueError(f"{what} must have columns 'x' and 'y', got {sorted(columns)}")
            arrays = {c: _leaf(v, f"{what}[{c!r}]") for c, v in columns.items()}
            _equal_lengths(arrays, what)
            source, color, prefix = ColumnDataSource(arrays, name=f"{name}-{p}-{s}"), colors[s], f"{name}-{p}-{s}"
            if {"low", "high"} <= set(arrays):
                band = dict(source=source, fill_color=color, fill_alpha=0.1, name=f"{prefix}-band")
                renderers[s].append(plot.varea("x", "low", "high", **band))
            dash = "dashed" if s in dashed else "solid"
            renderers[s] += _line_and_points(plot, source, color, dash, 6, name=prefix)
        if decorate is not None:
            decorate(plot)
        plots.append(plot)
    shown = series if shown is None else [s for s in series if s in set(shown)]
    for s in series:
        for renderer in renderers[s]:
            renderer.visible = s in shown
    toggles = CheckboxGroup(
        labels=[labels.get(s, s) for s in series],
        active=[k for k, s in enumerate(series) if s in shown],
        inline=True,
        stylesheets=[InlineStyleSheet(css=".bk-input-group { flex-wrap: wrap; column-gap: 1em; }")],
    )
    toggles.name = f"{name}-toggles"
    toggles.js_on_change(
        "active", CustomJS(args=dict(toggles=toggles, renderers=[renderers[s] for s in series]), code=TOGGLE_CALLBACK)
    )
    layout = column(
        toggles, row(*plots, sizing_mode="stretch_width"), sizing_mode="stretch_width", name=f"{name}-layout"
    )
    return _embed(name, layout, alt)


# --------------------------------------------------------------------------------------------------------
# the book's explorable figures (each drawn from what its chapter recorded)


def _hex(color: str) -> str:
    """A matplotlib colour (``"tab:blue"``, ``"0.35"``) as ``#rrggbb``, for Bokeh."""
    from matplotlib.colors import to_hex

    return to_hex(color)


def _line_and_points(plot, source, color: str, dash: str, size: int, name=None, legend=None) -> list:
    """A series' line and markers, named ``<name>-line`` and ``<name>-points`` or in the legend as ``legend``."""
    label = {part: {"name": f"{name}-{part}"} if name else {"legend_label": legend} for part in ("line", "points")}
    return [
        plot.line("x", "y", source=source, color=color, line_width=2, line_dash=dash, **label["line"]),
        plot.scatter("x", "y", source=source, color=color, size=size, **label["points"]),
    ]


def _percent_axis(plot) -> None:
    from bokeh.models import NumeralTickFormatter

    plot.yaxis.formatter = NumeralTickFormatter(format="0%")  # the drawn numbers stay the recorded fractions


def hmc_accuracy_figure(record: Mapping, sampled: Mapping) -> Explorable:
    """The hmc chapter's test accuracy against the width ``N`` (sec-hmc-theory, sec-hmc-two-paths) for the
    finite-width theory, its GP limit and the sampled networks, with a selector over the task (number of paths)
    and a slider over the temperature ``T``.

    Args:
        record: the chapter's grid: ``{"widths": [n_w], "temperatures": [n_T], "temperature": the chapter's T,
            "tasks": {task: {"accuracy": [n_w, n_T], "gp": [n_T], ...}}}``.
        sampled: ``{task: {"N": [n_s], "accuracy": [n_s], "mc_sd": [n_s]}}`` the sampled networks at the
            chapter's temperature (drawn only there).
    """
    from bokeh.models import Whisker

    from attnpaths.experiments.plots import GP_COLOR, THEORY_COLOR

    widths = np.asarray(record["widths"], dtype=float)
    temperatures = [float(T) for T in record["temperatures"]]
    tasks = list(record["tasks"])
    here = temperatures.index(float(record["temperature"]))
    empty = {"x": [], "y": [], "low": [], "high": []}

    def at(task, t):
        points = sampled[task]
        if t != here:
            return empty
        accuracy, sd = np.asarray(points["accuracy"], dtype=float), np.asarray(points["mc_sd"], dtype=float)
        return {"x": points["N"], "y": accuracy, "low": accuracy - sd, "high": accuracy + sd}

    def grid(make):
        return {c: [[make(task, t)[c] for t in range(len(temperatures))] for task in tasks] for c in make(tasks[0], 0)}

    data = {
        "theory": grid(lambda task, t: {"x": widths, "y": np.asarray(record["tasks"][task]["accuracy"])[:, t]}),
        "gp": grid(lambda task, t: {"x": widths[[0, -1]], "y": [record["tasks"][task]["gp"][t]] * 2}),
        "sampled": grid(at),
    }

    def draw(plot, sources):
        theory, gp, points = _hex(THEORY_COLOR), _hex(GP_COLOR), "#000000"
        plot.line("x", "y", source=sources["theory"], color=theory, line_width=2, legend_label="theory")
        plot.scatter("x", "y", source=sources["theory"], color=theory, marker="x", size=10, legend_label="theory")
        plot.line("x", "y", source=sources["gp"], color=gp, line_width=2, legend_label="GP limit")
        plot.add_layout(Whisker(source=sources["sampled"], base="x", lower="low", upper="high", line_color=points))
        plot.scatter(
            "x", "y", source=sources["sampled"], color=points, size=7, legend_label="sampled (chapter's T only)"
        )
        plot.legend.location = "top_right"
        plot.xaxis.ticker = widths.tolist()  # the solved widths, not a log scale's decades
        _percent_axis(plot)

    axes = [GridAxis("task", "network", tuple(tasks), 0), GridAxis("T", "temperature T", tuple(temperatures), here)]
    return grid_figure(
        "hmc-accuracy",
        axes,
        data,
        draw,
        title="Test accuracy against width",
        x_label="width N",
        y_label="test accuracy",
        alt=(
            "Interactive line chart of test accuracy against width N on a log axis: the finite-width theory, its "
            "GP limit and, at the chapter's temperature only, the sampled networks; a selector chooses the network "
            "(four or two paths) and a slider the temperature T."
        ),
        figure_options=dict(x_axis_type="log"),
    )


def heat_map_figure(
    name: str,
    matrices,
    labels: Sequence[str],
    axes: Sequence[GridAxis],
    *,
    title: str,
    alt: str,
    entry: str = "U",
    axis_label: str = "path",
) -> Explorable:
    """Square matrices as a heat map (``RdBu``, each cell showing its value), one per point of a grid chosen by a
    widget per axis. The colour scale is ``+-max|matrix|`` over the whole grid, so colours compare between widget
    positions.

    Args:
        name: the figure's name (:func:`grid_figure`); matrices: ``[*grid, n, n]`` (the grid of ``axes``, slowest
            first); labels: ``[n]`` the names of the rows and columns; title, alt: of the figure; entry: the
            matrix's symbol in the colour bar and the hover text; axis_label: what the rows and columns are.
    """
    from bokeh.models import ColorBar, LinearColorMapper
    from matplotlib import colormaps

    matrices, names = np.asarray(matrices, dtype=float), [str(label) for label in labels]
    grid, n = tuple(len(axis.values) for axis in axes), len(names)
    if matrices.shape != (*grid, n, n):
        raise ValueError(
            f"matrices must have shape {[*grid, n, n]} (the grid, then the labels), got {list(matrices.shape)}"
        )
    cells = matrices.reshape(*grid, n * n)
    data = {
        "U": {
            "row": np.broadcast_to(np.array([names[i] for i in range(n) for _ in range(n)]), cells.shape),
            "col": np.broadcast_to(np.array([names[j] for _ in range(n) for j in range(n)]), cells.shape),
            "value": cells,
            "text": np.vectorize(lambda v: f"{v:.2f}", otypes=[str])(cells),
        }
    }
    limit = float(np.abs(matrices).max())
    palette = [_hex(c) for c in colormaps["RdBu"](np.linspace(0, 1, 256))]  # the static panels' map
    mapper = LinearColorMapper(palette=palette, low=-limit, high=limit)

    def draw(plot, sources):
        drawn = dict(source=sources["U"])
        plot.rect("col", "row", 1, 1, fill_color={"field": "value", "transform": mapper}, line_color="white", **drawn)
        plot.text(
            "col", "row", text="text", text_align="center", text_baseline="middle", text_font_size="11px", **drawn
        )
        plot.add_layout(ColorBar(color_mapper=mapper, title=entry), "right")
        plot.hover.tooltips = [("entry", f"{entry}[@row, @col]"), ("value", "@value")]
        plot.grid.visible = False

    return grid_figure(
        name,
        axes,
        data,
        draw,
        title=title,
        x_label=axis_label,
        y_label=axis_label,
        alt=alt,
        figure_options=dict(x_range=names, y_range=names[::-1], tools="hover,save", width=460, sizing_mode="fixed"),
    )


def pruning_curves_figure(
    curves: Mapping, *, shown: Sequence[str] | None = None, dashed: Sequence[str] = ("random", "best")
) -> Explorable:
    """The pruning chapter's curves: test accuracy after pruning ``k`` heads along every ranking, mean over training
    seeds with its confidence band, one panel per model, each ranking shown or hidden by its checkbox.

    Args:
        curves: ``{model label: {ranking: {"mean", "low", "high": [K + 1]}}}`` (accuracies as fractions).
        shown: the rankings shown first (default all; the others' checkboxes start cleared).
        dashed: rankings drawn dashed (the random expectation and the ceiling, as in the static figure).
    """
    from attnpaths.pruning.plots import COLORS
    from attnpaths.pruning.sweep import RANKING_NAMES

    panels = {
        model: {
            name: {"x": np.arange(len(c["mean"])), "y": c["mean"], "low": c["low"], "high": c["high"]}
            for name, c in by_ranking.items()
        }
        for model, by_ranking in curves.items()
    }
    rankings = list(dict.fromkeys(name for by_ranking in curves.values() for name in by_ranking))
    return toggle_figure(
        "pruning-curves",
        panels,
        decorate=_percent_axis,
        shown=shown,
        colors={name: _hex(COLORS[name]) for name in rankings},
        labels={name: RANKING_NAMES[name] for name in rankings},
        dashed=dashed,
        title="Test accuracy after pruning",
        x_label="heads pruned k",
        y_label="test accuracy",
        alt=(
            "Interactive line charts, one per model, of test accuracy against the number of heads pruned for every "
            "head ranking, with confidence bands; a checkbox per ranking shows or hides its curves."
        ),
    )


def learning_curves_figure(record: Mapping) -> Explorable:
    """The learning-curves chapter's test accuracy against the number of training examples ``P`` (log axis) for
    every curve (fixed width, fixed load, GP limit), with a selector over the training sets: each set's curves,
    or their mean with a band of one standard error.

    Args:
        record: ``{"sizes": [n_P], "accuracy": {curve: [n_sets, n_P]}, "mean": {curve: [n_P]}, "se": {curve:
            [n_P]}}`` as the chapter recorded it.
    """
    from bokeh.models import Band

    from attnpaths.experiments.learning_curve_plots import OKABE_ITO

    sizes = np.asarray(record["sizes"], dtype=float)
    names = list(record["accuracy"])
    num_sets = len(next(iter(record["accuracy"].values())))
    choices = ["mean over the sets", *(f"training set {s + 1}" for s in range(num_sets))]

    def column(name, choice):
        if choice == 0:
            mean, se = np.asarray(record["mean"][name], dtype=float), np.asarray(record["se"][name], dtype=float)
            return {"x": sizes, "y": mean, "low": mean - se, "high": mean + se}
        values = np.asarray(record["accuracy"][name][choice - 1], dtype=float)
        return {"x": sizes, "y": values, "low": values, "high": values}

    data = {
        name: {c: [column(name, i)[c] for i in range(len(choices))] for c in ("x", "y", "low", "high")}
        for name in names
    }

    def draw(plot, sources):
        for k, name in enumerate(names):
            source, color = sources[name], OKABE_ITO[k % len(OKABE_ITO)]
            plot.add_layout(
                Band(source=source, base="x", lower="low", upper="high", fill_color=color, fill_alpha=0.2, line_alpha=0)
            )
            _line_and_points(plot, source, color, ["solid", "dashed", "dotted", "dashdot"][k % 4], 7, legend=name)
        plot.legend.location = "bottom_right"
        plot.xaxis.ticker = sizes.tolist()  # the computed P, not a log scale's decades
        _percent_axis(plot)

    return grid_figure(
        "learning-curves",
        [GridAxis("set", "training sets", tuple(choices), 0)],
        data,
        draw,
        title="Test accuracy against the number of training examples",
        x_label="training examples P",
        y_label="test accuracy",
        alt=(
            "Interactive line chart of test accuracy against the number of training examples P on a log axis, one "
            f"line per curve ({', '.join(names)}); a selector shows the mean over the training sets with its band of "
            "one standard error, or one training set's curves."
        ),
        figure_options=dict(x_axis_type="log"),
    )
