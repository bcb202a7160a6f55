"""Expensive numbers computed once and shipped like trained weights (attnpaths_book.trained.computed_numbers)."""

import json
import warnings

import pytest

from attnpaths.checkpoints import DamagedCacheWarning, file_sha256
from attnpaths_book import trained as shipped


def counting(numbers):
    calls = []

    def compute():
        calls.append(1)
        return numbers

    return compute, calls


def test_numbers_are_computed_once_then_read_from_the_cache_bit_for_bit(tmp_path):
    numbers = {"accuracy": [0.1 + 0.2, 1 / 3, 2.0**-1074], "nested": {"x": [1e308, -0.0]}}
    key = shipped.computation_key({"a": 1, "b": [2, 3]})
    assert key == shipped.computation_key({"b": [2, 3], "a": 1}) != shipped.computation_key({"a": 2, "b": [2, 3]})
    compute, calls = counting(numbers)
    first, source = shipped.computed_numbers(key, "a study", compute, cache_dir=tmp_path, folder=tmp_path / "none")
    again, cached = shipped.computed_numbers(key, "a study", compute, cache_dir=tmp_path, folder=tmp_path / "none")
    assert calls == [1] and first == again == numbers
    assert json.dumps(again) == json.dumps(numbers)  # every float back to the same bits
    assert source.source == cached.source == "trained" and source.sha256 == file_sha256(
        tmp_path / source.file.split("/")[-1]
    )
    _, fresh = shipped.computed_numbers(key, "a study", compute, retrain=True, cache_dir=tmp_path, folder=tmp_path)
    assert calls == [1, 1] and fresh.source == "retrained"


def test_a_damaged_cache_is_computed_again_with_a_warning(tmp_path):
    key = shipped.computation_key({"a": 1})
    compute, calls = counting({"x": 1.5})
    _, source = shipped.computed_numbers(key, "a study", compute, cache_dir=tmp_path, folder=tmp_path / "none")
    path = tmp_path / f"computation-{key[:16]}.json"
    path.write_text(path.read_text().replace("1.5", "2.5"))
    with pytest.warns(DamagedCacheWarning, match="a study"):
        numbers, _ = shipped.computed_numbers(key, "a study", compute, cache_dir=tmp_path, folder=tmp_path / "none")
    assert numbers == {"x": 1.5} and calls == [1, 1]


def test_shipped_numbers_are_found_by_key_and_checked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    key = shipped.computation_key({"a": 1})
    compute, calls = counting({"x": 0.25})
    _, source = shipped.computed_numbers(key, "a study", compute, retrain=True, cache_dir="cache")
    folder = tmp_path / "shipped"
    folder.mkdir()
    (entry,) = shipped.ship([source.to_dict()], chapter="c", profile="smoke", command="python -m attnpaths_book "
                            "ship-weights c", parameters={}, provenance={}, folder=folder)  # fmt: skip
    assert entry.name.endswith(".json") and entry.kind == "computation"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        numbers, found = shipped.computed_numbers(key, "a study", compute, cache_dir="elsewhere", folder=folder)
    assert numbers == {"x": 0.25} and found.source == "shipped" and calls == [1]
    entry.path(folder).write_text(entry.path(folder).read_text().replace("0.25", "0.5"))
    with pytest.raises(ValueError, match="SHA-256"):
        shipped.computed_numbers(key, "a study", compute, cache_dir="elsewhere", folder=folder)
