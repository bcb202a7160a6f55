"""The explorable figures (:mod:`attnpaths_book.explorable`): the builders' documents hold exactly the arrays
they are given and refuse grids of the wrong shape; in the built smoke book, opened from ``file://`` in headless
Chromium with every host unreachable, each page with a figure loads BokehJS from the book itself without a failed
request or a console error, and moving a widget draws exactly the chapter's recorded numbers."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from book_helpers import browser_or_skip
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from attnpaths.pruning.sweep import RANKING_NAMES
from attnpaths_book import explorable
from attnpaths_book.explorable import GridAxis, grid_figure, toggle_figure
from attnpaths_book.local_bokeh import FOLDER, bokehjs_files
from attnpaths_book.pdf import HARMLESS_CONSOLE_ERRORS

MAX_TOTAL_BYTES = 25_000_000
"""The most the explorable figures may add to the built HTML book (documents and BokehJS together)."""

FIGURES = {
    "book/hmc": ("hmc-accuracy", "hmc-U-4-paths"),
    "book/pruning": ("pruning-curves",),
    "book/learning_curves": ("learning-curves",),
    "book/pretrained": ("pretrained-U",),
}
"""The pages with explorable figures and the names of their figures."""

RTOL = 1e-12
"""Drawn against recorded numbers. Both are the same float64 values: the recorder writes them to JSON with
Python's shortest round-trip repr, the figure's document carries them the same way and JavaScript parses them
back to the same doubles, so equality is expected; the tolerance only keeps an error message readable."""


# --------------------------------------------------------------------------------------------------------
# the builders, without a browser


def _documents(markup: str) -> list[dict]:
    """The Bokeh documents embedded in ``markup`` (the JSON of each ``docs_json`` literal)."""
    found = re.findall(r"const docs_json = '(.*?)';\n", markup)
    assert found, "no embedded Bokeh document"
    return [doc for text in found for doc in json.loads(text).values()]


def _named(node, name: str):
    """The serialised model called ``name`` anywhere in a document's JSON (its first occurrence)."""
    if isinstance(node, dict):
        if node.get("type") == "object" and node.get("attributes", {}).get("name") == name:
            return node
        children = node.values()
    elif isinstance(node, list):
        children = node
    else:
        return None
    for child in children:
        hit = _named(child, name)
        if hit is not None:
            return hit
    return None


def _columns(model: dict) -> dict:
    """A serialised ColumnDataSource's data, ``{column: values}``."""
    return dict(model["attributes"]["data"]["entries"])


def _line(plot, sources):
    plot.line("x", "y", source=sources["curve"])


def _small_grid(rng):
    widths, temperatures = (10, 100, 1000), (0.003, 0.01, 0.03, 0.1)
    y = rng.random((len(widths), len(temperatures), 5))  # full-precision doubles: any rounding would show
    x = np.broadcast_to(np.arange(5.0), y.shape)
    axes = [GridAxis("N", "width N", widths), GridAxis("T", "temperature T", temperatures, 1)]
    return axes, y, x


def test_grid_document_holds_the_grid_exactly():
    axes, y, x = _small_grid(np.random.default_rng(0))
    figure = grid_figure("g", axes, {"curve": {"x": x, "y": y}}, _line, title="t", x_label="x", y_label="y", alt="a")
    (document,) = _documents(figure.html())
    stored = _columns(_named(document, "g-grid-curve"))
    assert stored["y"] == y.reshape(-1, 5).tolist()  # every grid point, C order, bit for bit
    assert stored["x"] == x.reshape(-1, 5).tolist()
    drawn = _columns(_named(document, "g-curve"))
    assert drawn["y"] == y[0, 1].tolist()  # the initial positions: the first width, the second temperature
    for key, values in (("N", (10, 100, 1000)), ("T", (0.003, 0.01, 0.03, 0.1))):
        widget = _named(document, f"g-{key}")["attributes"]
        assert widget["end"] == len(values) - 1 and widget.get("step", 1) == 1  # one grid point a step
    assert 'role="figure"' in figure.html() and 'aria-label="a"' in figure.html()
    assert "@media print" in figure.html() and "overflow-x: clip" in figure.html()


def test_grid_figure_allows_points_that_vary_between_grid_points():
    axes = [GridAxis("T", "temperature T", (0.01, 0.1))]
    data = {"curve": {"x": [[1.0, 2.0], []], "y": [[0.5, 0.25], []]}}  # drawn at the first temperature only
    figure = grid_figure("v", axes, data, _line, title="t", x_label="x", y_label="y", alt="a")
    (document,) = _documents(figure.html())
    assert _columns(_named(document, "v-grid-curve"))["y"] == [[0.5, 0.25], []]


