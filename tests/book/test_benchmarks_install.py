"""``python -m attnpaths_book bench install``: the committed record of ``pip install .`` (the library without
extras), the constraints it installs with (the same as CI's library step), the size it measures and the entry
point's refusal to record an install that brought in an extra. Nothing here installs: that is the benchmark's
and CI's library step's (``.ci/library_only.sh``)."""

import re
import subprocess

import pytest
from helpers import ROOT

from attnpaths_book.benchmarks import install as bench
from attnpaths_book.benchmarks.record import committed_record_path, read_record


def test_the_committed_record_is_an_install_without_extras():
    record = read_record(committed_record_path("install"))
    report = record["report"]
    assert record["benchmark"] == "install" and record["command"] == "python -m attnpaths_book bench install"
    assert record["commit"] and record["machine"]["cpu_count"] >= 1
    assert report["wall_s"] > 0 and report["venv_mib"] > 0
    assert re.fullmatch(r"2\.13\.\d+(\+\w+)?", report["torch"]), report["torch"]
    assert report["distributions"]["torch"] == report["torch"] and "attnpaths" in report["distributions"]
    assert report["distribution_count"] == len(report["distributions"])
    # none of the extras' or the book's packages: every module checked, and none there
    assert set(report["present"]) == set(bench.ABSENT_MODULES) and not any(report["present"].values())
    assert not {"dask", "distributed", "arviz", "matplotlib", "scikit-learn", "pillow", "papermill"} & {
        name.lower() for name in report["distributions"]
    }
    # the README says nearly all of the environment is torch
    largest = report["largest_site_packages_mib"]
    assert max(largest, key=largest.get) == "torch" and largest["torch"] > 0.5 * report["venv_mib"]


def test_the_constraints_are_those_of_the_library_step():
    script = (ROOT / ".ci" / "library_only.sh").read_text()
    line = re.search(r"^(grep -v '\^-e' requirements\.txt \| sed .*?) > ", script, re.M)
    assert line, "the constraints line of .ci/library_only.sh"
    by_the_script = subprocess.run(["bash", "-c", line.group(1)], cwd=ROOT, capture_output=True, text=True, check=True)
    requirements = (ROOT / "requirements.txt").read_text()
    assert bench.constraints(requirements) == by_the_script.stdout
    assert "torch==2.13.0\n" in by_the_script.stdout and "-e ." not in by_the_script.stdout
    assert "dask==" in by_the_script.stdout and "dask[" not in by_the_script.stdout  # constraints take no extras


def test_the_size_counts_each_file_once_and_follows_no_link(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "big").write_bytes(b"x" * 2**20)
    (tmp_path / "lib" / "small").write_bytes(b"x" * 2**19)
    (tmp_path / "lib64").symlink_to(tmp_path / "lib", target_is_directory=True)
    (tmp_path / "python").symlink_to(tmp_path / "lib" / "big")
    assert bench.tree_mib(tmp_path) == 1.5


@pytest.mark.parametrize("present", [False, True])
def test_the_entry_point_records_only_an_install_without_extras(tmp_path, monkeypatch, capsys, present):
    report = {"wall_s": 1.0, "venv_mib": 2.0, "distribution_count": 1, "torch": "2.13.0"}
    report["present"] = {module: present and module == "PIL" for module in bench.ABSENT_MODULES}
    monkeypatch.setattr(bench, "measure", lambda root, work: dict(report))
    output = tmp_path / "install.json"
    assert bench.main(["--output", str(output)]) == (1 if present else 0)
    if present:
        assert not output.exists() and "['PIL']" in capsys.readouterr().err
    else:
        assert read_record(output)["report"] == report
