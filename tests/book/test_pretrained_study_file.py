"""The precomputed study of MiniLM that the book ships (attnpaths_book.pretrained_study): its SHA-256 and provenance
agree, its arrays fit together, and a changed byte or a provenance that names other bytes is refused."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from attnpaths.json_files import DamagedFile
from attnpaths.pretrained import study
from attnpaths_book import pretrained_study


@pytest.fixture(scope="module")
def shipped():
    return pretrained_study.load_shipped_study()


def test_the_shipped_study_is_the_one_its_sha256_and_provenance_name(shipped):
    arrays, provenance = shipped
    assert provenance["sha256"] == pretrained_study.STUDY_SHA256
    assert provenance["format"] == study.FORMAT and provenance["file"] == pretrained_study.STUDY_FILE.name
    from attnpaths.pretrained import minilm, reviews

    assert provenance["model_sha256"] == minilm.MODEL_SHA256
    assert provenance["corpus_sha256"] == reviews.CORPORA[provenance["corpus"]][1]
    assert set(pretrained_study.PACKAGES) <= set(provenance["versions"])
    assert set(provenance["seconds"]) == {"forward", "theory", "gradient", "pruning"}


def test_the_arrays_fit_together(shipped):
    arrays, provenance = shipped
    settings = provenance["settings"]
    n = provenance["num_snippets"]
    assert arrays["features"].shape == (n, settings["input_dims"], arrays["layer_scores"].shape[1])
    assert arrays["embeddings"].shape[0] == n and arrays["labels"].shape == (n,)
    assert set(np.unique(arrays["labels"])) == {-1, 1}
    assert arrays["splits"].shape == (len(settings["split_seeds"]), n)
    assert set(np.unique(arrays["splits"])) == {0, 1, 2}
    assert 0 <= provenance["layer"] < arrays["layer_scores"].shape[0]
    assert provenance["temperature"] in settings["temperatures"]
    assert arrays["curves"].shape == (len(provenance["rankings"]), arrays["curve_steps"].size)
    # every pruning curve starts at the unpruned model
    assert np.all(arrays["curves"][:, 0] == arrays["curves"][0, 0])
    # the unit sentence embeddings, stored in float16
    np.testing.assert_allclose(np.linalg.norm(arrays["embeddings"].astype(np.float64), axis=1), 1.0, atol=2e-3)


def test_a_changed_byte_or_a_provenance_of_other_bytes_is_refused(tmp_path):
    copy = tmp_path / "study.npz"
    data = bytearray(pretrained_study.STUDY_FILE.read_bytes())
    data[len(data) // 2] ^= 1
    copy.write_bytes(bytes(data))
    shutil.copy(pretrained_study.STUDY_FILE.with_suffix(".json"), copy.with_suffix(".json"))
    with pytest.raises(DamagedFile, match="study.npz"):
        study.load_study(copy, pretrained_study.STUDY_SHA256)
    copy.write_bytes(pretrained_study.STUDY_FILE.read_bytes())
    provenance = json.loads(copy.with_suffix(".json").read_text())
    copy.with_suffix(".json").write_text(json.dumps({**provenance, "sha256": "0" * 64}))
    with pytest.raises(DamagedFile, match="sha256"):
        study.load_study(copy, pretrained_study.STUDY_SHA256)
