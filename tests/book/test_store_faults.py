"""Faults of the commit store and of the build lock, with no kernel (fast tier): a commit journal that names a file
outside the build's folders, or that is damaged or of the wrong shape, is refused without touching any file; a
roll-back puts back only what its commit replaced, across file systems, and finishes when run again after a kill;
a manifest or record of run times of the wrong shape is named with its key; a deleted lock file lets no second run
in, and a live run's working folder survives the others; ``status`` does not wait for a run."""

import errno
import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from book_helpers import commit, tiny_book_at, unit_files

from attnpaths.json_files import DamagedFile
from attnpaths_book import executor, store
from attnpaths_book.cli import main
from attnpaths_book.layout import BookLayout, book_lock


@pytest.fixture
def checkout(tmp_path) -> BookLayout:
    """A checkout in ``tmp_path/checkout`` whose chapter ``theory`` has one committed unit (value 1.0, key
    ``key-1``); ``tmp_path`` itself lies outside it."""
    layout = BookLayout(tmp_path / "checkout")
    commit(layout, "theory", 1.0)
    return layout


@pytest.fixture
def elsewhere(tmp_path) -> Path:
    """A file outside the checkout, which nothing of the book may change."""
    path = tmp_path / "elsewhere.txt"
    path.write_text("a file of someone else\n")
    return path


def journal_folder(layout: BookLayout, chapter: str = "theory") -> Path:
    return layout.results_dir / store.MANIFEST_FOLDER / f"{chapter}{store.JOURNAL_SUFFIX}"


def write_journal(layout: BookLayout, record: dict, kept: dict | None = None) -> Path:
    """Write ``record`` as the journal of ``theory``, with the files ``kept`` (``{name: text}``) beside it."""
    folder = journal_folder(layout)
    folder.mkdir(parents=True)
    for name, text in (kept or {}).items():
        (folder / name).write_text(text)
    (folder / store.JOURNAL_FILE).write_text(json.dumps(record))
    return folder


def untouched_journal(layout: BookLayout) -> dict:
    """The sealed journal of a commit of ``theory`` that replaced nothing yet (its copies are the current files)."""
    files = {}
    for role, target in (("results", "results/theory.json"), ("notebook", "executed/book/theory.ipynb")):
        path = layout.build_dir / target
        files[role] = {"target": target, "kept": role, "kept_sha256": store.sha256_of(path), "new_sha256": "1" * 64}
    return {"chapter": "theory", "files": files, "new_manifest_sha256": "2" * 64}


# --------------------------------------------------------------------------------------------------------
# a journal is trusted only for the build's own folders


@pytest.mark.parametrize("kept", [None, "x"])
def test_a_journal_naming_a_file_outside_the_build_changes_nothing(checkout, elsewhere, kept):
    """A journal of the earlier format naming an absolute path elsewhere: neither removed (kept null) nor
    overwritten with the journal's copy (kept "x"); the journal is removed and the unit stays current."""
    before = unit_files(checkout, "theory")
    record = {"files": {"results": {"target": str(elsewhere), "kept": kept}}, "new_manifest_sha256": "0" * 64}
    write_journal(checkout, record, {"x": "the journal's copy\n"})
    restored = store.recover(checkout.results_dir)
    assert elsewhere.read_text() == "a file of someone else\n"
    assert restored == [] and not journal_folder(checkout).exists()
    assert unit_files(checkout, "theory") == before
    assert store.unit_state(checkout.root, checkout.results_dir, "theory", "key-1").fresh


@pytest.mark.parametrize(
    "role, key, value",
    [
        ("results", "target", "results/../../../elsewhere.txt"),
        ("results", "target", "executed/../../elsewhere.txt"),
        ("results", "target", "/elsewhere.txt"),
        ("results", "kept", "../../../../elsewhere.txt"),
        ("notebook", "kept", "journal.json"),
    ],
)
def test_a_sealed_journal_that_leaves_the_build_folders_is_refused(checkout, elsewhere, role, key, value):
    """A journal whose checksum is right but whose target climbs out of the build's folders, or whose copy is
    not a plain name in the journal's folder, is refused with one line naming it and why."""
    before = unit_files(checkout, "theory")
    record = untouched_journal(checkout)
    if value.startswith("/"):
        value = str(elsewhere)
    record["files"][role][key] = value
    if key == "kept":  # the copy that a roll-back would put back is the outside file (or the journal itself)
        checkout.results_file("theory").write_text("replaced by a commit\n")
    write_journal(checkout, store._seal(record))
    said = []
    assert store.recover(checkout.results_dir, progress=said.append) == []
    assert elsewhere.read_text() == "a file of someone else\n"
    assert not journal_folder(checkout).exists()
    assert len(said) == 1 and "refused" in said[0] and "theory.journal" in said[0], said
    if key == "target":
        assert unit_files(checkout, "theory") == before
    else:  # the half-made unit is left as it is: stale, not made whole from a file elsewhere
        assert not store.unit_state(checkout.root, checkout.results_dir, "theory", "key-1").fresh