def test_a_missing_number_is_drawn_as_a_gap():
    axes = [GridAxis("T", "temperature T", (0.01,))]
    figure = grid_figure(
        "m",
        axes,
        {"curve": {"x": [[1.0, 2.0]], "y": [[0.5, None]]}},
        _line,
        title="t",
        x_label="x",
        y_label="y",
        alt="a",
    )
    (document,) = _documents(figure.html())
    y = _columns(_named(document, "m-grid-curve"))["y"][0]
    assert y[0] == 0.5 and y[1] == {"type": "number", "value": "nan"}  # Bokeh's JSON for NaN


def test_toggle_document_holds_the_series_exactly():
    rng = np.random.default_rng(1)
    panels = {"left": {"a": {"x": np.arange(4.0), "y": rng.random(4)}, "b": {"x": np.arange(4.0), "y": rng.random(4)}}}
    figure = toggle_figure(
        "tg", panels, colors={"a": "#0072B2", "b": "#D55E00"}, title="t", x_label="x", y_label="y", alt="a"
    )
    (document,) = _documents(figure.html())
    for s in ("a", "b"):
        assert _columns(_named(document, f"tg-0-{s}"))["y"] == panels["left"][s]["y"].tolist()
    toggles = _named(document, "tg-toggles")["attributes"]
    assert toggles["labels"] == ["a", "b"] and toggles["active"] == [0, 1]


def test_documents_are_small_and_the_limit_is_enforced(monkeypatch):
    axes, y, x = _small_grid(np.random.default_rng(2))
    figure = grid_figure("s", axes, {"curve": {"x": x, "y": y}}, _line, title="t", x_label="x", y_label="y", alt="a")
    assert 0 < figure.size_bytes <= explorable.MAX_DOCUMENT_BYTES
    monkeypatch.setattr(explorable, "MAX_DOCUMENT_BYTES", figure.size_bytes - 1)
    with pytest.raises(ValueError, match="at most"):
        grid_figure("s", axes, {"curve": {"x": x, "y": y}}, _line, title="t", x_label="x", y_label="y", alt="a")


@pytest.mark.parametrize(
    "data, named",
    [
        ({"curve": {"x": np.zeros((3, 4, 5)), "y": np.zeros((4, 3, 5))}}, r"data\['curve'\]\['y'\]"),
        ({"curve": {"x": np.zeros((3, 4, 5)), "y": np.zeros((3, 4))}}, r"data\['curve'\]\['y'\]"),
        ({"curve": {"x": np.zeros((3, 4, 5)), "y": np.zeros((3, 4, 6))}}, r"data\['curve'\]"),
        ({}, "data"),
    ],
)
def test_grid_figure_refuses_a_grid_of_the_wrong_shape(data, named):
    axes, _, _ = _small_grid(np.random.default_rng(3))
    with pytest.raises(ValueError, match=named):
        grid_figure("bad", axes, data, _line, title="t", x_label="x", y_label="y", alt="a")


def test_grid_axes_and_toggle_series_are_checked():
    with pytest.raises(ValueError, match="initial"):
        GridAxis("T", "temperature T", (0.01, 0.1), 2)
    with pytest.raises(ValueError, match="values"):
        GridAxis("T", "temperature T", (0.01, "a"))
    with pytest.raises(ValueError, match="colors"):
        toggle_figure(
            "t", {"p": {"a": {"x": [0.0], "y": [1.0]}}}, colors={}, title="t", x_label="x", y_label="y", alt="a"
        )
    with pytest.raises(ValueError, match=r"panels\['p'\]\['a'\]"):
        toggle_figure(
            "t",
            {"p": {"a": {"x": [0.0, 1.0], "y": [1.0]}}},
            colors={"a": "k"},
            title="t",
            x_label="x",
            y_label="y",
            alt="a",
        )


# --------------------------------------------------------------------------------------------------------
# the built smoke book


def _results(built_book, chapter: str) -> dict:
    return json.loads((built_book.results_dir / f"{chapter}.json").read_text())["values"]


def _page_documents(built_book, docname: str) -> list[str]:
    html = (built_book.html_dir / f"{docname}.html").read_text()
    return re.findall(r"<script>\s*\(function\(\) \{.*?const docs_json = .*?</script>", html, re.S)


