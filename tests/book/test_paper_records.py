"""Regression tests on the paper profile: the committed records ``tests/paper_records/<chapter>.json``.

``python -m attnpaths_book record-paper`` stores every chapter's paper-profile results with their provenance. The
tests below recompute, from each record's own parameters and by calling the package functions the chapter
calls, the numbers that take seconds to compute:

- deterministic numbers (closed forms, theory solves on the seeded data sets, kernels, PC overlaps, head
  scores, and the seeded simulations of the exchangeability and related chapters, which replay exactly from
  their seeds) must equal the record within the tolerance of their reproducibility class, by key
  (:data:`attnpaths_book.tolerances.TABLE`: rounding of float64 from the same inputs, with reasoned exceptions);
- every verdict of every record (claims, structural checks, power checks) is decided again from the inputs
  recorded with it, through the claims module's tests;
- the theory chapter's Monte-Carlo prior kernels (40000 samples in the paper profile) are estimated again with
  fewer samples from an independent generator and must agree within ``MC_Z`` combined standard errors.

Numbers that cost minutes (posterior sampling, the gradient-descent model of the one-shot chapter) are not
recomputed: for them the record is checked to be a well-formed paper record of the chapter's current paper
profile, which also fixes the claims the run enforced. A chapter without a record is skipped, naming the
command that makes it.

After ``python -m attnpaths_book book --profile paper`` (the README's order: the book, then the tests), every
number of every chapter is compared with its record by
``test_the_last_paper_run_of_this_checkout_agrees_with_the_record_by_class``. A recomputation here of a chapter
whose paper run is current (what the runner would take from its cache: today's sources, parameters, versions and
CPU dispatch, :func:`attnpaths_book.runner.chapter_states`) would compute the same numbers on the same machine a
second time, so it is skipped, saying so; without a current paper run (a fresh clone, CI) it runs.
"""

import functools
import json
import re

import numpy as np
import pytest
import torch
from book_helpers import (
    MC_Z,
    assert_matches_record,
    assert_within_mc_error,
    oneshot_dataset,
    oneshot_training,
    pruning_training,
)
from helpers import ROOT
from scipy.optimize import minimize_scalar

from attnpaths.claims import MIN_POWER, Verdict, agreement_power, rederive
from attnpaths_book import runner
from attnpaths_book.chapters import find_chapter, resolve_parameters
from attnpaths_book.layout import BookLayout
from attnpaths_book.paper_records import read_record, record_path, record_problems
from attnpaths_book.runner import notebook_chapters
from attnpaths_book.store import read_manifest, verify_results
from attnpaths_book.tolerances import compare_results

LAYOUT = BookLayout(ROOT)
pytestmark = pytest.mark.cross_machine
CHAPTERS = notebook_chapters(LAYOUT)
MC_TEST_SAMPLES = 10000
"""Samples of the theory chapter's prior-kernel check here (the paper profile uses 40000): about 5 s."""


@functools.cache
def current_paper_runs() -> frozenset[str]:
    """The chapters whose paper-profile results in this checkout are current (:func:`runner.chapter_states`)."""
    return frozenset(name for name, reason in runner.chapter_states(LAYOUT, "paper") if reason is None)


def skip_where_the_paper_run_is_current(name: str) -> None:
    """Skip a test that would compute chapter ``name``'s paper numbers again where this checkout's paper run of it
    is current: the test of the last paper run compares those very numbers with the record."""
    if name in current_paper_runs():
        pytest.skip(
            f"this checkout's paper run of {name} is current: "
            f"test_the_last_paper_run_of_this_checkout_agrees_with_the_record_by_class[{name}] compares its "
            "numbers with the record"
        )


def load_record(name: str) -> dict:
    """The chapter's paper record, or a skip naming the command that makes it."""
    path = record_path(LAYOUT, find_chapter(CHAPTERS, name))
    if not path.is_file():
        pytest.skip(
            f"no paper record of chapter {name!r} ({path.relative_to(ROOT)}): make it with "
            f"`python -m attnpaths_book record-paper {name}`"
        )
    return read_record(path)


@pytest.fixture
def recorded():
    """:class:`Recorded`: a test that takes it recomputes a paper record's numbers (seconds to a minute)."""
    return Recorded


class Recorded:
    """A record's parameters and values, and the comparison of recomputed values with them."""

    def __init__(self, name: str):
        self.chapter = name
        record = load_record(name)
        skip_where_the_paper_run_is_current(name)
        self.parameters = record["execution"]["parameters"]
        self.values = record["results"]["values"]

    def __getitem__(self, name):
        return self.parameters[name]

    def value(self, key: str):
        """The recorded value at a dotted key (``"U.10"``; a dict key containing a dot cannot be reached)."""
        value = self.values
        for part in key.split("."):
            assert isinstance(value, dict) and part in value, f"{self.chapter}: the record has no values.{key}"
            value = value[part]
        return value

    def check(self, key: str, recomputed):
        """Compare ``recomputed`` with the recorded ``values.<key>`` within its key's tolerance (see
        ``assert_matches_record``). A dict is compared entry by entry: each of its entries must be in the record,
        which may hold more."""
        if not isinstance(recomputed, dict):
            assert_matches_record(self.chapter, key, recomputed, self.value(key))
            return
        recorded = self.value(key)
        for name, value in recomputed.items():
            assert name in recorded, f"{self.chapter}: the record has no values.{key}.{name}"
            assert_matches_record(self.chapter, f"{key}.{name}", value, recorded[name])

    def check_mc(self, key: str, estimate, estimate_se, recorded_se_key: str):
        """Compare a Monte-Carlo estimate with the recorded one within ``MC_Z`` combined standard errors."""
        assert_within_mc_error(
            self.chapter, key, estimate, estimate_se, self.value(key), self.value(recorded_se_key), z=MC_Z
        )


# --------------------------------------------------------------------------------------------------------
# every record


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.name for c in CHAPTERS])
def test_record_is_a_paper_record_of_the_chapter(chapter):
    """Present, a paper run without overrides, made with the parameters the chapter's paper profile gives now."""
    problems = record_problems(LAYOUT, chapter, load_record(chapter.name))
    assert not problems, (
        f"{record_path(LAYOUT, chapter).relative_to(ROOT)}: "
        + "; ".join(problems)
        + f"\nremake it with: python -m attnpaths_book record-paper {chapter.name}"
    )


NUMBER_KEY = re.compile(r"^-?\d+(\.\d+)?(e-?\d+)?$")
RUN_DEPENDENT_KEYS = {"reproducibility": ("timings.", "claims."), "oneshot": ("exact_widths.U_exact",)}
"""Keys whose presence depends on what ran before or on the profile, not on the chapter's code: the reproducibility
chapter's run times exist for the profiles and chapters this checkout executed, and its table of claims holds the
tests that had the power to be claims in each chapter's run (the others are diagnostics); the one-shot chapter's
exact runs, one entry per width, exist where the profile samples the exact density (the smoke profile does, the
paper profile samples it at no width)."""
POWER_DEPENDENT_KEYS = ("diagnostics",)
"""Keys of every chapter whose presence depends on the run's power, not on the chapter's code: the diagnostics
(agreement tests below attnpaths.claims.MIN_POWER) exist in runs with too few draws, e.g. the smoke profile."""


