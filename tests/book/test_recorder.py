"""The chapters' recorder: parameters read from the parameters cell, glued numbers kept, claims, results file."""

import json
from dataclasses import dataclass

import numpy as np
import pytest
from book_helpers import write_chapter
from helpers import verdict as stand_in_verdict

from attnpaths.claims import MIN_POWER, ClaimViolation, Outcome, agreement_power, equivalence
from attnpaths_book.recorder import ChapterRecorder, glue_name, parameter_names


@dataclass
class Point:
    width: int
    accuracy: np.ndarray


def verdict(claim, outcome=Outcome.HOLDS):
    """A verdict whose statement needs Markdown escapes."""
    return stand_in_verdict(claim, outcome, statement="a *bold* claim with $x$")


@pytest.fixture
def chapter(tmp_path, monkeypatch):
    write_chapter(tmp_path, "alpha", "n = 3\nwidths = [10, 100]\nlevel = 0.01", "values = {}")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_parameters_come_from_the_parameters_cell_with_their_values_after_overrides(chapter):
    assert parameter_names("alpha") == ["n", "widths", "level", "profile", "results_dir"]
    namespace = {"n": 5, "widths": (10, 1000), "level": 0.01, "profile": "paper", "results_dir": "out", "unrelated": 1}
    recorder = ChapterRecorder("alpha", namespace)
    assert recorder.parameters == {"n": 5, "widths": [10, 1000], "level": 0.01}
    assert (recorder.profile, recorder.results_dir, recorder.prefix) == ("paper", "out", "alpha_")
    with pytest.raises(ValueError, match="missing: widths"):
        ChapterRecorder("alpha", {"n": 5, "level": 0.01, "profile": "paper", "results_dir": "out"})


def test_a_chapter_source_is_found_from_the_root_or_from_book(chapter, monkeypatch):
    monkeypatch.chdir(chapter / "book")
    assert parameter_names("alpha")[0] == "n"
    with pytest.raises(FileNotFoundError, match="no source of chapter 'beta'"):
        parameter_names("beta")


def test_glued_recorded_claims_and_run_times_reach_the_results_file(chapter):
    namespace = {"n": 3, "widths": [10, 100], "level": 0.01, "profile": "smoke", "results_dir": "out"}
    recorder = ChapterRecorder("alpha", namespace, prefix="al_")
    assert recorder.glue("gain", np.float64(0.25)) == 0.25
    recorder.glue("label", "four paths", record=False)
    recorder.record("point", Point(width=10, accuracy=np.array([0.5, 0.75])))
    recorder.claims(verdict("1"), verdict("2 N=10", Outcome.NOT_SIGNIFICANT))
    with pytest.raises(ValueError, match="claim '1' is recorded twice"):
        recorder.claims(verdict("1"))
    table = recorder.claims_table()
    assert "a \\*bold\\* claim with \\$x\\$" in table and table.count("\n") == 3

    class Task:
        def __init__(self, value, wall, cpu):
            self.value, self.wall_s, self.cpu_s = value, wall, cpu

        def result(self):
            return self.value

    assert recorder.wait("E1", a=Task(1, 2.0, 1.5), b=Task(2, 3.0, 2.5)) == {"a": 1, "b": 2}
    record = json.loads(recorder.write().read_text())
    assert record["parameters"] == {"n": 3, "widths": [10, 100], "level": 0.01}
    assert record["profile"] == "smoke"
    values = record["values"]
    assert values["glued"] == {"gain": 0.25}
    assert values["point"] == {"width": 10, "accuracy": [0.5, 0.75]}
    assert [v["claim"] for v in values["verdicts"]] == ["1", "2 N=10"]
    assert values["run_seconds"] == {"E1": 5.0} and values["run_cpu_seconds"] == {"E1": 4.0}