def test_figures_are_in_the_built_pages_and_small(built_book):
    total = sum(path.stat().st_size for path in (built_book.html_dir / "_static" / FOLDER).iterdir())
    assert total == sum(path.stat().st_size for path in bokehjs_files().values())
    for docname, names in FIGURES.items():
        html = (built_book.html_dir / f"{docname}.html").read_text()
        for name in names:
            assert f'id="{name}"' in html, f"{docname}: figure {name} missing"
        scripts = _page_documents(built_book, docname)
        assert len(scripts) == len(names)
        for script in scripts:
            assert len(script.encode()) <= explorable.MAX_DOCUMENT_BYTES
            total += len(script.encode())
        assert f"_static/{FOLDER}/bokeh-" in html  # BokehJS from the book, never a CDN
        assert "cdn.bokeh.org" not in html
    assert total <= MAX_TOTAL_BYTES
    other = (built_book.html_dir / "book" / "theory.html").read_text()
    assert f"_static/{FOLDER}/" not in other  # pages without a figure load nothing more


@pytest.fixture(scope="module")
def offline_browser():
    with browser_or_skip(reachable=[], logs=True) as session:  # file:// pages, no host at all
        yield session


MODEL = """
for (const doc of Bokeh.documents) { const m = doc.get_model_by_name(arguments[0]); if (m) return m; }
return null;
"""
DATA = (
    "const m = (function(name) {"
    + MODEL.replace("arguments[0]", "name")
    + "})(arguments[0]);"
    + ("return Object.fromEntries(Object.entries(m.data).map(([k, v]) => [k, Array.from(v)]));")
)
VALUE = "const m = (function(name) {" + MODEL.replace("arguments[0]", "name") + "})(arguments[0]); return m.value;"
SET = (
    "const m = (function(name) {" + MODEL.replace("arguments[0]", "name") + "})(arguments[0]); m.value = arguments[1];"
)


def _open(browser, url: str, figures: int) -> list[str]:
    """Load ``url``, wait for its Bokeh documents; returns its console errors and failed requests."""
    for kind in ("browser", "performance"):
        browser.get_log(kind)
    browser.get(url)
    WebDriverWait(browser, 60).until(
        lambda b: b.execute_script(
            "return !!(window.Bokeh && Bokeh.documents && Bokeh.documents.length >= arguments[0])", figures
        )
    )
    problems = [
        f"console: {entry['message']}"
        for entry in browser.get_log("browser")
        if entry["level"] == "SEVERE" and not any(known in entry["message"] for known in HARMLESS_CONSOLE_ERRORS)
    ]
    requests = {}  # the page's own requests (the browser's start page makes others, which are not the book's)
    for entry in browser.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        params = message.get("params", {})
        if message.get("method") == "Network.requestWillBeSent" and params.get("documentURL") == url:
            requests[params.get("requestId")] = params.get("request", {}).get("url", "?")
        elif message.get("method") == "Network.loadingFailed" and params.get("requestId") in requests:
            if not params.get("canceled"):
                problems.append(f"failed request {requests[params['requestId']][:200]}: {params.get('errorText')}")
    return problems


def _close(drawn, recorded, what):
    drawn, recorded = np.asarray(drawn, dtype=float), np.asarray(recorded, dtype=float)
    assert drawn.shape == recorded.shape, f"{what}: shape {drawn.shape} against {recorded.shape}"
    assert np.allclose(drawn, recorded, rtol=RTOL, atol=0), f"{what}: {drawn} against {recorded}"


def _url(built_book, docname):
    return (built_book.html_dir / f"{docname}.html").resolve().as_uri()


def test_hmc_figures_follow_their_widgets(built_book, offline_browser):
    browser = offline_browser
    problems = _open(browser, _url(built_book, "book/hmc"), 2)
    assert not problems, problems
    record = _results(built_book, "hmc")["explorable"]
    sampled = {"4 paths": _results(built_book, "hmc")["sampled_accuracy"]}
    sampled["2 paths"] = _results(built_book, "hmc")["two_path"]["sampled_accuracy"]
    here = record["temperatures"].index(record["temperature"])
    for task, entry in record["tasks"].items():
        browser.execute_script(SET, "hmc-accuracy-task", task)
        for t, T in enumerate(record["temperatures"]):
            browser.execute_script(SET, "hmc-accuracy-T", t)
            theory = browser.execute_script(DATA, "hmc-accuracy-theory")
            _close(theory["x"], record["widths"], f"{task}, T = {T}: widths")
            _close(theory["y"], np.asarray(entry["accuracy"])[:, t], f"{task}, T = {T}: theory")
            _close(browser.execute_script(DATA, "hmc-accuracy-gp")["y"], [entry["gp"][t]] * 2, f"{task}, T = {T}: GP")
            points = browser.execute_script(DATA, "hmc-accuracy-sampled")
            if t == here:  # the sampled networks exist at the chapter's temperature only
                _close(points["y"], sampled[task]["accuracy"], f"{task}: sampled")
                _close(points["x"], sampled[task]["N"], f"{task}: sampled widths")
            else:
                assert points["y"] == [], f"{task}, T = {T}: sampled points drawn away from the chapter's T"
    U = np.asarray(record["tasks"]["4 paths"]["U"])
    n = U.shape[-1]
    for i, N in enumerate(record["widths"]):
        for t, T in enumerate(record["temperatures"]):
            browser.execute_script(SET, "hmc-U-4-paths-N", i)
            browser.execute_script(SET, "hmc-U-4-paths-T", t)
            drawn = browser.execute_script(DATA, "hmc-U-4-paths-U")
            _close(drawn["value"], U[i, t].ravel(), f"U at N = {N}, T = {T}")
            names = record["tasks"]["4 paths"]["U_order"]
            assert drawn["row"] == [names[a] for a in range(n) for _ in range(n)]
            assert drawn["col"] == [names[b] for _ in range(n) for b in range(n)]
    problems = _open(browser, _url(built_book, "book/hmc"), 2)  # no error in what the widgets did
    assert not problems, problems