@pytest.mark.parametrize("kept", [None, "x"])
def test_status_with_a_journal_naming_a_file_elsewhere_changes_nothing_and_says_so(
    tmp_path, elsewhere, kept, monkeypatch, capsys
):
    book = tiny_book_at(tmp_path / "checkout")
    record = {"files": {"results": {"target": str(elsewhere), "kept": kept}}, "new_manifest_sha256": "0" * 64}
    write_journal(book, record, {"x": "the journal's copy\n"})
    monkeypatch.chdir(book.root)
    assert main(["status"]) == 0
    assert elsewhere.read_text() == "a file of someone else\n"
    out = capsys.readouterr().out
    assert "refused the commit journal" in out and "theory.journal" in out and "every chapter is up to date" in out


# --------------------------------------------------------------------------------------------------------
# damaged journals, manifests and records of run times are named with their key


@pytest.mark.parametrize(
    "change, named",
    [
        (lambda r: r.pop("new_manifest_sha256"), "new_manifest_sha256"),
        (lambda r: r.update(files=[]), "files"),
        (lambda r: r["files"]["results"].pop("target"), "files.results.target"),
        (lambda r: r["files"]["results"].update(kept=3), "files.results.kept"),
        (lambda r: r["files"]["notebook"].update(new_sha256="abc"), "files.notebook.new_sha256"),
        (lambda r: r["files"].update(elsewhere=r["files"]["results"]), "files"),
        (lambda r: r.update(chapter="other"), "chapter"),
    ],
)
def test_a_journal_of_the_wrong_shape_is_discarded_with_one_line_naming_the_key(checkout, change, named):
    before = unit_files(checkout, "theory")
    record = untouched_journal(checkout)
    change(record)
    write_journal(checkout, store._seal(record), {"results": "the journal's copy\n"})
    said = []
    assert store.recover(checkout.results_dir, progress=said.append) == []
    assert len(said) == 1 and named in said[0] and str(journal_folder(checkout)) in said[0], said
    assert not journal_folder(checkout).exists()
    assert unit_files(checkout, "theory") == before


def test_a_journal_that_does_not_match_its_checksum_is_refused(checkout):
    before = unit_files(checkout, "theory")
    record = store._seal(untouched_journal(checkout))
    record["files"]["results"]["kept"] = None  # would remove the results file
    write_journal(checkout, record)
    said = []
    store.recover(checkout.results_dir, progress=said.append)
    assert len(said) == 1 and "checksum" in said[0], said
    assert unit_files(checkout, "theory") == before and not journal_folder(checkout).exists()


@pytest.mark.parametrize(
    "keys, value, named",
    [
        (("files", "results"), {}, "files.results.path"),
        (("files", "results", "path"), 3, "files.results.path"),
        (("files", "notebook", "sha256"), "abc", "files.notebook.sha256"),
        (("files",), {"results": {"path": "_build/results/theory.json", "sha256": "0" * 64}}, "files.notebook"),
        (("cache_key",), 5, "cache_key"),
        (("profile",), ["smoke"], "profile"),
        (("execution",), "1 s", "execution"),
    ],
)
def test_a_manifest_of_the_wrong_shape_makes_the_chapter_stale_naming_the_key(checkout, keys, value, named):
    path = store.manifest_path(checkout.results_dir, "theory")
    manifest = json.loads(path.read_text())
    *parents, last = keys
    place = manifest
    for key in parents:
        place = place[key]
    place[last] = value
    path.write_text(json.dumps(manifest))
    state = store.unit_state(checkout.root, checkout.results_dir, "theory", "key-1")
    assert not state.fresh and str(path) in state.reason and named in state.reason, state.reason
    with pytest.raises(DamagedFile, match=named) as caught:
        store.verify_results(checkout.results_dir, "theory")
    assert caught.value.path == path


