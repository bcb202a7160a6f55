"""The library's tests: everything that ``pip install .`` (without the book extra) can run, importing nothing of the
book's companion (``tests/library/test_layering.py`` and CI's library step check it). This folder is on ``sys.path``
for its modules' ``from helpers import ...``; the shared fixtures are in ``tests/conftest.py``.

A test of a part of the library that needs an optional dependency (an extra of ``pyproject.toml``, listed in
``attnpaths._optional``) says so with ``@pytest.mark.needs("plots")`` (or a module's ``pytestmark``), or by asking
for a fixture of :data:`FIXTURE_EXTRAS`; without that extra it is skipped, naming the extra. With every extra
installed, as in CI's full environment, nothing is skipped for this; CI (``CI=true``) stops at once where an extra is
missing, except in the environment of ``.ci/library_only.sh``, which lacks them on purpose and says so with
:data:`WITHOUT_EXTRAS`."""

from __future__ import annotations

import os

import pytest
import torch

from attnpaths._optional import EXTRAS, missing

WITHOUT_EXTRAS = "ATTNPATHS_WITHOUT_EXTRAS"
"""Set (to 1) where the library is tested without its extras: their tests skip, even in CI."""

FIXTURE_EXTRAS = {"plt": "plots", "cluster_client": "engine"}
"""Fixtures that need an extra, and which: a test that uses one, directly or through another fixture, needs it."""


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "needs(extra): the test needs an extra of attnpaths (engine, diagnostics, plots, tasks, pretrained)"
    )


def pytest_collection_modifyitems(config, items):
    if os.environ.get("CI") == "true" and not os.environ.get(WITHOUT_EXTRAS):  # CI's full environment skips nothing
        absent = {extra: missing(extra) for extra in EXTRAS if missing(extra)}
        if absent:
            raise pytest.UsageError(f"CI's environment lacks these extras of attnpaths (modules missing): {absent}")
    for item in items:
        extras = {marker.args[0] for marker in item.iter_markers("needs")}
        extras |= {FIXTURE_EXTRAS[name] for name in getattr(item, "fixturenames", ()) if name in FIXTURE_EXTRAS}
        for extra in sorted(extras):
            absent = missing(extra)
            if absent:
                reason = (
                    f"needs the {extra} extra ({', '.join(absent)} not installed): pip install 'attnpaths[{extra}]'"
                )
                item.add_marker(pytest.mark.skip(reason=reason))
                break


@pytest.fixture
def plt():
    """matplotlib's pyplot on the Agg backend (no display), every figure closed after the test."""
    matplotlib = pytest.importorskip("matplotlib", reason="the figures need the plots extra")
    matplotlib.use("Agg")
    from matplotlib import pyplot

    yield pyplot
    pyplot.close("all")


@pytest.fixture(scope="module")
def hmc_clean():
    """Noise-free HMC sequences (40, seed 3): the attention then depends only on the hidden states."""
    from attnpaths.hmc import markov_optionE

    return markov_optionE(40, torch.Generator().manual_seed(3), sigma_perp=0.0, sigma_A=0.0, sigma_B=0.0)


@pytest.fixture(scope="module")
def hmc_train():
    """The paper's HMC training set."""
    from attnpaths.hmc import paper_train_set

    return paper_train_set()