def key_shape(node, where: str = "") -> set[str]:
    """The dotted keys of a results tree down to its leaves, with keys that are numbers (widths, sizes,
    temperatures: they differ between the smoke and paper profiles) written ``#``; a list is a leaf."""
    if not isinstance(node, dict):
        return {where}
    if not node:
        return {f"{where}{{}}"}
    found = set()
    for key, value in node.items():
        key = "#" if NUMBER_KEY.match(str(key)) else str(key)
        found |= key_shape(value, f"{where}.{key}" if where else key)
    return found


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.name for c in CHAPTERS])
def test_record_holds_the_keys_that_the_chapter_writes_today(chapter):
    """The record's results have the keys of the chapter's smoke baseline (which the nbval test holds to what
    the chapter writes today), numbers in keys aside: a change of the chapter's results that forgets
    ``record-paper`` fails here, in the fast tier, without a paper run."""
    from attnpaths_book.baselines import results_baseline_path

    record = load_record(chapter.name)
    baseline = json.loads(results_baseline_path(LAYOUT, chapter).read_text())
    skip = RUN_DEPENDENT_KEYS.get(chapter.name, ()) + POWER_DEPENDENT_KEYS
    recorded, written = (
        {k for k in key_shape(tree["values"]) if not k.startswith(skip)} for tree in (record["results"], baseline)
    )
    assert recorded == written, (
        f"{record_path(LAYOUT, chapter).relative_to(ROOT)}: keys only in the record: "
        f"{sorted(recorded - written)[:10]}; keys the chapter writes today that the record "
        f"lacks: {sorted(written - recorded)[:10]}\nremake it with: python -m attnpaths_book "
        f"record-paper {chapter.name}"
    )


ENFORCING = [c for c in CHAPTERS if "enforce_claims" in c.defaults]


@pytest.mark.parametrize("chapter", ENFORCING, ids=[c.name for c in ENFORCING])
def test_recorded_run_enforced_the_chapters_claims(chapter):
    """The run behind the record enforced (stopped on a contradiction of) the claims that the chapter's paper
    profile enforces."""
    record = load_record(chapter.name)
    enforced = record["execution"]["parameters"].get("enforce_claims")
    expected = chapter.profiles["paper"].get("enforce_claims", chapter.defaults["enforce_claims"])
    assert enforced == expected, (
        f"{chapter.name}: the recorded paper run enforced the claims {enforced}, the "
        f"chapter's paper profile enforces {expected}"
    )


def _recorded_verdicts(node, where="values"):
    """Every verdict stored anywhere in a results tree (the claims, structural checks, power checks against
    wrong theories, retraining checks, ...), with where it sits."""
    if isinstance(node, dict):
        if {"claim", "statement", "outcome", "test"} <= node.keys():
            yield where, node
            return
        for key, value in node.items():
            yield from _recorded_verdicts(value, f"{where}.{key}")
    elif isinstance(node, list):
        for k, value in enumerate(node):
            yield from _recorded_verdicts(value, f"{where}[{k}]")


def _verdicts_of_every_record():
    for chapter in CHAPTERS:
        path = record_path(LAYOUT, chapter)
        if path.is_file():
            for where, verdict in _recorded_verdicts(read_record(path)["results"]["values"]):
                yield pytest.param(verdict, id=f"{chapter.name}:{verdict['claim']}@{where}")


@pytest.mark.parametrize("recorded_verdict", list(_verdicts_of_every_record()))
def test_every_recorded_verdict_follows_from_the_inputs_recorded_with_it(recorded_verdict):
    """Each verdict of every record is decided again by the claims module's test from the numbers stored with it
    (``Verdict.inputs``): same outcome, same statistic, p-value and z. The tolerance, relative 1e-9, covers
    scipy's distribution functions on another CPU (the same inputs, a few ulps apart); an outcome never moves."""
    verdict = Verdict.from_dict(recorded_verdict)
    assert verdict.inputs is not None, f"claim {verdict.claim!r} was recorded without the inputs of its test"
    again = rederive(verdict)
    assert again.outcome is verdict.outcome, (
        f"claim {verdict.claim!r}: recorded {verdict.outcome.value!r}, its inputs give {again.outcome.value!r}"
    )
    for field in ("value", "p_value", "z"):
        recorded_value, value = getattr(verdict, field), getattr(again, field)
        assert (recorded_value is None) == (value is None), f"claim {verdict.claim!r}: {field}"
        if value is not None:
            assert value == pytest.approx(recorded_value, rel=1e-9, abs=1e-12), f"claim {verdict.claim!r}: {field}"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.name for c in CHAPTERS])
def test_every_reported_claim_could_hold_for_a_correct_result(chapter):
    """The power rule: an agreement test is a claim of the record only if its power for a correct result, at the
    errors it was decided with, is at least MIN_POWER (attnpaths.claims.agreement_power), or if it is contradicted
    (evidence whatever the power); every other test below it is among the record's diagnostics, with that power."""
    values = load_record(chapter.name)["results"]["values"]
    weak = []
    for recorded in values.get("verdicts", []):
        power = agreement_power(Verdict.from_dict(recorded))
        if power is not None and power < MIN_POWER and recorded["outcome"] != "contradicted":
            weak.append(f"{recorded['claim']} (power {power:.3g})")
    assert not weak, f"{chapter.name}: claims whose tests could not hold for a correct result: {weak}"
    for recorded in values.get("diagnostics", []):
        power = agreement_power(Verdict.from_dict({k: v for k, v in recorded.items() if k != "power"}))
        assert power is not None and power < MIN_POWER, f"{chapter.name}: diagnostic {recorded['claim']} has power"
        assert recorded["outcome"] != "contradicted", f"{chapter.name}: contradicted {recorded['claim']} set aside"
        assert recorded["power"] == pytest.approx(power, rel=1e-9), f"{chapter.name}: {recorded['claim']}"


# --------------------------------------------------------------------------------------------------------
# a paper run against the records, by reproducibility class

CHEAP_PAPER_CHAPTERS = ("model",)
"""Chapters whose whole paper profile takes seconds: executed here and compared with their records (the
introduction, as cheap, is a report that needs every other chapter's paper results first)."""
NOT_LINKED = {"_build", ".git", "tests", ".pytest_cache"}


def _results_by_class(name: str, results: dict) -> list[str]:
    record = load_record(name)
    found = compare_results(name, {"values": record["results"]["values"]}, {"values": results["values"]})
    return [d.describe() for d in found]


@pytest.fixture(scope="module")
def paper_workspace(tmp_path_factory) -> BookLayout:
    """A folder that looks like the repository root (its entries linked) with a ``_build`` of its own."""
    folder = tmp_path_factory.mktemp("paper")
    for entry in ROOT.iterdir():
        if entry.name not in NOT_LINKED:
            (folder / entry.name).symlink_to(entry)
    return BookLayout(folder)