def test_status_names_a_manifest_without_the_path_of_its_results_file(tmp_path, monkeypatch, capsys):
    book = tiny_book_at(tmp_path)
    path = store.manifest_path(book.results_dir, "theory")
    manifest = json.loads(path.read_text())
    manifest["files"]["results"] = {}
    path.write_text(json.dumps(manifest))
    monkeypatch.chdir(book.root)
    assert main(["status"]) == 0
    out = capsys.readouterr().out
    assert "stale: theory" in out and "theory.json" in out and "files.results.path" in out, out


@pytest.mark.parametrize(
    "entry, named",
    [
        ({"wall_s": "fast", "peak_rss_mib": 1.0, "cache_key": "k"}, "smoke.theory.wall_s"),
        ({"wall_s": 1.0, "cache_key": "k"}, "smoke.theory.peak_rss_mib"),
        ({"wall_s": 1.0, "peak_rss_mib": True, "cache_key": "k"}, "smoke.theory.peak_rss_mib"),
        ({"wall_s": 1.0, "peak_rss_mib": 1.0, "cache_key": 3}, "smoke.theory.cache_key"),
    ],
)
def test_a_record_of_run_times_of_the_wrong_shape_names_the_key(checkout, entry, named):
    checkout.timings.write_text(json.dumps({"smoke": {"theory": entry}}))
    with pytest.raises(DamagedFile, match=named) as caught:
        store.read_timings(checkout.results_dir)
    assert caught.value.path == checkout.timings


# --------------------------------------------------------------------------------------------------------
# roll-backs


class Killed(BaseException):
    """Stands for the process being killed at that point."""


def test_a_roll_back_leaves_alone_a_target_its_commit_could_not_replace(checkout, monkeypatch):
    """The notebook cannot be replaced (``chattr +i``): the roll-back puts back the results file, the one file
    the commit replaced, and does not touch the notebook again; the commit error names the notebook."""
    before = unit_files(checkout, "theory")
    notebook, replace = checkout.executed_notebook("book/theory"), os.replace

    def immutable_notebook(source, target):
        if Path(target) == notebook:
            raise PermissionError(errno.EPERM, "Operation not permitted")
        return replace(source, target)

    monkeypatch.setattr(store.os, "replace", immutable_notebook)
    with pytest.raises(store.CommitFailed, match=r"cannot replace .*theory\.ipynb: Operation not permitted"):
        commit(checkout, "theory", 2.0, key="key-2")
    assert unit_files(checkout, "theory") == before
    assert store.unit_state(checkout.root, checkout.results_dir, "theory", "key-1").fresh
    assert not journal_folder(checkout).exists() and not list(checkout.build_dir.rglob("*.tmp"))


def test_a_roll_back_works_when_the_notebooks_lie_on_another_file_system(checkout, monkeypatch):
    """``_build/executed`` on another file system: no rename and no hard link crosses it. A commit that fails at
    the timings, after the results file and the notebook were replaced, puts both back."""
    before = unit_files(checkout, "theory")
    replace, link, full = os.replace, os.link, [True]

    def device(path) -> bool:
        return Path(path).resolve().is_relative_to(checkout.executed_dir.resolve())

    def crossing(real):
        def call(source, target, **options):
            if device(source) != device(target):
                raise OSError(errno.EXDEV, "Invalid cross-device link")
            if full and real is replace and Path(target) == checkout.timings and Path(source).suffix == ".tmp":
                raise OSError(errno.ENOSPC, "No space left on device")
            return real(source, target, **options)

        return call

    monkeypatch.setattr(store.os, "replace", crossing(replace))
    monkeypatch.setattr(store.os, "link", crossing(link))
    with pytest.raises(store.CommitFailed, match="No space left on device"):
        commit(checkout, "theory", 2.0, key="key-2")
    assert unit_files(checkout, "theory") == before
    assert store.unit_state(checkout.root, checkout.results_dir, "theory", "key-1").fresh
    assert not journal_folder(checkout).exists()
    full.clear()
    commit(checkout, "theory", 3.0, key="key-3")  # and a commit across the file systems succeeds
    assert store.unit_state(checkout.root, checkout.results_dir, "theory", "key-3").fresh