def test_an_agreement_test_without_power_for_a_correct_result_is_a_diagnostic(chapter, monkeypatch):
    """An agreement test whose margins are narrow against its errors would fail even for a correct theory: it is
    kept as a diagnostic with its power, out of the claims, and a profile cannot require it."""
    glued = {}
    monkeypatch.setattr("attnpaths_book.recorder._glue", lambda name, value, display: glued.__setitem__(name, value))
    namespace = {"n": 3, "widths": [10, 100], "level": 0.01, "profile": "smoke", "results_dir": "out"}
    recorder = ChapterRecorder("alpha", namespace)
    common = dict(source="here", statistic="U - U_theory", level=0.01)
    powered = equivalence("2 (N=100)", "samples agree", deviation=[0.01], se=[0.01], margin=[0.1], **common)
    weak = equivalence("2 (N=10)", "samples agree", deviation=[0.01], se=[0.05], margin=[0.1], **common)
    assert agreement_power(powered) > MIN_POWER > agreement_power(weak)
    refuted = equivalence("2 (N=20)", "samples agree", deviation=[0.5], se=[0.05], margin=[0.1], **common)
    assert refuted.outcome is Outcome.CONTRADICTED and agreement_power(refuted) < MIN_POWER
    kept = recorder.claims(powered, weak, refuted, verdict("1"))
    # a contradiction is evidence whatever the power: it stays a claim
    assert [v.claim for v in kept] == ["2 (N=100)", "2 (N=20)", "1"] == [v.claim for v in recorder.verdicts]
    assert str(glued["alpha_claim_2__N_10_"].data).startswith("Not a claim: were the theory exactly right")
    with pytest.raises(ClaimViolation, match="requires \\['2 \\(N=10\\)'\\]"):
        recorder.summarize_claims(["1", "2 (N=10)"])
    recorder.summarize_claims(["1"])
    assert "| 2 (N=10): samples agree |" in str(glued["alpha_diagnostics_table"].data)
    values = json.loads(recorder.write().read_text())["values"]
    assert [v["claim"] for v in values["verdicts"]] == ["2 (N=100)", "2 (N=20)", "1"]
    assert [d["claim"] for d in values["diagnostics"]] == ["2 (N=10)"]
    assert values["diagnostics"][0]["power"] == pytest.approx(agreement_power(weak))
    with pytest.raises(ValueError, match="recorded twice"):
        recorder.claims(weak)
    assert [v.claim for v in recorder.tested] == ["2 (N=100)", "2 (N=10)", "2 (N=20)", "1"]
    assert recorder.verdict("2 (N=10)") is weak
    with pytest.raises(KeyError, match="not recorded"):
        recorder.verdict("3")


def test_glue_names_are_identifiers():
    assert glue_name("2 N=10 (4-paths)") == "2_N_10__4_paths_"


def test_a_recorded_value_can_be_glued_under_its_own_or_another_name(chapter, monkeypatch):
    glued = {}
    monkeypatch.setattr("attnpaths_book.recorder._glue", lambda name, value, display: glued.update({name: value}))
    namespace = {"n": 3, "widths": [10, 100], "level": 0.01, "profile": "smoke", "results_dir": "out"}
    recorder = ChapterRecorder("alpha", namespace)
    recorder.record("stays", 4, glue=True)
    recorder.record("attends_bos", 2, glue="bos")
    recorder.record("hidden", 1)
    assert glued == {"alpha_stays": 4, "alpha_bos": 2}
    assert recorder.values == {"stays": 4, "attends_bos": 2, "hidden": 1}


def test_numpy_and_torch_scalars_are_glued_as_python_numbers(chapter, monkeypatch):
    import torch

    glued = {}
    monkeypatch.setattr("attnpaths_book.recorder._glue", lambda name, value, display: glued.update({name: value}))
    namespace = {"n": 3, "widths": [10, 100], "level": 0.01, "profile": "smoke", "results_dir": "out"}
    recorder = ChapterRecorder("alpha", namespace)
    recorder.glue("a", np.float64(0.5))
    recorder.record("b", torch.tensor(2.0, dtype=torch.float64), glue=True)
    assert type(glued["alpha_a"]) is float and type(glued["alpha_b"]) is float
    assert f"{glued['alpha_a']:.2f}" == "0.50"


def test_a_glued_figure_is_closed_and_not_shown_where_it_was_made(chapter, monkeypatch):
    from matplotlib import pyplot as plt

    glued = {}
    monkeypatch.setattr("attnpaths_book.recorder._glue", lambda name, value, display: glued.update({name: display}))
    namespace = {"n": 3, "widths": [10, 100], "level": 0.01, "profile": "smoke", "results_dir": "out"}
    figure = plt.figure()
    # a cell ending with the call shows its value: None shows nothing (the figure appears once, in its
    # {glue:figure} with caption and alt text)
    assert ChapterRecorder("alpha", namespace).figure("fig", figure) is None
    assert glued == {"alpha_fig": False}
    assert not plt.fignum_exists(figure.number)