@pytest.mark.parametrize("name", CHEAP_PAPER_CHAPTERS)
def test_a_paper_run_here_agrees_with_the_record_by_class(name, paper_workspace):
    """The chapter's paper profile executed on this machine gives the record's numbers within their class
    (on the recording machine, and on any other: CI runs it again under a second CPU dispatch)."""
    load_record(name)
    skip_where_the_paper_run_is_current(name)
    runner.run_chapter(paper_workspace, name, "paper")
    results = json.loads(paper_workspace.results_file(name).read_text())
    problems = _results_by_class(name, results)
    assert not problems, f"{name}: a paper run here differs from its record beyond the numbers' classes:\n" + "\n".join(
        problems[:20]
    )


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.name for c in CHAPTERS])
def test_the_last_paper_run_of_this_checkout_agrees_with_the_record_by_class(chapter):
    """Where ``python -m attnpaths_book book --profile paper`` has run in this checkout, every chapter's results
    agree with its record within the reproducibility classes (exact, rounding, trained, Monte Carlo)."""
    path = LAYOUT.results_file(chapter.name)
    if path.is_file() and read_manifest(LAYOUT.results_dir, chapter.name) is None:
        pytest.skip(f"{path.relative_to(ROOT)} has no manifest: it was not written by the book's runner")
    # a results file that no longer matches its manifest's checksum fails here, naming the file
    results = verify_results(LAYOUT.results_dir, chapter.name) if path.is_file() else None
    if results is None or results.get("profile") != "paper":
        pytest.skip(
            f"no paper-profile results of {chapter.name} in {path.relative_to(ROOT)} "
            "(python -m attnpaths_book book --profile paper makes them)"
        )
    profile = json.loads(json.dumps(resolve_parameters(chapter, "paper")))
    if results["parameters"] != {k: v for k, v in profile.items() if k not in ("profile", "results_dir")}:
        pytest.skip(f"the paper results of {chapter.name} were made with other parameters than its paper profile")
    problems = _results_by_class(chapter.name, results)
    assert not problems, (
        f"{chapter.name}: the last paper run differs from its record beyond the numbers' "
        "classes:\n" + "\n".join(problems[:20])
    )


# --------------------------------------------------------------------------------------------------------
# intro and model


def test_intro_recomputes(recorded):
    from attnpaths.experiments.path_data import path_data
    from attnpaths.experiments.sweep import theory_sweep
    from attnpaths.hmc import bands as ex
    from attnpaths.hmc.data import paper_test_set, paper_train_set
    from attnpaths.hmc.networks import four_path_network
    from attnpaths.paths import all_paths

    r = recorded("intro")
    hmc, image = all_paths(r["hmc_heads"]), all_paths(r["image_heads"])
    r.check("num_layers", len(r["hmc_heads"]))
    r.check("hmc_heads_per_layer", r["hmc_heads"][0])
    r.check("hmc_num_paths", len(hmc))
    r.check("image_heads_per_layer", r["image_heads"][0])
    r.check("image_num_paths", len(image))
    r.check("image_num_path_pairs", len(image) ** 2)

    train, test = paper_train_set(), paper_test_set()
    headline = theory_sweep(
        path_data(four_path_network(train), train, test),
        [r["headline_width"]],
        [ex.PAPER_TEMPERATURE],
        gp_limit=True,
        progress=False,
    )
    r.check(
        "headline",
        {
            "theory_accuracy": headline.accuracy["test"][0, 0],
            "gp_accuracy": headline.gp.accuracy["test"][0, 0],
            "N": r["headline_width"],
        },
    )


def test_model_recomputes(recorded):
    from attnpaths.attention import AttentionLayer
    from attnpaths.hmc.data import paper_train_set
    from attnpaths.hmc.heads import same_token, uniform_attention
    from attnpaths.hmc.networks import four_path_network
    from attnpaths.paths import path_attention, path_features

    r = recorded("model")
    data = paper_train_set(num_examples=r["num_examples"])
    task, example = data.task, r["example"]
    x = data.x[example : example + 1]
    states = data.hidden_states[example].numpy()
    heads = {"same-token": same_token(task, seed=127), "uniform": uniform_attention(task, seed=217)}
    matrices = {name: AttentionLayer(W=W).matrices(x)[0, 0].numpy() for name, W in heads.items()}
    omega = matrices["same-token"]
    argmax_key = omega[:, 2:].argmax(axis=0)
    r.check("example_hidden_states", states)
    r.check("same_token_stays", int((states[1:] == states[:-1]).sum()))
    r.check("same_token_attends_previous", int((argmax_key == np.arange(1, len(states))).sum()))
    r.check("same_token_attends_bos", int((argmax_key == 0).sum()))
    r.check("uniform_deviation", float(np.abs(matrices["uniform"] - 1 / omega.shape[0]).max()))

    network = four_path_network(data)
    omega_paths = path_attention(network.attention.matrices(x))[0].numpy()
    features = path_features(data.x, network.attention).numpy()
    direction = (task.v_plus + task.v_minus).numpy()
    direction = np.concatenate([direction, np.zeros(features.shape[1] - len(direction))])
    projection = np.einsum("i,pin->pn", direction / np.linalg.norm(direction), features)
    y = data.y.numpy()
    separation = {}
    for i in network.plot_order:
        a, b = projection[y > 0, i], projection[y < 0, i]
        separation[network.path_names[i]] = (a.mean() - b.mean()) / np.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 2)
    r.check("path_attention_example", {network.path_names[i]: omega_paths[i] for i in network.plot_order})
    r.check("class_separation", separation)


# --------------------------------------------------------------------------------------------------------
# theory


