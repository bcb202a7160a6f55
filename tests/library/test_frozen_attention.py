"""The library's face and its entry point for a researcher's own model (attnpaths.frozen_attention): the layout
conventions are exact on the package's own networks, errors name the argument and the layout, and the README's
example runs with the book's packages hidden."""

from __future__ import annotations

import ast
import math
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import tomllib
import torch
from helpers import BOOK_MODULES, ROOT, assert_rounding_close, hiding_modules, multihead_stack

import attnpaths
from attnpaths import (
    AUTO_TEMPERATURES,
    HeadMaskEvaluator,
    HeadModel,
    head_labels,
    path_features,
    rank_heads,
    solve,
    theory_from_attention,
)
from attnpaths._optional import EXTRAS
from attnpaths.hmc.data import HMCTask
from attnpaths.hmc.networks import four_path_network

HIDDEN = (*BOOK_MODULES, "pytest")
"""What the README's example must run without."""


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
    direct = solve(features, train.y, heads=net.heads, width=10, temperature=0.01)
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


class OwnModel(torch.nn.Module):
    """An attention-only model written as a user would: its own softmax attention (not torch.nn.MultiheadAttention),
    2 heads in layer 1 and 3 in layer 2, each head's values mapped back to the width, mean pooling, a readout."""

    def __init__(self, input_width=5, width=6, heads=(2, 3), seed=0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        draw = lambda *shape: torch.randn(*shape, generator=g, dtype=torch.float64) / math.sqrt(shape[-1])
        self.embed = torch.nn.Parameter(draw(width, input_width))
        self.qk = torch.nn.ParameterList([torch.nn.Parameter(draw(2, H, 3, width)) for H in heads])
        self.v = torch.nn.ParameterList([torch.nn.Parameter(draw(H, width, width)) for H in heads])
        self.a = torch.nn.Parameter(draw(width))

    def run(self, tokens, mask=None):
        h, attention = tokens.double() @ self.embed.T, []  # [B, T, width]
        for l, (qk, v) in enumerate(zip(self.qk, self.v)):
            q, k = torch.einsum("hgd,btd->bhtg", qk[0], h), torch.einsum("hgd,btd->bhtg", qk[1], h)
            w = torch.softmax(q @ k.transpose(-1, -2), dim=-1)  # [B, H, query, key]
            attention.append(w)
            heads_out = torch.einsum("bhqk,hed,bkd->bhqe", w, v, h)
            gates = (
                torch.ones(v.shape[0], dtype=torch.float64) if mask is None else torch.as_tensor(mask)[l, : v.shape[0]]
            )
            h = torch.einsum("h,bhqe->bqe", gates, heads_out)
        return h.mean(dim=1) @ self.a, attention

    def forward(self, tokens):
        return self.run(tokens)[0]

    def attention_weights(self, tokens):
        return self.run(tokens)[1]

    def masked_output(self, tokens, mask):
        return self.run(tokens, mask)[0]


@pytest.fixture(scope="module")
def own_problem():
    g = torch.Generator().manual_seed(3)
    tokens = torch.randn(80, 4, 5, generator=g, dtype=torch.float64)
    targets = torch.sign(tokens[:, :, 0].mean(dim=1) + 1e-9)
    return OwnModel(), tokens, targets


def test_a_model_of_ones_own_is_ranked_by_both_doors_with_one_result(own_problem):
    model, tokens, targets = own_problem
    assert isinstance(model, HeadModel)  # a structural protocol: the two methods are all it asks
    ranked = rank_heads(model, tokens, targets, width=30, temperature=0.1)
    with torch.no_grad():
        direct = theory_from_attention(model.attention_weights(tokens), tokens, targets, width=30, temperature=0.1)
    # determinism: rank_heads runs the same model on the same tokens, then theory_from_attention
    np.testing.assert_array_equal(ranked.head_scores, direct.head_scores)
    assert type(ranked) is type(direct) and ranked.heads == (2, 3) and ranked.certificate["converged"]
    # the labels line up with the scores for layers of different sizes: "" where the score is nan
    scores, labels = ranked.head_scores.ravel(), ranked.head_labels
    assert labels == head_labels((2, 3)) == ["(1)1", "(1)2", "", "(2)1", "(2)2", "(2)3"]
    assert [label == "" for label in labels] == list(np.isnan(scores))
    ordered = [ranked.head_scores[lh] for lh in ranked.pruning_order]
    assert len(ranked.pruning_order) == 5 and ordered == sorted(ordered)
    with pytest.raises(ValueError, match="attention_weights"):
        rank_heads(object(), tokens, targets, width=30, temperature=0.1)


def test_zero_one_labels_are_refused_with_the_rule_that_maps_them(own_problem):
    model, tokens, targets = own_problem
    with pytest.raises(ValueError, match=r"only 0 and 1.*2 \* targets - 1"):
        rank_heads(model, tokens, (targets + 1) / 2, width=30, temperature=0.1)
    with pytest.raises(ValueError, match=r"only 0 and 1"):
        theory_from_attention(model.attention_weights(tokens), tokens, (targets + 1) / 2, width=30, temperature=0.1)
    # real-valued targets are the theory's regression targets, and stay allowed
    assert rank_heads(model, tokens, targets * 0.5 + 0.25, width=30, temperature=0.1).heads == (2, 3)


def test_auto_temperature_keeps_the_smallest_certified_action_of_the_grid(own_problem):
    model, tokens, targets = own_problem
    auto = rank_heads(model, tokens, targets, width=30)  # temperature="auto" by default
    scan = auto.scan
    np.testing.assert_array_equal(scan["temperatures"], AUTO_TEMPERATURES)
    certified = np.flatnonzero(scan["converged"])
    best = certified[np.argmin(scan["action"][certified])]
    assert auto.temperature == AUTO_TEMPERATURES[best] and auto.solution is auto.solutions[best]
    assert scan["head_scores"].shape == (len(AUTO_TEMPERATURES), 2, 3)
    # the GP limit is solved at the chosen temperature
    gp = solve(auto.features, targets, heads=(2, 3), width=math.inf, temperature=auto.temperature)
    np.testing.assert_array_equal(auto.gp.U, gp.U)  # determinism: the same solve
    with pytest.raises(ValueError, match="'auto'"):
        rank_heads(model, tokens, targets, width=30, temperature="best")


def test_auto_temperature_warns_when_its_choice_lies_at_an_edge_of_the_grid(own_problem):
    model, tokens, targets = own_problem
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # inside the grid (T = 0.3 here): no warning
        assert 0 < AUTO_TEMPERATURES.index(rank_heads(model, tokens, targets, width=30).temperature) < 5
    # targets scaled up want a larger likelihood variance than the grid holds, scaled down a smaller one
    for scale, edge in ((30.0, AUTO_TEMPERATURES[-1]), (0.01, AUTO_TEMPERATURES[0])):
        with pytest.warns(UserWarning, match=f"chose T = {edge:g}, at the edge of its grid"):
            assert rank_heads(model, tokens, scale * targets, width=30).temperature == edge
    # a grid the user gave is theirs to read, as a list or an array: no warning at its edge
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rank_heads(model, tokens, 30.0 * targets, width=30, temperature=[0.1, 0.3])
        rank_heads(model, tokens, 30.0 * targets, width=30, temperature=np.array([0.1, 0.3]))


def test_the_theory_reads_in_one_line_and_names_a_prediction_without_tokens(own_problem):
    model, tokens, targets = own_problem
    theory = rank_heads(model, tokens, targets, width=30, temperature=0.1)
    text = repr(theory)
    assert "\n" not in text and len(text) < 400
    for part in ("heads=(2, 3)", "P=80", "temperature=0.1", "converged=True", "U=[6, 6]"):
        assert part in text
    with pytest.raises(TypeError, match=r"predict\(attention, tokens\)"):
        theory.predict(tokens)  # a scikit-learn habit: the attention of the new examples is missing
    mean, _ = theory.predict(model.attention_weights(tokens), tokens)
    assert mean.shape == (80,)


def test_the_head_mask_evaluator_prunes_a_model_of_ones_own_through_masked_output(own_problem):
    model, tokens, targets = own_problem
    evaluator = HeadMaskEvaluator(model, tokens, targets)
    assert evaluator.heads == (2, 3)
    with torch.no_grad():
        full = model(tokens)
        pruned = model.masked_output(tokens, torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 1.0]], dtype=torch.float64))
    # exact on any CPU: the evaluator calls masked_output with this very mask, then counts signs
    assert evaluator() == float(np.mean(np.sign(full.numpy()) == targets.numpy()))
    assert evaluator([(1, 1)]) == float(np.mean(np.sign(pruned.numpy()) == targets.numpy()))
    assert not np.array_equal(evaluator.outputs([(1, 1)]), full.numpy())
    with pytest.raises(ValueError, match=r"targets must be \+-1"):
        HeadMaskEvaluator(model, tokens, (targets + 1) / 2)
    with pytest.raises(ValueError, match="masked_output"):
        HeadMaskEvaluator(type("AttentionOnly", (), {"attention_weights": model.attention_weights})(), tokens, targets)


