"""The optional dependencies (attnpaths._optional): the core imports none of them; where one is missing, the module
or function that needs it raises an ImportError naming it and the extra that installs it, and that extra of
``pyproject.toml`` does install it. The absent packages are simulated in a fresh interpreter by an import hook,
so these tests run in the full environment too (CI's library step runs them where the extras are really absent).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from helpers import ROOT

from attnpaths._optional import DISTRIBUTIONS, EXTRAS, MODULES, missing, require

OPTIONAL_MODULES = sorted({name for names in MODULES.values() for name in names})


def _without_optional_modules(code: str) -> dict:
    """Run ``code`` in a fresh interpreter in which every module of :data:`MODULES` is missing (its import raises
    ``ModuleNotFoundError``, as without the extra); ``code`` leaves its findings in ``result``, returned."""
    hook = textwrap.dedent(f"""
        import importlib.abc, json, sys
        HIDDEN = {OPTIONAL_MODULES!r}
        class Absent(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in HIDDEN:
                    raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        sys.meta_path.insert(0, Absent())
        result = {{}}
    """)
    done = subprocess.run(
        [sys.executable, "-c", hook + textwrap.dedent(code) + "\nprint(json.dumps(result))"],
        capture_output=True,
        text=True,
        cwd=ROOT / "tests" / "baselines",  # not the repository root: no stray imports
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.usefixtures("process_environment")
def test_every_module_but_the_figures_imports_without_the_extras():
    """The figure modules (``plots``, ``diagrams``) need matplotlib to import; every other module imports without
    any extra and loads none of the optional packages, which are imported where they are used."""
    result = _without_optional_modules("""
        import importlib, pkgutil, attnpaths
        failed = {}
        for module in pkgutil.walk_packages(attnpaths.__path__, "attnpaths."):
            last = module.name.rsplit(".", 1)[1]
            if not (last.endswith("plots") or last == "diagrams"):
                try:
                    importlib.import_module(module.name)
                except ImportError as err:
                    failed[module.name] = str(err)
        result["failed"] = failed
        result["loaded"] = sorted({m.split(".")[0] for m in sys.modules} & set(HIDDEN))
    """)
    assert result == {"failed": {}, "loaded": []}


@pytest.mark.usefixtures("process_environment")
def test_what_needs_an_extra_says_which_and_how_to_install_it():
    result = _without_optional_modules("""
        import importlib, pkgutil, attnpaths
        import numpy as np, torch

        def message(call):
            try:
                call()
            except ImportError as err:
                return str(err)
            return None

        figures = [m.name for m in pkgutil.walk_packages(attnpaths.__path__, "attnpaths.")
                   if m.name.endswith("plots") or m.name.endswith(".diagrams")]
        result["figures"] = {name: message(lambda: importlib.import_module(name)) for name in figures}
        from attnpaths.oneshot import digits, glyphs, rendering
        from attnpaths.pruning.digits import digit_patches
        from attnpaths.sampler import effective_sample_size, split_rhat
        chains = torch.randn(2, 40, 3)
        result["calls"] = {
            "attnpaths.oneshot.digits": message(lambda: digits.load_digit_pairs()),
            "attnpaths.oneshot.glyphs": message(lambda: glyphs.draw_glyph(0, ord("A"))),
            "attnpaths.oneshot.rendering": message(lambda: rendering.resize_images(np.zeros((2, 8, 8)), 4)),
            "attnpaths.pruning.digits": message(lambda: digit_patches()),
            "attnpaths.sampler": message(lambda: split_rhat(chains)),
        }
        # the effective sample size is the package's own evaluation of ArviZ's estimator: no extra
        result["ess_without_arviz"] = message(lambda: effective_sample_size(chains))
    """)
    assert len(result["figures"]) >= 10
    for name, message in result["figures"].items():
        assert message is not None and "needs the optional dependency matplotlib" in message, name
        assert message.endswith("pip install 'attnpaths[plots]'"), message
    expected = {
        "attnpaths.oneshot.digits": ("scikit-learn", "tasks"),
        "attnpaths.oneshot.glyphs": ("matplotlib", "tasks"),
        "attnpaths.oneshot.rendering": ("pillow", "tasks"),
        "attnpaths.pruning.digits": ("scikit-learn", "tasks"),
        "attnpaths.sampler": ("arviz", "diagnostics"),
    }
    assert result["ess_without_arviz"] is None
    for name, (package, extra) in expected.items():
        message = result["calls"][name]
        assert message and message.startswith(f"{name} needs the optional dependency {package} ("), (name, message)
        assert message.endswith(f"pip install 'attnpaths[{extra}]'"), message


def test_each_extra_installs_the_modules_its_messages_name():
    tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11's tomllib")
    with open(ROOT / "pyproject.toml", "rb") as handle:
        project = tomllib.load(handle)["project"]
    extras = project["optional-dependencies"]

    def names(requirements):
        return {d.split("[")[0].split("=")[0].split("<")[0].split(">")[0].strip() for d in requirements}

    for extra in EXTRAS:
        for module in MODULES[extra]:
            package = DISTRIBUTIONS.get(module, module).split("[")[0]
            assert package in names(extras[extra]) - names(project["dependencies"]), (extra, module)
    # the book uses every part of the library: it installs every extra
    assert "attnpaths[all]" in extras["book"] and extras["all"] == [f"attnpaths[{','.join(EXTRAS)}]"]


def test_require_names_only_the_package_that_is_missing(tmp_path, monkeypatch):
    with pytest.raises(
        ValueError, match=r"extra must be one of \['diagnostics', 'engine', 'plots', 'pretrained', 'tasks'\]"
    ):
        require("numpy", "figures")
    with pytest.raises(ValueError, match="extra must be one of"):
        missing("figures")
    assert require("numpy", "plots").__name__ == "numpy"
    # a package that is there but lacks one of its own dependencies: that dependency's error, not the extra's
    (tmp_path / "attnpaths_test_broken").mkdir()
    (tmp_path / "attnpaths_test_broken" / "__init__.py").write_text("import attnpaths_test_absent_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="attnpaths_test_absent_dependency") as raised:
        require("attnpaths_test_broken", "plots")
    assert "pip install" not in str(raised.value)
    with pytest.raises(ImportError, match=r"needs the optional dependency attnpaths_test_absent \(the figures\)"):
        require("attnpaths_test_absent.sub", "plots")