def test_theory_recomputes(recorded):
    from attnpaths.checks import prior_kernel_monte_carlo
    from attnpaths.experiments.path_data import path_data
    from attnpaths.experiments.sweep import theory_sweep
    from attnpaths.hmc.data import paper_test_set, paper_train_set
    from attnpaths.hmc.networks import four_path_network
    from attnpaths.kernels import gp_kernel
    from attnpaths.network import AttentionNetwork
    from attnpaths.paths import path_features
    from attnpaths.theory import solve
    from attnpaths.theory.claims import local_slopes

    r = recorded("theory")
    widths, temperature = r["widths"], r["temperature"]
    train, test = paper_train_set(num_examples=r["num_train"]), paper_test_set(num_examples=r["num_test"])
    network = four_path_network(train)
    order = list(network.plot_order)
    data = path_data(network, train, test)
    features = data.features
    sweep = theory_sweep(data, widths, [temperature], gp_limit=True, progress=False)
    distance = np.array([np.abs(U - np.eye(4)).max() for U in sweep.U[:, 0]])
    r.check("path_order", [network.path_names[i] for i in order])
    r.check("U", {str(int(w)): sweep.U[k, 0][np.ix_(order, order)] for k, w in enumerate(sweep.widths)})
    r.check("theory_accuracy", sweep.accuracy["test"][:, 0])
    r.check("gp_accuracy", sweep.gp.accuracy["test"][0, 0])
    r.check("max_distance_to_gp", distance)
    far = [
        solve(features, train.y, heads=network.heads, width=float(w), temperature=temperature)
        for w in r["asymptotic_widths"]
    ]
    far_distance = np.array([np.abs(s.U - np.eye(4)).max() for s in far])
    r.check("asymptotic_max_distance_to_gp", far_distance)
    all_widths = np.concatenate([np.asarray(widths, float), np.asarray(r["asymptotic_widths"], float)])
    r.check("local_slopes", local_slopes(all_widths, np.concatenate([distance, far_distance])))
    r.check("certificate.hessian_min_eigenvalue", sweep.hessian_min_eigenvalue[:, 0])
    r.check("certificate.iterations", sweep.iterations[:, 0])

    mc_examples = r["mc_examples"]
    inputs = torch.cat([train.x[: mc_examples // 2], train.x[-(mc_examples - mc_examples // 2) :]])
    r.check("prior_kernel.gp_kernel", gp_kernel(path_features(inputs, network.attention)))
    generator = torch.Generator().manual_seed(r["seed"] + 1)  # independent of the chapter's draws
    for N in r["mc_widths"]:
        mean, se = prior_kernel_monte_carlo(
            AttentionNetwork(network.attention, width=N),
            inputs,
            generator,
            num_samples=min(MC_TEST_SAMPLES, r["mc_samples"]),
        )
        key = f"prior_kernel.{int(N)}"
        r.check_mc(f"{key}.mc_kernel", mean.numpy(), se.numpy(), f"{key}.standard_error")
    # the parameters that the chapter copies into its values
    r.check("widths", widths)
    r.check("temperature", temperature)
    r.check("asymptotic_widths", r["asymptotic_widths"])
    r.check("mc_samples", r["mc_samples"])


# --------------------------------------------------------------------------------------------------------
# hidden Markov chains (Figure 2)


BAND_VERDICT_RTOL = 1e-6
"""The statistics of the band claims (t-tests over the data sets of theory numbers) against the record: the theory
numbers reproduce to rounding (ROUNDING_RTOL) and a t statistic or p-value amplifies that by at most the
inverse of the spread of its differences (several 1e-3 here), hence 1e-6; the outcome must be the same."""


def _hmc_network_values(r, prefix, curve, data, band_sets, band_factory, gp_references):
    """Check the theory curve, U, PC overlaps, ablations and the data sets ``band_sets`` of the band of one network."""
    from attnpaths.experiments.kernel_pcs import pc_overlaps
    from attnpaths.hmc import bands as ex

    temperature, widths = r["temperature"], r["widths"]
    r.check(f"{prefix}theory_accuracy", {"N": curve.widths, "accuracy": curve.accuracy["test"][:, 0]})
    r.check(f"{prefix}U", {str(w): curve.U_at(w) for w in widths})
    r.check(f"{prefix}U_order", list(curve.names))
    r.check(f"{prefix}pc_overlap", pc_overlaps(data, curve.U[curve.index(r["pc_width"]), 0], r["num_pcs"]))
    r.check(f"{prefix}ablations", ex.ablation_curves(data, curve, temperature))

    band = ex.data_set_band(
        band_sets,
        band_factory,
        widths,
        temperature,
        gp_references=gp_references,
        pc_width=r["pc_width"] if gp_references else None,
        pc_components=r["alignment_pcs"],
        progress=False,
    )
    recorded = r.value(f"{prefix}band")
    r.check(f"{prefix}band.widths", band.widths)
    assert_matches_record(
        r.chapter,
        f"{prefix}band.accuracy.per_set[:{len(band_sets)}]",
        band.accuracy,
        recorded["accuracy"]["per_set"][: len(band_sets)],
    )
    assert set(band.gp) == set(recorded["gp_accuracy"]), f"{r.chapter}: values.{prefix}band.gp_accuracy lines"
    for line, accuracies in band.gp.items():
        assert_matches_record(
            r.chapter,
            f"{prefix}band.gp_accuracy.{line}.per_set[:{len(band_sets)}]",
            accuracies,
            recorded["gp_accuracy"][line]["per_set"][: len(band_sets)],
        )
    for stat in ("mean", "min", "max"):  # the summary of the recorded per-set values
        per_set = np.asarray(recorded["accuracy"]["per_set"])
        assert_matches_record(
            r.chapter, f"{prefix}band.accuracy.{stat}", getattr(per_set, stat)(axis=0), recorded["accuracy"][stat]
        )
    if band.label_fraction is not None:
        for kind in ("finite_width", "gp"):
            assert_matches_record(
                r.chapter,
                f"{prefix}band.label_fraction.{kind}",
                band.label_fraction[kind],
                recorded["label_fraction"][kind],
            )
    return band


def _assert_verdicts_recomputed(r, verdicts):
    """Verdicts recomputed from recomputed inputs, through the chapter's claims functions, against the record's."""
    # a claim the chapter reports as a structural check (e.g. hmc 3) is recorded among those, not the verdicts
    structural = r.value("structural_checks") if "structural_checks" in r.values else []
    recorded = {v["claim"]: v for v in [*r.value("verdicts"), *structural]}
    for verdict in verdicts:
        stored = recorded[verdict.claim]
        assert verdict.outcome.value == stored["outcome"], (
            f"{r.chapter}: claim {verdict.claim!r} recomputed {verdict.outcome.value!r}, recorded {stored['outcome']!r}"
        )
        for field in ("value", "p_value", "z"):
            if stored[field] is not None:
                assert getattr(verdict, field) == pytest.approx(stored[field], rel=BAND_VERDICT_RTOL, abs=1e-300), (
                    f"{r.chapter}: claim {verdict.claim!r}.{field}"
                )


@pytest.fixture
def one_torch_thread():
    """One torch thread, as the hmc chapter sets, restored afterwards."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_hmc_recomputes(one_torch_thread, recorded, cluster_client):
    """Every number of the hmc record that needs no sampler, from its recorded parameters: the paper's data, both
    networks' theory, the PC overlaps and kernels, every data set of both bands (on two workers, as the chapter
    does) and the claims computed from them."""
    from attnpaths.engine import use_client
    from attnpaths.experiments import kernel_pcs
    from attnpaths.experiments.path_data import path_data
    from attnpaths.experiments.sweep import head_score_curve, theory_sweep
    from attnpaths.head_scoring import head_labels
    from attnpaths.hmc import bands as ex
    from attnpaths.hmc.data import paper_test_set, paper_train_set
    from attnpaths.hmc.networks import four_path_network, two_path_network
    from attnpaths.theory import classification_accuracy

    r = recorded("hmc")
    widths, temperature, num_train, num_test = r["widths"], r["temperature"], r["num_train"], r["num_test"]
    num_sets = r["num_band_sets"]  # every data set of both bands: the inputs of claims 1 and 3 to 6

    # four paths, the paper's data
    train, test = paper_train_set(num_train), paper_test_set(num_test)
    net4 = four_path_network(train)
    example = 0
    features = train.features[example]
    stays = (train.hidden_states[:, 1:] == train.hidden_states[:, :-1]).double().mean(dim=1).numpy()
    y = train.y.numpy()
    r.check("stay_fraction", {"y=+1": stays[y > 0].mean(), "y=-1": stays[y < 0].mean()})
    r.check(
        "task_example",
        {
            "hidden_states": train.hidden_states[[0, num_train // 2]].numpy(),
            "x": train.x[example].numpy(),
            "along_e_B": torch.einsum("i,it->t", train.task.e_B, features).numpy(),
            "along_e_A": torch.einsum("i,it->t", train.task.e_A, features).numpy(),
            "perp_rms": (
                train.noise_components()["perp"][example].norm(dim=0) / np.sqrt(train.task.feature_width - 2)
            ).numpy(),
        },
    )
    r.check(
        "attention_example",
        {
            f"layer{l + 1}_head{h + 1}": layer.matrices(train.x[example][None])[0, h].numpy()
            for l, layer in enumerate(net4.attention.layers)
            for h in range(layer.num_heads)
        },
    )

    data4 = path_data(net4, train, test)
    curve4 = theory_sweep(data4, widths, [temperature], progress=False)
    gp_means = ex.gp_predictions(train, test, temperature)
    r.check("gp_accuracy", {key: classification_accuracy(mean, test.y.numpy()) for key, mean in gp_means.items()})
    sets4 = ex.data_set_draws(
        num_sets, torch.Generator().manual_seed(r["band_seed"]), num_train=num_train, num_test=num_test
    )
    with use_client(cluster_client):
        band4 = _hmc_network_values(r, "", curve4, data4, sets4, four_path_network, gp_references=True)

    U_pc = curve4.U[curve4.index(r["pc_width"]), 0]
    kernels = kernel_pcs.appendix_kernels(data4, U_pc)
    r.check("kernels", {"N": r["pc_width"], **kernels})
    shown_y = np.concatenate([np.ones(len(kernels["GP"]) // 2), -np.ones(len(kernels["GP"]) // 2)])
    r.check("kernel_alignment", {name: kernel_pcs.centered_alignment(K, shown_y) for name, K in kernels.items()})

    versions = [v for layer in net4.head_versions for v in layer]
    r.check(
        "head_scores",
        {
            "N": curve4.widths,
            "scores": head_score_curve(curve4, net4.heads),
            "labels": [f"{label} ({v})" for label, v in zip(head_labels(net4.heads), versions)],
        },
    )

    # two paths, noisier data
    train2 = paper_train_set(num_train, sigma_perp=ex.NOISY_SIGMA_PERP)
    test2 = paper_test_set(num_test, sigma_perp=ex.NOISY_SIGMA_PERP)
    data2 = path_data(two_path_network(train2), train2, test2)
    curve2 = theory_sweep(data2, widths, [temperature], gp_limit=True, progress=False)
    r.check("two_path.gp_accuracy", {"g+d": curve2.gp.accuracy["test"][0, 0]})
    sets2 = ex.data_set_draws(
        num_sets,
        torch.Generator().manual_seed(r["band_seed"] + 1),
        num_train=num_train,
        num_test=num_test,
        sigma_perp=ex.NOISY_SIGMA_PERP,
    )
    with use_client(cluster_client):
        band2 = _hmc_network_values(r, "two_path.", curve2, data2, sets2, two_path_network, gp_references=False)

    # claims 1 (over data sets and on the authors' data), 3, 4, 5 and 6, through the chapter's claims functions
    from attnpaths.experiments import finite_width as fw
    from attnpaths.hmc import claims as hmc_claims

    level, extent = r["claim_level"], (int(widths[0]), int(widths[-1]))
    curve4_gp = theory_sweep(data4, widths[:1], [temperature], gp_limit=True, progress=False)
    verdicts = []
    for label, band, curve, labels in (
        ("4 paths", band4, curve4_gp, test.y.numpy()),
        ("2 paths", band2, curve2, test2.y.numpy()),
    ):
        where = f", {label}"
        verdicts += [
            fw.finite_width_advantage_over_data_sets(
                f"1 ({label})",
                accuracy_small=band.accuracy[:, 0],
                accuracy_large=band.accuracy[:, -1],
                gp_accuracy=band.gp["all"],
                widths=extent,
                level=level,
                where=where,
            ),
            fw.finite_width_advantage(
                f"1 (authors' data, {label})",
                theory_mean=curve.means["test"][0, 0],
                gp_mean=curve.gp.means["test"][0, 0],
                labels=labels,
                width=extent[0],
                level=level,
                where=f", authors' data set, {label}",
            ),
            fw.gp_limit_approach(
                f"3 ({label})", U_small=band.U[:, 0], U_large=band.U[:, -1], widths=extent, level=level, where=where
            ),
            hmc_claims.path_interplay(
                f"6 ({label})",
                U_small=band.U[:, 0],
                U_large=band.U[:, -1],
                names=band.names,
                widths=extent,
                level=level,
                where=where,
            ),
        ]
    verdicts += [
        fw.kernel_alignment(
            "4",
            fraction_fw=band4.label_fraction["finite_width"],
            fraction_gp=band4.label_fraction["gp"],
            k=r["alignment_pcs"],
            width=r["pc_width"],
            level=level,
        ),
        hmc_claims.gp_ordering("5", gp_accuracy=band4.gp, level=level),
    ]
    _assert_verdicts_recomputed(r, verdicts)


WEIGHT_CHECK_WIDTHS = (10, 30)
"""The sampled widths at which the test below runs the exact density again: where the finite-width effect, and so
the information on the entropy weight, is largest."""


def test_hmc_action_against_the_recorded_samples(one_torch_thread, recorded):
    """Claim 2w on the record's posterior samples of the 4-path network (drawn by the network's Gibbs sampler,
    which shares no code with the action) against the exact density (eq-exact-density) of the action as the code
    computes it now, run again here with short chains at the widths of ``WEIGHT_CHECK_WIDTHS`` (about 30 s): a
    change to the energy or to the entropy's weight makes the samples measure another weight and the claim
    fails, where the record alone could not see it."""
    from types import SimpleNamespace

    from attnpaths.experiments import finite_width as fw
    from attnpaths.experiments import sampling
    from attnpaths.experiments.path_data import path_data
    from attnpaths.hmc.data import paper_test_set, paper_train_set
    from attnpaths.hmc.networks import four_path_network

    r = recorded("hmc")
    train, test = paper_train_set(r["num_train"]), paper_test_set(r["num_test"])
    data = path_data(four_path_network(train), train, test)
    points, exact = {}, {}
    for k, width in enumerate(WEIGHT_CHECK_WIDTHS):
        points[width] = SimpleNamespace(
            U=np.array(r.value("U_sampled")[str(width)]), U_se=np.array(r.value("sampler")[str(width)]["U_mc_se"])
        )
        generator = torch.Generator().manual_seed(1000 + k)
        run = dict(num_chains=16, num_warmup=150, num_samples=250, thin=2, progress=False)
        exact[width] = sampling.exact_order_parameter(data, width, r["temperature"], generator, **run)
        for c in r["exact_scales"]:
            exact[width].scaled[float(c)] = sampling.exact_order_parameter(
                data, sampling.scaled_width(width, c), r["temperature"], generator, **run
            )
    verdict = fw.entropy_weight_agreement(
        "2w (4 paths)", points=points, exact=exact, margin=r["weight_margin"], level=r["claim_level"]
    )
    assert verdict.holds, verdict.sentence()


def test_depth_recomputes(one_torch_thread, recorded):
    """The depth chapter: the class separation of every path and the theory (accuracy, U of every layer) of both
    networks at every width, from the record's parameters. The posterior samples and the exact means of U cost
    minutes and are not recomputed."""
    from attnpaths.experiments.path_data import path_data
    from attnpaths.experiments.sweep import theory_sweep
    from attnpaths.hmc.data import paper_test_set, paper_train_set
    from attnpaths.hmc.depth.networks import path_class_separation, three_layer_network, wide_network

    r = recorded("depth")
    widths, temperature = r["widths"], r["temperature"]
    train, test = paper_train_set(r["num_train"]), paper_test_set(r["num_test"])
    networks = {
        "3 layers": three_layer_network(train),
        "4 + 2 heads": wide_network(train),
        "3 layers, authors' layer-1 head": three_layer_network(train, bos_to_bos=False),
    }
    data = {key: path_data(net, train, test) for key, net in networks.items()}
    r.check(
        "class_separation",
        {
            key: dict(zip(net.path_names, path_class_separation(data[key].features, train.y, train)))
            for key, net in networks.items()
        },
    )
    for key, tag in (("3 layers", "deep"), ("4 + 2 heads", "wide")):
        curve = theory_sweep(data[key], widths, [temperature], gp_limit=True, progress=False)
        r.check(
            f"{tag}_theory",
            {"N": curve.widths, "accuracy": curve.accuracy["test"][:, 0], "U": {str(w): curve.U_at(w) for w in widths}},
        )
        r.check(f"{tag}_gp_accuracy", curve.gp.accuracy["test"][0, 0])
        r.check(f"{tag}_path_order", list(curve.names))


# --------------------------------------------------------------------------------------------------------
# one-shot images (Figure 3): the GD model takes minutes; only what follows from the recorded U


ONESHOT_CHECK_WIDTHS = (10, 100)
"""Widths of the one-shot grid solved again from the shipped weights, at the temperatures the record selected."""


def test_oneshot_theory_and_head_scores_from_the_shipped_weights(one_torch_thread, recorded):
    """The one-shot chapter from the shipped weights up: the data set, the GD model's attention, the episodes and
    their path features, then the theory at ``ONESHOT_CHECK_WIDTHS`` (the record's selected temperatures) and
    the head scores of its ``U``; none of it is read from the record (about 15 s)."""
    from attnpaths.experiments.sweep import theory_sweep
    from attnpaths.head_scoring import head_scores
    from attnpaths.oneshot import load_digit_pairs
    from attnpaths.oneshot.episodes import draw_episodes, episode_features
    from attnpaths_book import trained as shipped_models

    r = recorded("oneshot")
    dataset = oneshot_dataset(r)
    config = oneshot_training(r)
    trained, source = shipped_models.oneshot_model(config, dataset, retrain=False, device="cpu")
    assert source.source == "shipped", "the paper profile's one-shot model must come with the package"
    episodes = draw_episodes(
        dataset,
        trained.encoder,
        num_train=r["num_train"],
        num_validation=r["num_validation"],
        num_test=r["num_test"],
        seed=r["episode_seed"],
        digits=load_digit_pairs((0, 1), image_size=r["image_size"]),
    )
    data = episode_features(episodes, trained.model.attention())
    selected = r.value("theory_accuracy")
    temperature = dict(zip(selected["N"], selected["temperature"]))
    heads = (r["num_heads"], r["num_heads"])
    for width in ONESHOT_CHECK_WIDTHS:
        sweep = theory_sweep(data, [width], [temperature[width]], progress=False)
        r.check(f"U.{width}", sweep.U[0, 0])
        k = selected["N"].index(width)
        for split in ("test", "validation"):
            assert_matches_record(
                r.chapter, f"theory_accuracy.{split}[{k}]", sweep.accuracy[split][0, 0], selected[split][k]
            )
        if width == r.value("head_scores")["N"]:
            r.check("head_scores.scores", head_scores(sweep.U[0, 0], heads).ravel())


def test_oneshot_head_labels_and_the_gd_weights_scores_follow_from_the_record():
    """The head labels, and the paper's score applied to the GD model's own path-weight overlaps ``U_gd`` as
    recorded (``U_gd`` comes from the shipped weights' value maps, which the test above does not load)."""
    from attnpaths.head_scoring import head_labels, head_scores

    r = Recorded("oneshot")
    heads = (r["num_heads"], r["num_heads"])
    r.check("head_scores.labels", head_labels(heads))
    r.check("head_scores_gd", head_scores(np.asarray(r.value("U_gd")), heads).ravel())


# --------------------------------------------------------------------------------------------------------
# pruning: one seed of each model kind, end to end from its shipped weights

PRUNING_ACCURACY_ATOL = 1 / 400 + 1e-12
"""Accuracies of the float32 models on the test images (400): an output within float32 rounding of 0 may change
sign on another CPU and move an accuracy by one image."""
PRUNING_SCORE_RTOL = 1e-4
"""Head scores computed from float32 model outputs and gradients (the theory's in float64 on features of the float32
attention): float32 rounding, summed over the images, on another CPU."""


def test_pruning_first_seed_of_each_model_kind_from_its_shipped_weights(one_torch_thread, recorded):
    """Seed 0 of both architectures: the shipped weights, the subset table on every split, every ranking's scores and
    the theory's temperature (about 15 s); the record's first seed must come out again."""
    from attnpaths.pruning.digits import digit_patches, held_out_splits, train_test_split
    from attnpaths.pruning.sweep import run_seed, training_seeds
    from attnpaths_book import trained as shipped_models

    r = recorded("pruning")
    data = digit_patches(r["patch_size"], r["positive_digits"])
    train, held_out = train_test_split(data, r["num_test"], np.random.default_rng(r["data_seed"]))
    masks = held_out_splits(len(held_out), r["num_validation"], r["data_seed"], r["num_splits"])
    seeds = training_seeds(r["seed"], r["num_seeds"])
    for architecture in r["architectures"]:
        config = pruning_training(r, architecture)
        weights, _, shipped = shipped_models.pruning_weights(config, train, seeds)
        assert shipped is not None, f"the paper profile's {architecture} models must come with the package"
        result = run_seed(
            0,
            seed=r["seed"],
            train=train,
            held_out=held_out,
            validation_masks=masks,
            training=config,
            theory_width=r["theory_width"],
            temperatures=r["temperatures"],
            theory_examples=r["theory_examples"],
            sensitivity_widths=r["sensitivity_widths"],
            max_iterations=r["max_iterations"],
            weights=weights[0],
        )
        recorded_values = r.value(architecture)
        for split in ("validation", "test"):
            for bound in ("best", "random"):  # from the subset table alone
                # accuracies: at most one image apart, an absolute tolerance (a relative one would mean nothing)
                got = np.asarray(result[bound][split], dtype=float)
                want = np.asarray(recorded_values["curves"][split][bound][0], dtype=float)
                assert got.shape == want.shape and np.all(np.abs(got - want) <= PRUNING_ACCURACY_ATOL), (
                    f"{architecture} {split} {bound}: {got} against the record's {want}"
                )
        assert set(result["scores"]) == set(recorded_values["scores"])
        for name, scores in result["scores"].items():
            np.testing.assert_allclose(
                np.asarray(scores, dtype=float),
                np.asarray(recorded_values["scores"][name][0], dtype=float),
                rtol=PRUNING_SCORE_RTOL,
                atol=1e-9,
                err_msg=f"{architecture} {name}",
            )
        assert result["theory"]["temperature"] == recorded_values["theory"]["temperature"][0]


# --------------------------------------------------------------------------------------------------------
# exchangeability (E1-E4) and related results (R1-R5): closed forms, and seeded simulations replayed


def _rng(seed: int, experiment: int) -> np.random.Generator:
    return np.random.default_rng([seed, experiment])


def test_exchangeability_recomputes(recorded):
    from attnpaths.exchangeability.convergence import (
        attention_error_vs_length,
        bandwidth_experiment,
        cme_vs_softmax_experiment,
        smoothing_bias_floor,
    )
    from attnpaths.exchangeability.erm import MODES, erm_experiment
    from attnpaths.exchangeability.estimators import predicted_attention_mse, tilted_key_mean
    from attnpaths.exchangeability.representation import (
        concept_posterior_experiment,
        gaussian_representation_experiment,
        gaussian_risk_theory,
    )
    from attnpaths.exchangeability.transfer import predicted_transfer_ratio, transfer_experiment
    from attnpaths.statistics import loglog_slope

    r = recorded("exchangeability")
    seed = r["seed"]

    # E1: the Bayes risks (ex-risk-m1) in closed form, then the seeded experiments
    readout, tau, sigma, label_noise = (1.0, -1.0, 0.5, 0.0), 1.0, 2.0, 0.1
    lengths = np.asarray(r["e1_lengths"])
    r.check("E1_gaussian.risk_posterior_theory", gaussian_risk_theory(readout, lengths, tau, sigma, label_noise))
    r.check(
        "E1_gaussian.risk_first_token_theory",
        np.full(lengths.shape, gaussian_risk_theory(readout, 1, tau, sigma, label_noise)),
    )
    e1 = gaussian_representation_experiment(
        _rng(seed, 1),
        lengths=r["e1_lengths"],
        num_sequences=r["e1_num_sequences"],
        readout=readout,
        tau=tau,
        sigma=sigma,
        label_noise=label_noise,
    )
    r.check(
        "E1_gaussian",
        {key: getattr(e1, key) for key in ("lengths", "risk_posterior", "risk_first_token", "risk_flat_ls")},
    )
    r.check("E1_gaussian", {"perm_diff_posterior": e1.perm_diff_posterior, "perm_diff_flat_ls": e1.perm_diff_flat_ls})
    e1c = concept_posterior_experiment(
        _rng(seed, 2),
        lengths=r["e1_concept_lengths"],
        num_sequences=r["e1_num_sequences"],
        num_concepts=5,
        dim=3,
        sigma=1.5,
    )
    r.check(
        "E1_concepts",
        {
            key: getattr(e1c, key)
            for key in (
                "lengths",
                "accuracy",
                "accuracy_se",
                "confidence",
                "calibration_se",
                "bin_edges",
                "bin_confidence",
                "bin_accuracy",
                "bin_count",
            )
        }
        | {"concept_means": e1c.means},
    )
    r.check("E1_concepts.perm_diff", e1c.perm_diff)

    # E2: the large-L error (ex-mse), the bias floors and the optimal temperature in closed form, then the
    # seeded experiments
    key_cov, query, value_noise = np.array([[1.0, 0.3], [0.3, 0.5]]), np.array([0.5, -0.3]), 0.5
    inv_cov = np.linalg.inv(key_cov)
    arms = np.stack([inv_cov, np.eye(2), np.zeros((2, 2))])
    e2_lengths = np.asarray(r["e2_lengths"])
    r.check(
        "E2_length.rmse_predicted",
        [np.sqrt(predicted_attention_mse(W, query, key_cov, value_noise, e2_lengths)) for W in arms],
    )
    r.check("E2_length.bias_floor", [np.linalg.norm(tilted_key_mean(W, query, key_cov) - query) for W in arms])
    temperatures = r["e2_temperatures"]
    small, large = r["e2_temperature_small_length"], r["e2_temperature_large_length"]
    beta_star = {
        L: minimize_scalar(
            lambda b: predicted_attention_mse(b * inv_cov, query, key_cov, value_noise, L),
            bounds=(temperatures[0], temperatures[-1]),
            method="bounded",
            options={"xatol": 1e-6},
        ).x
        for L in (small, large)
    }
    r.check("E2_temperature.predicted_best_temperature", {str(L): b for L, b in beta_star.items()})
    m3 = dict(key_cov=key_cov, query=query, value_noise=value_noise)
    e2 = attention_error_vs_length(
        _rng(seed, 3), arms, lengths=r["e2_lengths"], num_sequences=r["e2_num_sequences"], **m3
    )
    r.check("E2_length", {key: getattr(e2, key) for key in ("lengths", "rmse", "rmse_se", "mse", "mse_cov")})
    fit = e2.lengths >= 64
    r.check("E2_length.slope_desired_L_ge_64", loglog_slope(e2.lengths[fit], e2.rmse[0, fit]))
    small_betas = list(temperatures) + [beta_star[small]]
    e2t_small = attention_error_vs_length(
        _rng(seed, 9),
        np.array([b * inv_cov for b in small_betas]),
        lengths=[small],
        num_sequences=r["e2_temperature_small_sequences"],
        **m3,
    )
    e2t_large = attention_error_vs_length(
        _rng(seed, 10),
        np.array([b * inv_cov for b in temperatures]),
        lengths=[large],
        num_sequences=r["e2_num_sequences"],
        **m3,
    )
    r.check(
        "E2_temperature",
        {
            "temperatures_small": small_betas,
            "rmse_small": e2t_small.rmse[:, 0],
            "rmse_se_small": e2t_small.rmse_se[:, 0],
            "rmse_predicted_small": e2t_small.rmse_predicted[:, 0],
            "rmse_large": e2t_large.rmse[:, 0],
            "rmse_se_large": e2t_large.rmse_se[:, 0],
            "rmse_predicted_large": e2t_large.rmse_predicted[:, 0],
        },
    )

    # E2b, E2c: bandwidth and CME; the softmax bias floor in closed form
    e2b = bandwidth_experiment(
        _rng(seed, 4),
        lengths=r["e2b_lengths"],
        bandwidths=np.geomspace(0.02, 1.0, r["e2b_num_bandwidths"]),
        num_sequences=r["e2b_num_sequences"],
        query=0.7,
        value_noise=0.3,
    )
    r.check(
        "E2b_bandwidth",
        {key: getattr(e2b, key) for key in ("lengths", "bandwidths", "mse", "mse_se", "h_star", "mse_star")}
        | {
            "h_star_slope": loglog_slope(e2b.lengths, e2b.h_star),
            "mse_star_slope": loglog_slope(e2b.lengths, e2b.mse_star),
        },
    )
    queries = np.linspace(-1.5, 1.5, 7)
    r.check("E2c_cme.softmax_bias_floor", smoothing_bias_floor(queries, 0.3))
    e2c = cme_vs_softmax_experiment(
        _rng(seed, 5),
        lengths=r["e2c_lengths"],
        num_sequences=r["e2c_num_sequences"],
        queries=queries,
        bandwidth=0.3,
        ridge_scale=0.1,
        value_noise=0.3,
    )
    r.check(
        "E2c_cme",
        {
            key: getattr(e2c, key)
            for key in ("lengths", "queries", "mse_cme", "mse_softmax", "mse_cme_se", "mse_softmax_se")
        }
        | {"cme_slope": loglog_slope(e2c.lengths, e2c.mse_cme)},
    )

    # E3: empirical risk minimisation, both objectives
    for k, mode in enumerate(MODES):
        res = erm_experiment(
            _rng(seed, 6 + k),
            mode,
            lengths=r["e3_lengths"],
            sample_sizes=r["e3_sample_sizes"],
            repetitions=r["e3_repetitions"],
            test_size=r["e3_test_size"],
            reference_size=r["e3_reference_size"],
            key_cov=key_cov,
            value_noise=value_noise,
        )
        r.check(
            f"E3_erm.{mode}",
            dict(
                lengths=res.lengths,
                sample_sizes=res.sample_sizes,
                W_reference=res.W_reference,
                approximation=res.approximation,
                approximation_cov=res.approximation_cov,
                temperature_c_L=res.temperature,
                temperature_c_L_se=res.temperature_se,
                excess=res.excess,
                excess_mean=res.excess_mean,
            ),
        )

    # E4: the predicted transfer ratio in closed form, then the seeded experiment
    kappas = r["e4_condition_numbers"]
    r.check("E4_transfer.ratio_predicted", predicted_transfer_ratio(kappas, value_noise))
    e4 = transfer_experiment(
        _rng(seed, 8),
        condition_numbers=kappas,
        length=r["e4_length"],
        num_sequences=r["e4_num_sequences"],
        value_noise=value_noise,
        label_noise=0.05,
    )
    r.check(
        "E4_transfer",
        {key: getattr(e4, key) for key in ("condition_numbers", "downstream_excess", "ratio", "pretrain_excess")}
        | {"ratio_slope": loglog_slope(e4.condition_numbers, e4.ratio)},
    )


def test_related_recomputes(recorded):
    from attnpaths.related.bayesian_attention import bayesian_attention_experiment
    from attnpaths.related.lipschitz import input_scaling_experiment, sequence_length_experiment
    from attnpaths.related.measures import measure_lipschitz_experiment
    from attnpaths.related.rank_collapse import rank_collapse_experiment
    from attnpaths.statistics import loglog_slope

    r = recorded("related")
    seed = r["seed"]
    r1 = rank_collapse_experiment(
        _rng(seed, 1),
        num_tokens=r["r1_num_tokens"],
        width=r["r1_width"],
        depth=r["r1_depth"],
        repetitions=r["r1_repetitions"],
    )
    # the residuals fall to rounding level within a few layers: their tolerance is relative to the array's scale
    zero_layer = [int(np.argmax(x < 1e-10)) if np.any(x < 1e-10) else r["r1_depth"] + 1 for x in r1.residual_pure]
    r.check(
        "R1_rank_collapse",
        {"residual_pure": r1.residual_pure, "residual_skip": r1.residual_skip, "first_layer_below_1e_10": zero_layer},
    )
    r2 = input_scaling_experiment(
        _rng(seed, 2), scales=r["r2_scales"], num_tokens=6, width=3, num_draws=r["r2_num_draws"]
    )
    r.check(
        "R2_lipschitz",
        {key: getattr(r2, key) for key in ("scales", "dot_product", "l2", "dot_product_draws", "l2_draws")}
        | {"dot_product_growth": r2.dot_product[-1] / r2.dot_product[0]},
    )
    r3 = sequence_length_experiment(
        _rng(seed, 3), num_tokens=r["r3_num_tokens"], radius=r["r3_radius"], repetitions=r["r3_repetitions"]
    )
    big = r3.num_tokens >= 64
    r.check(
        "R3_sqrt_n",
        {key: getattr(r3, key) for key in ("num_tokens", "adversarial", "random", "random_draws")}
        | {
            "adversarial_slope_n_ge_64": loglog_slope(r3.num_tokens[big], r3.adversarial[big]),
            "random_ratio_last_over_128": r3.random[-1] / r3.random[list(r3.num_tokens).index(128)],
        },
    )
    r4 = measure_lipschitz_experiment(
        _rng(seed, 4), num_atoms=r["r4_num_atoms"], num_trials=r["r4_num_trials"], num_queries=r["r4_num_queries"]
    )
    r.check(
        "R4_measures",
        {
            key: getattr(r4, key)
            for key in ("num_atoms", "ratio_max", "ratio_mean", "w1_mean", "delta_mean", "w1", "delta")
        },
    )
    r.check("R4_measures.duplication_diff", r4.duplication_diff)
    r5 = bayesian_attention_experiment(
        _rng(seed, 5), num_tokens=16, dim=8, key_norm=2.0, noise=1.0, num_trials=r["r5_num_trials"], rates=r["r5_rates"]
    )
    r.check("R5_bayes", {"rates": r5.rates, "window": r5.window, "window_uniform": r5.window_uniform})
    r.check("R5_bayes", {"max_weight_diff": r5.max_weight_diff, "max_output_diff": r5.max_output_diff})


# --------------------------------------------------------------------------------------------------------
# one short chain of each sampled claim, with the seed the chapter gave it

SHORT_CHAIN_DRAWS = 60
"""Draws per chain of the short runs below: a prefix of the recorded chain on this machine (the same generator),
another chain on another machine; either way within MC_Z combined standard errors of the record."""


def _short_chain(r, data, width, temperature, identity, key_U, key_se):
    """The network's posterior sampled again at ``width`` with the chapter's seed and plan but fewer draws, against
    the recorded sampled ``U``."""
    from attnpaths.engine import task_generator
    from attnpaths.experiments import sampling

    k = list(r["sampled_widths"]).index(width)
    point = sampling.sample_posterior(
        data,
        width,
        temperature,
        task_generator(r["sample_seed"], *identity, width),
        num_warmup=r["sample_warmup"][k],
        num_samples=SHORT_CHAIN_DRAWS,
        num_chains=r["sample_chains"][k],
        progress=False,
    )
    assert_within_mc_error(r.chapter, key_U, point.U, point.U_se, r.value(key_U), r.value(key_se))


def test_hmc_and_depth_short_chains_agree_with_the_recorded_samples(one_torch_thread, recorded):
    """Claims 2 and 2w (hmc) and a, aw, c (depth) rest on the network's posterior samples: a short chain of each
    network, with its seed, at one sampled width (about 15 s)."""
    from attnpaths.experiments.path_data import path_data
    from attnpaths.hmc.data import paper_test_set, paper_train_set
    from attnpaths.hmc.depth.networks import three_layer_network, wide_network
    from attnpaths.hmc.networks import four_path_network

    r = recorded("hmc")
    train, test = paper_train_set(r["num_train"]), paper_test_set(r["num_test"])
    _short_chain(
        r,
        path_data(four_path_network(train), train, test),
        100,
        r["temperature"],
        (0,),
        "U_sampled.100",
        "sampler.100.U_mc_se",
    )
    d = recorded("depth")
    train, test = paper_train_set(d["num_train"]), paper_test_set(d["num_test"])
    for k, (tag, network) in enumerate((("deep", three_layer_network), ("wide", wide_network))):
        width = d["sampled_widths"][0]
        _short_chain(
            d,
            path_data(network(train), train, test),
            width,
            d["temperature"],
            (k,),
            f"{tag}_sampled.{width}.U",
            f"{tag}_sampled.{width}.U_mc_se",
        )