def test_a_roll_back_killed_after_one_file_finishes_when_recovered(checkout, monkeypatch):
    """Renames: the journal (1), the results file (2), the notebook (3), the timings (4, fails); the roll-back
    puts back one file (5) and is killed at the next (6). The next recovery makes the previous unit whole."""
    before = unit_files(checkout, "theory")
    replace, calls = os.replace, []

    def failing(source, target):
        calls.append(target)
        if len(calls) == 4:
            raise PermissionError(errno.EPERM, "Operation not permitted")
        if len(calls) == 6:
            raise Killed
        return replace(source, target)

    monkeypatch.setattr(store.os, "replace", failing)
    with pytest.raises(Killed):
        commit(checkout, "theory", 2.0, key="key-2")
    monkeypatch.setattr(store.os, "replace", replace)
    assert not store.unit_state(checkout.root, checkout.results_dir, "theory", "key-1").fresh  # half put back
    assert store.recover(checkout.results_dir) == ["theory"]
    assert unit_files(checkout, "theory") == before
    assert store.unit_state(checkout.root, checkout.results_dir, "theory", "key-1").fresh
    assert not journal_folder(checkout).exists() and not list(checkout.build_dir.rglob("*.tmp"))
    commit(checkout, "theory", 3.0, key="key-3")
    assert store.unit_state(checkout.root, checkout.results_dir, "theory", "key-3").fresh


def test_a_roll_back_that_cannot_finish_says_so_in_one_line_and_blocks_nothing(checkout, monkeypatch):
    """The results file was replaced, the notebook could not be, and the results file cannot be put back
    either: one line says so; the chapter is stale, the journal stays for a later recovery, which puts the
    previous unit back once the folder can be written again, and other chapters commit meanwhile."""
    before = unit_files(checkout, "theory")
    notebook, results, replace = checkout.executed_notebook("book/theory"), checkout.results_file("theory"), os.replace
    replaced = []

    def refusing(source, target):
        if Path(target) == notebook or Path(target) == results and replaced:
            raise PermissionError(errno.EPERM, "Operation not permitted")
        if Path(target) == results:
            replaced.append(target)
        return replace(source, target)

    monkeypatch.setattr(store.os, "replace", refusing)
    with pytest.raises(store.CommitFailed) as caught:
        commit(checkout, "theory", 2.0, key="key-2")
    message = str(caught.value)
    assert "\n" not in message and "theory.ipynb" in message and "stale" in message, message
    assert not store.unit_state(checkout.root, checkout.results_dir, "theory", "key-1").fresh
    said = []
    assert store.recover(checkout.results_dir, progress=said.append) == []  # still refused: said, not raised
    assert len(said) == 1 and "theory" in said[0] and "Operation not permitted" in said[0], said
    assert journal_folder(checkout).is_dir()
    commit(checkout, "other", 5.0)  # another chapter commits meanwhile
    monkeypatch.setattr(store.os, "replace", replace)
    assert store.recover(checkout.results_dir) == ["theory"]
    after = unit_files(checkout, "theory")
    assert [after[role] == before[role] for role in ("results", "notebook", "manifest")] == [True] * 3
    timings = store.read_timings(checkout.results_dir)["smoke"]  # the later commit's entry is not rolled back
    assert (timings["theory"]["cache_key"], timings["other"]["cache_key"]) == ("key-1", "key-1")
    assert store.unit_state(checkout.root, checkout.results_dir, "theory", "key-1").fresh
    assert store.unit_state(checkout.root, checkout.results_dir, "other", "key-1").fresh


def test_recovery_removes_the_temporary_files_of_killed_commits(checkout):
    left = [
        checkout.results_dir / ".theory.json.k2j4h_x1.tmp",
        checkout.results_dir / "._timings.json.a8f3kd02.tmp",
        checkout.results_dir / store.MANIFEST_FOLDER / ".theory.json.zz81mq0p.tmp",
        checkout.executed_dir / "book" / ".theory.ipynb.q0w9e8r7.tmp",
    ]
    kept = [checkout.results_dir / ".notes.tmp", checkout.executed_dir / "book" / "figure.tmp"]
    for path in left + kept:
        path.write_text("partly written\n")
    before = unit_files(checkout, "theory")
    store.recover(checkout.results_dir)
    assert [p for p in left if p.exists()] == []
    assert all(p.exists() for p in kept)
    assert unit_files(checkout, "theory") == before