def test_the_face_exports_what_it_lists_and_loads_lazily():
    assert {
        "solve",
        "path_features",
        "head_scores",
        "AttentionNetwork",
        "PosteriorSampler",
        "exact_action",
        "Verdict",
        "rank_heads",
        "theory_from_attention",
    } <= set(attnpaths.__all__)
    for name in attnpaths.__all__:
        assert getattr(attnpaths, name) is not None
    # a face name that is also a submodule's would turn into the module once the submodule is imported
    package = ROOT / "src" / "attnpaths"
    assert [n for n in attnpaths.__all__ if (package / n).is_dir() or (package / f"{n}.py").is_file()] == []
    code = "import sys, attnpaths; print(sorted(m for m in sys.modules if m.startswith('attnpaths')))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "['attnpaths']"


def _readme_example() -> str:
    """The README's own-model examples, in memory, pruned and then batch by batch (one session: the later ones
    use the first's model and data)."""
    text = (ROOT / "README.md").read_text()
    return "".join(
        text.split(f"<!-- {marker}")[1].split("```python\n", 1)[1].split("```", 1)[0]
        for marker in ("own-model-example", "own-model-pruning-example", "own-model-scale-example")
    )


@pytest.mark.usefixtures("process_environment")
def test_the_readme_example_runs_without_the_book_packages():
    blocker = hiding_modules(HIDDEN) + textwrap.dedent("""
        import attnpaths
        print(len(attnpaths.__all__))
    """)
    done = subprocess.run(
        [sys.executable, "-c", blocker + _readme_example()],
        capture_output=True,
        text=True,
        cwd=ROOT / "tests" / "baselines",
    )  # not the repository root: no stray imports
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert int(lines[0]) == len(attnpaths.__all__) and lines[1].startswith("True (4, 4)")
    assert lines[-1].startswith("AttentionTheory(heads=(2, 2), readout='average_pooling', P=4000, D=8")


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

    def names(requirements):
        return {d.split("[")[0].split("=")[0].split("<")[0].split(">")[0].strip().lower() for d in requirements}

    required = names(project["dependencies"])
    # the library's extras (attnpaths._optional), each named in the ImportError of the modules that need it
    optional = names(r for extra in EXTRAS for r in project["optional-dependencies"][extra])
    distribution = {"sklearn": "scikit-learn", "PIL": "pillow", "distributed": "dask"}
    imported = {distribution.get(name, name).lower() for name in _third_party_imports()}
    # optional imports, each behind a clear error where it is used: pyro (the reference NUTS of the tests)
    # and bokeh (the Dask dashboard)
    assert imported - required - optional <= {"pyro", "bokeh"}, imported - required - optional
    assert not required & optional, "a package of an extra is also required"
    assert not (required | optional) & {m.lower() for m in HIDDEN}


def test_temperature_takes_the_same_options_at_every_door():
    # every door that returns an AttentionTheory defaults to "auto"; the solver itself takes one number and names them
    import inspect

    from attnpaths import theory_from_statistics

    for door in (theory_from_attention, theory_from_statistics, rank_heads):
        assert inspect.signature(door).parameters["temperature"].default == "auto", door.__name__
    features, targets = torch.randn(12, 3, 2, dtype=torch.float64), torch.ones(12)
    for temperature in ("auto", [0.1, 1.0]):
        with pytest.raises(ValueError, match="temperature must be one real number > 0 here.*theory_from_attention"):
            solve(features, targets, heads=2, width=3, temperature=temperature)