def _handles(browser, figure_id):
    """The slider handles (noUiSlider's focusable elements) inside the figure's element, through its shadow roots."""
    return browser.execute_script(
        """
        const out = [];
        const walk = (root) => { for (const el of root.querySelectorAll('*')) {
            if (el.classList && el.classList.contains('noUi-handle')) out.push(el);
            if (el.shadowRoot) walk(el.shadowRoot);
        } };
        walk(document.getElementById(arguments[0]));
        return out;""",
        figure_id,
    )


def test_the_pretrained_heat_map_follows_its_temperature_slider(built_book, offline_browser):
    browser = offline_browser
    problems = _open(browser, _url(built_book, "book/pretrained"), 1)
    assert not problems, problems
    values = _results(built_book, "pretrained")
    U = np.asarray(values["U_by_temperature"])
    n = U.shape[-1]
    # the slider starts at the temperature the first split's validation chose
    chosen = values["temperatures"].index(values["per_split"]["temperature"][0])
    _close(browser.execute_script(DATA, "pretrained-U-U")["value"], U[chosen].ravel(), "U at the chosen temperature")
    for t in range(U.shape[0]):
        browser.execute_script(SET, "pretrained-U-T", t)
        drawn = browser.execute_script(DATA, "pretrained-U-U")
        _close(drawn["value"], U[t].ravel(), f"U at temperature {t}")
        assert drawn["row"] == [str(a + 1) for a in range(n) for _ in range(n)]


def test_a_slider_moves_with_the_arrow_keys(built_book, offline_browser):
    browser = offline_browser
    assert not _open(browser, _url(built_book, "book/hmc"), 2)
    record = _results(built_book, "hmc")["explorable"]
    here = record["temperatures"].index(record["temperature"])
    handles = _handles(browser, "hmc-accuracy")
    assert len(handles) == 1, "one slider (the temperature) in the accuracy figure"
    assert handles[0].get_attribute("tabindex") == "0", "the handle takes the keyboard focus"
    handles[0].click()
    handles[0].send_keys(Keys.ARROW_LEFT)
    WebDriverWait(browser, 10).until(lambda b: b.execute_script(VALUE, "hmc-accuracy-T") != here)
    value = browser.execute_script(VALUE, "hmc-accuracy-T")
    assert value == here - 1, f"the left arrow moved the temperature slider from {here} to {value}"
    task = browser.execute_script(VALUE, "hmc-accuracy-task")
    theory = browser.execute_script(DATA, "hmc-accuracy-theory")
    _close(theory["y"], np.asarray(record["tasks"][task]["accuracy"])[:, here - 1], "after the arrow key")


def _model(attribute: str) -> str:
    """Script returning ``attribute`` of the model named by its first argument."""
    return (
        "const m = (function(name) {"
        + MODEL.replace("arguments[0]", "name")
        + f"}})(arguments[0]); return m.{attribute};"
    )