def test_a_link_in_place_of_a_units_file_is_replaced_and_never_followed(checkout, elsewhere, monkeypatch):
    """The results file is a link to a file outside the checkout: the journal keeps no copy of what it leads to,
    a failed commit's roll-back leaves that file alone (not rewritten, not linked into the build), and a commit
    that succeeds replaces the link itself."""
    results, notebook, replace = checkout.results_file("theory"), checkout.executed_notebook("book/theory"), os.replace
    results.unlink()
    results.symlink_to(elsewhere)

    def immutable_notebook(source, target):
        if Path(target) == notebook:
            raise PermissionError(errno.EPERM, "Operation not permitted")
        return replace(source, target)

    monkeypatch.setattr(store.os, "replace", immutable_notebook)
    with pytest.raises(store.CommitFailed):
        commit(checkout, "theory", 2.0, key="key-2")
    monkeypatch.setattr(store.os, "replace", replace)
    assert elsewhere.read_text() == "a file of someone else\n" and os.stat(elsewhere).st_nlink == 1
    assert not journal_folder(checkout).exists()
    commit(checkout, "theory", 3.0, key="key-3")
    assert not results.is_symlink() and elsewhere.read_text() == "a file of someone else\n"
    assert store.unit_state(checkout.root, checkout.results_dir, "theory", "key-3").fresh


def test_a_manifests_folder_that_is_a_link_is_refused(checkout, tmp_path):
    """``_build/results/.manifests`` replaced by a link to a folder elsewhere: recovery reads and removes nothing
    there, and says so in one line."""
    outside = tmp_path / "outside"
    (outside / f"theory{store.JOURNAL_SUFFIX}").mkdir(parents=True)
    (outside / ".theory.json.k2j4h_x1.tmp").write_text("someone's file\n")
    manifests = checkout.results_dir / store.MANIFEST_FOLDER
    manifests.rename(tmp_path / "moved")
    manifests.symlink_to(outside, target_is_directory=True)
    said = []
    assert store.recover(checkout.results_dir, progress=said.append) == []
    assert (outside / f"theory{store.JOURNAL_SUFFIX}").is_dir() and (outside / ".theory.json.k2j4h_x1.tmp").exists()
    assert len(said) == 1 and "link" in said[0], said


def test_a_temporary_that_cannot_be_removed_does_not_skip_the_roll_back(checkout, monkeypatch):
    """The notebook cannot be replaced and the commit's temporary files cannot be removed (a folder turned
    read-only): the error is still the commit's one line, the previous unit is back, and the temporaries are
    removed by the next recovery."""
    before = unit_files(checkout, "theory")
    notebook, replace, unlink = checkout.executed_notebook("book/theory"), os.replace, Path.unlink

    def immutable_notebook(source, target):
        if Path(target) == notebook:
            raise PermissionError(errno.EPERM, "Operation not permitted")
        return replace(source, target)

    def refusing_temporaries(path, missing_ok=False):
        if path.name.endswith(".tmp"):
            raise PermissionError(errno.EACCES, "Permission denied")
        return unlink(path, missing_ok=missing_ok)

    monkeypatch.setattr(store.os, "replace", immutable_notebook)
    monkeypatch.setattr(Path, "unlink", refusing_temporaries)
    with pytest.raises(store.CommitFailed, match="previous results, notebook and timings are unchanged"):
        commit(checkout, "theory", 2.0, key="key-2")
    monkeypatch.setattr(Path, "unlink", unlink)
    monkeypatch.setattr(store.os, "replace", replace)
    assert unit_files(checkout, "theory") == before
    assert list(checkout.build_dir.rglob("*.tmp"))  # left by the failed commit ...
    store.recover(checkout.results_dir)
    assert not list(checkout.build_dir.rglob("*.tmp"))  # ... and removed by the next recovery
    assert store.unit_state(checkout.root, checkout.results_dir, "theory", "key-1").fresh


