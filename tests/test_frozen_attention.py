"""The library's face and its entry point for a researcher's own model (attnpaths.frozen_attention): the layout
conventions are exact on the package's own networks, errors name the argument and the layout, and the README's
example runs with the book's packages hidden."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
import tomllib

import numpy as np
import pytest
import torch

import attnpaths
from attnpaths import HeadAttentionModel, path_features, solve, theory_from_attention, theory_of_model
from attnpaths.hmc.data import HMCTask
from attnpaths.hmc.networks import four_path_network
from helpers import ROOT, assert_rounding_close, multihead_stack

BOOK_MODULES = ("attnpaths_book", "yaml", "jupytext", "papermill", "nbformat", "nbclient", "myst_nb", "IPython",
                "jupyter_book", "sphinx", "selenium", "pytest", "nbval")


def pytorch_layout(matrices, readout_query=-1):
    """The package's matrices ``[B, H, key, query]`` as PyTorch's ``[B, H, query, key]`` (the last layer, read
    out at one query by the package, expanded back to a full matrix whose chosen query row it is)."""
    full = [m.transpose(-1, -2) for m in matrices[:-1]]
    last = matrices[-1]  # [B, H, key]
    B, H, T = last.shape
    expanded = torch.full((B, H, T, T), 1.0 / T, dtype=torch.float64)
    expanded[:, :, readout_query, :] = last
    return full + [expanded]


@pytest.fixture(scope="module")
def hmc_problem():
    task = HMCTask()
    train = task.sample(60, torch.Generator().manual_seed(1))
    return train, four_path_network(train)


def test_on_the_package_network_the_entry_point_is_the_theory_itself(hmc_problem):
    train, net = hmc_problem
    attention = pytorch_layout(net.attention.matrices(train.x))
    tokens = train.x.transpose(1, 2)  # [B, T, D]
    theory = theory_from_attention(attention, tokens, train.y, width=10, temperature=0.01, readout="last_token")
    features = path_features(train.x, net.attention)
    # two routes to the same features (PyTorch's layout transposed back, the package's own attention): equal up to
    # the summation order of the products, which another CPU changes (26 % of the entries move by up to 8.9e-16)
    assert_rounding_close(theory.features, features, what="path features")
    direct = solve(features, train.y, heads=net.heads, widths=10, temperature=0.01)
    assert_rounding_close(theory.U, direct.U, what="U")  # the minimiser moves by ~3e-15 of U's scale with them
    assert theory.certificate["converged"] and theory.heads == net.heads
    mean, _ = theory.predict(attention, tokens)
    assert_rounding_close(mean, direct.predict(features)[0], what="predictor mean")
    # exact on any CPU: the GP limit's U is torch.eye(4) times the product of unit variances
    np.testing.assert_array_equal(theory.gp.U, np.eye(4))
    # exact on any CPU: the scores are divided by their largest, which becomes x / x = 1
    assert theory.head_scores.shape == (2, 2) and np.nanmax(theory.head_scores) == 1.0


def test_a_multihead_attention_stack_gets_a_certified_theory():
    _, tokens, attention, targets = multihead_stack()
    theory = theory_from_attention(attention, tokens, targets, width=30, temperature=0.1)
    assert theory.certificate["converged"] and theory.certificate["hessian_min_eigenvalue"] > 0
    assert theory.U.shape == (4, 4) and theory.head_labels == ["(1)1", "(1)2", "(2)1", "(2)2"]
    mean, var = theory.predict(attention, tokens)
    gp_mean, _ = theory.predict_gp(attention, tokens)
    assert mean.shape == gp_mean.shape == (120,) and np.all(var > -1e-9)
    assert not np.allclose(mean, gp_mean)  # finite width renormalises the kernel


def test_wrong_layouts_are_named():
    _, tokens, attention, targets = multihead_stack()
    with pytest.raises(ValueError, match=r"tokens must have shape \[B, T, D\]"):
        theory_from_attention(attention, tokens[0], targets, width=30, temperature=0.1)
    with pytest.raises(ValueError, match=r"attention\[1\] must have shape \[B, H, T, T\]"):
        theory_from_attention([attention[0], attention[1][:, :, :-1]], tokens, targets, width=30, temperature=0.1)
    swapped = [a.transpose(-1, -2) for a in attention]  # columns, not rows, sum to one
    with pytest.raises(ValueError, match=r"attention\[0\] must hold softmax weights over the keys.*query, key"):
        theory_from_attention(swapped, tokens, targets, width=30, temperature=0.1)
    with pytest.raises(ValueError, match="attention must be a list"):
        theory_from_attention(attention[0], tokens, targets, width=30, temperature=0.1)
    with pytest.raises(ValueError, match=r"targets must have shape \[B\]"):
        theory_from_attention(attention, tokens, targets[:-1], width=30, temperature=0.1)
    with pytest.raises(ValueError, match="readout must be one of"):
        theory_from_attention(attention, tokens, targets, width=30, temperature=0.1, readout="cls")


def test_a_model_that_exposes_its_heads():
    layers, tokens, attention, targets = multihead_stack()

    class Stack:
        def attention_weights(self, tokens):
            out, h = [], tokens
            for layer in layers:
                h, weights = layer(h, h, h, need_weights=True, average_attn_weights=False)
                out.append(weights)
            return out

    assert isinstance(Stack(), HeadAttentionModel)
    direct = theory_from_attention(attention, tokens, targets, width=30, temperature=0.1)
    # determinism: theory_of_model runs the same layers on the same tokens, then theory_from_attention, again
    np.testing.assert_array_equal(theory_of_model(Stack(), tokens, targets, width=30, temperature=0.1).U, direct.U)
    with pytest.raises(ValueError, match="attention_weights"):
        theory_of_model(object(), tokens, targets, width=30, temperature=0.1)


def test_the_face_exports_what_it_lists_and_loads_lazily():
    assert {"solve", "path_features", "head_scores", "AttentionNetwork", "PosteriorSampler", "exact_action",
            "Verdict", "rank_heads", "theory_from_attention"} <= set(attnpaths.__all__)
    for name in attnpaths.__all__:
        assert getattr(attnpaths, name) is not None
    # a face name that is also a submodule's would turn into the module once the submodule is imported
    package = ROOT / "src" / "attnpaths"
    assert [n for n in attnpaths.__all__ if (package / n).is_dir() or (package / f"{n}.py").is_file()] == []
    code = "import sys, attnpaths; print(sorted(m for m in sys.modules if m.startswith('attnpaths')))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "['attnpaths']"


def _readme_example() -> str:
    text = (ROOT / "README.md").read_text()
    return text.split("<!-- own-model-example")[1].split("```python\n", 1)[1].split("```", 1)[0]


def test_the_readme_example_runs_without_the_book_packages():
    blocker = textwrap.dedent(f"""
        import importlib.abc, sys
        class Hidden(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {BOOK_MODULES!r}:
                    raise ImportError(f"{{name}} is hidden: not installed by `pip install .`")
        sys.meta_path.insert(0, Hidden())
        for name in list(sys.modules):
            if name.split(".")[0] in {BOOK_MODULES!r}:
                del sys.modules[name]
        import attnpaths
        print(len(attnpaths.__all__))
    """)
    done = subprocess.run([sys.executable, "-c", blocker + _readme_example()], capture_output=True, text=True,
                          cwd=ROOT / "tests" / "baselines")  # not the repository root: no stray imports
    assert done.returncode == 0, done.stderr
    first, converged = done.stdout.splitlines()[:2]
    assert int(first) == len(attnpaths.__all__) and converged.startswith("True (4, 4)")


def _third_party_imports() -> set[str]:
    found = set()
    for path in (ROOT / "src" / "attnpaths").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return {name for name in found if name not in sys.stdlib_module_names and name != "attnpaths"}


def test_the_library_needs_only_its_declared_dependencies():
    with open(ROOT / "pyproject.toml", "rb") as handle:
        project = tomllib.load(handle)["project"]
    declared = {d.split("[")[0].split("=")[0].split("<")[0].split(">")[0].strip().lower()
                for d in project["dependencies"]}
    distribution = {"sklearn": "scikit-learn", "PIL": "pillow", "distributed": "dask"}
    imported = {distribution.get(name, name).lower() for name in _third_party_imports()}
    # optional imports, each behind a clear error where it is used: pyro (the reference NUTS of the tests)
    # and bokeh (the Dask dashboard)
    assert imported - declared <= {"pyro", "bokeh"}, imported - declared
    assert not declared & {m.lower() for m in BOOK_MODULES}