def test_pruning_checkboxes_hide_and_show_series(built_book, offline_browser):
    browser = offline_browser
    problems = _open(browser, _url(built_book, "book/pruning"), 1)
    assert not problems, problems
    record = _results(built_book, "pruning")["explorable_curves"]
    panels = {browser.execute_script(_model("title.text"), f"pruning-curves-plot-{p}"): p for p in range(len(record))}
    assert sorted(panels) == sorted(record), "a panel per model"
    for model, by_ranking in record.items():
        for ranking, curve in by_ranking.items():
            drawn = browser.execute_script(DATA, f"pruning-curves-{panels[model]}-{ranking}")
            _close(drawn["y"], curve["mean"], f"{model}, {ranking}: mean")
            _close(drawn["low"], curve["low"], f"{model}, {ranking}: interval")
            _close(drawn["high"], curve["high"], f"{model}, {ranking}: interval")
    boxes = browser.execute_script(
        """
        const out = [];
        const walk = (root) => { for (const el of root.querySelectorAll('*')) {
            if (el.tagName === 'INPUT' && el.type === 'checkbox') out.push(el);
            if (el.shadowRoot) walk(el.shadowRoot);
        } };
        walk(document.getElementById('pruning-curves'));
        return out;"""
    )
    rankings = list(dict.fromkeys(r for by_ranking in record.values() for r in by_ranking))
    labels = browser.execute_script(_model("labels"), "pruning-curves-toggles")
    by_label = {RANKING_NAMES[r]: r for r in rankings}
    assert len(boxes) == len(labels) and sorted(labels) == sorted(by_label), "a checkbox per ranking"

    def shown(ranking):
        """Whether every renderer of the ranking (line, points, band, in every panel) is visible."""
        states = {
            browser.execute_script(_model("visible"), f"pruning-curves-{p}-{ranking}-{part}")
            for p in range(len(record))
            for part in ("line", "points", "band")
        }
        assert len(states) == 1, f"{ranking}: its renderers disagree on being shown"
        return states.pop()

    before = {r: shown(r) for r in rankings}
    active = browser.execute_script(_model("active"), "pruning-curves-toggles")
    assert [k for k, label in enumerate(labels) if before[by_label[label]]] == sorted(active)
    for k in (active[0], next(k for k in range(len(labels)) if k not in active)):  # one shown, one hidden
        ranking = by_label[labels[k]]
        browser.execute_script("arguments[0].focus()", boxes[k])  # the keyboard: a checkbox is an HTML input
        assert browser.execute_script("return arguments[0].getRootNode().activeElement === arguments[0]", boxes[k])
        ActionChains(browser).send_keys(Keys.SPACE).perform()
        WebDriverWait(browser, 10).until(lambda b: shown(ranking) != before[ranking])
        assert {r: shown(r) for r in rankings} == {**before, ranking: not before[ranking]}, "the others stay"
        ActionChains(browser).send_keys(Keys.SPACE).perform()
        WebDriverWait(browser, 10).until(lambda b: shown(ranking) == before[ranking])


def test_learning_curves_follow_the_selector(built_book, offline_browser):
    browser = offline_browser
    problems = _open(browser, _url(built_book, "book/learning_curves"), 1)
    assert not problems, problems
    record = _results(built_book, "learning_curves")["explorable"]
    names = list(record["accuracy"])
    num_sets = len(record["accuracy"][names[0]])
    choices = ["mean over the sets", *(f"training set {s + 1}" for s in range(num_sets))]
    select = browser.execute_script(
        """
        const walk = (root) => { for (const el of root.querySelectorAll('*')) {
            if (el.tagName === 'SELECT') return el;
            if (el.shadowRoot) { const hit = walk(el.shadowRoot); if (hit) return hit; }
        } return null; };
        return walk(document.getElementById('learning-curves'));"""
    )
    browser.execute_script("arguments[0].focus()", select)  # the keyboard: the selector is an HTML select
    ActionChains(browser).send_keys(Keys.ARROW_DOWN).perform()
    WebDriverWait(browser, 10).until(lambda b: b.execute_script(VALUE, "learning-curves-set") == choices[1])
    for c, choice in enumerate(choices):
        browser.execute_script(SET, "learning-curves-set", choice)
        for name in names:
            drawn = browser.execute_script(DATA, f"learning-curves-{name}")
            _close(drawn["x"], record["sizes"], "sizes")
            expected = record["mean"][name] if c == 0 else record["accuracy"][name][c - 1]
            _close(drawn["y"], expected, f"{choice}, {name}")
            if c == 0:
                _close(np.asarray(drawn["high"]) - drawn["y"], record["se"][name], f"{name}: band")


def test_packaged_javascript_is_copied_only_when_it_changed(tmp_path):
    from attnpaths_book.local_mathjax import copy_if_changed

    source, target = tmp_path / "a.js", tmp_path / "static" / "a.js"
    source.write_text("one")
    assert copy_if_changed(source, target) and target.read_text() == "one"
    assert not copy_if_changed(source, target)  # same bytes: left alone
    source.write_text("two")
    assert copy_if_changed(source, target) and target.read_text() == "two"