def test_a_commit_interrupted_after_its_manifest_and_killed_in_its_roll_back_comes_back_whole(checkout, monkeypatch):
    """An interrupt right after the manifest's rename (the commit) starts a roll-back, which is killed after
    putting back one file: the manifest is put back first, so the next recovery finds the previous manifest and
    puts the previous unit back whole (were the results file put back first, the new manifest would stand over
    the old results, and the recovery would keep that mixture as the new unit)."""
    before = unit_files(checkout, "theory")
    manifest, replace, calls = store.manifest_path(checkout.results_dir, "theory"), os.replace, []

    def interrupted(source, target):
        result = replace(source, target)
        calls.append(target)
        if len(calls) == 5:  # the journal, the results file, the notebook, the timings, the manifest: committed
            assert Path(target) == manifest
            raise KeyboardInterrupt
        if len(calls) == 6:  # the roll-back's first file is back, and the process ends
            raise Killed
        return result

    monkeypatch.setattr(store.os, "replace", interrupted)
    with pytest.raises(Killed):
        commit(checkout, "theory", 2.0, key="key-2")
    monkeypatch.setattr(store.os, "replace", replace)
    assert store.recover(checkout.results_dir) == ["theory"]
    assert unit_files(checkout, "theory") == before
    assert store.unit_state(checkout.root, checkout.results_dir, "theory", "key-1").fresh


# --------------------------------------------------------------------------------------------------------
# the build lock and the working folders of runs

HOLDER = """
import sys
from pathlib import Path
from attnpaths_book.layout import BookLayout, book_lock
with book_lock(BookLayout(Path(sys.argv[1]))):
    print("held", flush=True)
    sys.stdin.read()
"""
"""Holds the build lock of the checkout ``argv[1]`` until its standard input closes."""


@pytest.fixture
def lock_holder(tmp_path):
    """Start a process that holds the build lock of a one-chapter book in ``tmp_path``; yields ``(book, process)``
    once it holds it, and releases it at the end."""
    book = tiny_book_at(tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(book.root)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline() == "held\n"
        yield book, holder
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)


def test_a_deleted_lock_file_does_not_let_a_second_holder_in(lock_holder):
    book, holder = lock_holder
    book.lock.unlink()
    events: queue.Queue = queue.Queue()

    def second():
        with book_lock(book, events.put):
            events.put("held by the second")

    thread = threading.Thread(target=second, daemon=True)
    thread.start()
    first = events.get(timeout=60)
    assert first.startswith("waiting for the build lock _build/.lock"), first
    holder.stdin.close()  # the first holder lets go: the second takes the lock
    assert holder.wait(timeout=60) == 0
    thread.join(timeout=60)
    assert not thread.is_alive()
    rest = [events.get_nowait() for _ in range(events.qsize())]
    assert rest[-1] == "held by the second" and any(e.startswith("got the build lock") for e in rest), rest


def test_status_does_not_wait_for_a_run_and_names_it(lock_holder, monkeypatch, capsys):
    book, holder = lock_holder
    monkeypatch.chdir(book.root)
    finished = []
    thread = threading.Thread(target=lambda: finished.append(main(["status"])), daemon=True)
    thread.start()
    thread.join(timeout=60)
    assert finished == [0], "status waited for the build lock"
    out = capsys.readouterr().out
    assert f"PID {holder.pid}" in out and "every chapter is up to date" in out, out


OWNER = """
import sys
from pathlib import Path
from attnpaths_book.layout import BookLayout, new_run_folder
print(new_run_folder(BookLayout(Path(sys.argv[1])), "alpha"), flush=True)
sys.stdin.read()
"""
"""Makes a run folder of chapter ``alpha`` in the checkout ``argv[1]``, prints it, and lives on until its standard
input closes."""


def test_only_the_run_folders_of_ended_processes_are_removed(tmp_path):
    from attnpaths_book.layout import new_run_folder

    layout = BookLayout(tmp_path)
    command = [sys.executable, "-c", OWNER, str(tmp_path)]
    ended = Path(subprocess.run(command, input="", capture_output=True, text=True, check=True).stdout.strip())
    living = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        alive = Path(living.stdout.readline().strip())
        own = new_run_folder(layout, "beta")
        unowned = layout.build_dir / f"{executor.RUN_FOLDER_PREFIX}gamma-k3j2h1g0"  # an earlier version's name
        unowned.mkdir()
        assert ended.is_dir() and alive.is_dir()
        assert sorted(executor.remove_stale_run_folders(layout)) == sorted([ended, unowned])
        assert alive.is_dir() and own.is_dir() and not ended.exists() and not unowned.exists()
    finally:
        living.stdin.close()
        living.wait(timeout=60)
    assert executor.remove_stale_run_folders(layout) == [alive]
