"""The chapter on the pretrained transformer, its computations on a tiny random BERT (attnpaths.pretrained.study,
attnpaths.pretrained.study_theory): the theory's inputs, the readout, the pruning and the saved file."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from helpers import random_bert_weights

from attnpaths.frozen_attention import theory_from_attention
from attnpaths.json_files import DamagedFile
from attnpaths.pretrained import study, study_theory
from attnpaths.pretrained.bert import BertConfig, BertEncoder
from attnpaths.theory import CertificateWarning

CONFIG = BertConfig(vocab_size=13, hidden_size=8, num_hidden_layers=2, num_attention_heads=2, intermediate_size=16,
                    max_position_embeddings=12)  # fmt: skip
SETTINGS = study.StudySettings(max_tokens=7, input_dims=4, width=8.0, temperatures=(0.1, 0.3, 1.0), batch_size=5,
                               gradient_examples=12, pruning_step=1, num_random=2, split_seeds=(0, 1))  # fmt: skip


def tiny_encoder(seed: int = 0) -> BertEncoder:
    return BertEncoder(random_bert_weights(CONFIG, seed), CONFIG)


def snippets(n: int = 60, seed: int = 0):
    """``n`` random snippets of 3 to 7 pieces whose label is carried by the presence of piece 5 or 6."""
    rng = np.random.default_rng(seed)
    ids, mask = np.zeros((n, 7), dtype=np.int64), np.zeros((n, 7), dtype=np.int64)
    labels = rng.choice([-1, 1], n)
    for i in range(n):
        length = int(rng.integers(3, 8))
        body = rng.integers(7, 13, length - 2)
        body[rng.integers(0, length - 2)] = 5 if labels[i] > 0 else 6
        ids[i, :length] = [2, *body, 3]
        mask[i, :length] = 1
    splits = np.stack([np.where(np.arange(n) % 5 == 0, 1, np.where(np.arange(n) % 5 == 1, 2, 0)),
                       np.where(np.arange(n) % 5 == 2, 1, np.where(np.arange(n) % 5 == 3, 2, 0))])  # fmt: skip
    return torch.as_tensor(ids), torch.as_tensor(mask), labels, splits


def test_the_embedding_is_the_encoders_first_hidden_state():
    encoder = tiny_encoder()
    ids, mask, _, _ = snippets(6)
    torch.testing.assert_close(study.embedding(encoder, ids), encoder(ids, mask).hidden_states[0], rtol=0, atol=0)


def test_padded_queries_take_the_mean_of_the_real_rows():
    encoder = tiny_encoder()
    ids, mask, _, _ = snippets(8)
    attention = encoder(ids, mask).attention[1]
    fixed = study.real_token_attention(attention, mask)
    real = mask.bool()
    torch.testing.assert_close(fixed.sum(-1), torch.ones_like(fixed.sum(-1)), rtol=0, atol=1e-14)
    for b in range(8):
        n = int(mask[b].sum())
        torch.testing.assert_close(fixed[b, :, :n], attention[b, :, :n], rtol=0, atol=0)  # real rows kept
        torch.testing.assert_close(fixed[b].mean(dim=1), attention[b, :, real[b]].mean(dim=1), rtol=0, atol=1e-15)
    assert float((fixed - attention).abs().max()) > 1e-3  # padded rows did change


def test_a_snippets_features_do_not_depend_on_its_padding_or_batch():
    encoder = tiny_encoder()
    ids, mask, _, splits = snippets(30)
    train = np.flatnonzero(splits[0] == 0)
    inputs = study.principal_directions(encoder, ids, mask, train, 4)
    one = study.encode_snippets(encoder, ids, mask, inputs, train, batch_size=30)
    many = study.encode_snippets(encoder, ids, mask, inputs, train, batch_size=4)
    assert one["features"].shape == (30, 2, 4, 2) and one["embeddings"].shape == (30, 8)
    torch.testing.assert_close(many["features"], one["features"], rtol=0, atol=1e-13)
    np.testing.assert_allclose(many["entropy"], one["entropy"], rtol=0, atol=1e-13)
    torch.testing.assert_close(one["embeddings"].norm(dim=1), torch.ones(30, dtype=torch.float64))
    short = int(np.argmin(mask.sum(1).numpy()))  # the shortest snippet alone, without any padding
    n = int(mask[short].sum())
    out = encoder(ids[short : short + 1, :n], mask[short : short + 1, :n])
    x = ((out.hidden_states[0] - inputs["mean"]) @ inputs["basis"]) / inputs["scale"]
    alone = study.layer_features(out.attention[1], x, mask[short : short + 1, :n])
    torch.testing.assert_close(alone[0], one["features"][short, 1], rtol=0, atol=1e-13)


def test_the_principal_directions_centre_and_scale_the_training_tokens():
    encoder = tiny_encoder()
    ids, mask, _, _ = snippets(40)
    inputs = study.principal_directions(encoder, ids, mask, np.arange(40), 3)
    basis = inputs["basis"]
    torch.testing.assert_close(basis.T @ basis, torch.eye(3, dtype=torch.float64), rtol=0, atol=1e-12)
    assert np.all(np.diff(inputs["eigenvalues"]) <= 1e-12) and 0 < inputs["kept"] < 1
    tokens = study.embedding(encoder, ids)[mask.bool()]
    x = ((tokens - inputs["mean"]) @ basis) / inputs["scale"]
    torch.testing.assert_close(x.mean(dim=0), torch.zeros(3, dtype=torch.float64), rtol=0, atol=1e-12)
    assert abs(float(x.var(dim=0, correction=0).mean()) - 1.0) < 1e-12
    with pytest.raises(ValueError, match=r"dims must lie in \[1, 8\]"):
        study.principal_directions(encoder, ids, mask, np.arange(40), 9)


def test_the_stored_features_give_the_theory_of_the_frozen_attention():
    encoder = tiny_encoder()
    ids, mask, labels, _ = snippets(40)
    inputs = study.principal_directions(encoder, ids, mask, np.arange(40), 4)
    features = study.encode_snippets(encoder, ids, mask, inputs, np.arange(40), batch_size=7)["features"][:, 0]
    out = encoder(ids, mask)
    attention = study.real_token_attention(out.attention[0], mask)
    tokens = ((out.hidden_states[0] - inputs["mean"]) @ inputs["basis"]) / inputs["scale"] * mask[..., None]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CertificateWarning)
        direct = theory_from_attention([attention], tokens, labels.astype(float), width=8.0, temperature=0.3)
        ours, _ = study_theory.theory_on_validation(features, labels, features, labels, width=8.0, temperatures=(0.3,))
    np.testing.assert_allclose(ours.head_scores, direct.head_scores, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(ours.solution.predict(features)[0], direct.predict([attention], tokens)[0], atol=1e-8)
    np.testing.assert_allclose(ours.gp.predict(features)[0], direct.predict_gp([attention], tokens)[0], atol=1e-8)


def test_the_temperature_is_the_one_of_best_validation_accuracy():
    ids, mask, labels, splits = snippets(60)
    encoder = tiny_encoder()
    inputs = study.principal_directions(encoder, ids, mask, np.arange(60), 4)
    features = study.encode_snippets(encoder, ids, mask, inputs, np.arange(60), 16)["features"][:, 1].numpy()
    train, val = splits[0] == 0, splits[0] == 1
    theory, scan = study_theory.theory_on_validation(features[train], labels[train], features[val], labels[val],
                                                     width=8.0, temperatures=(0.03, 0.3, 3.0))  # fmt: skip
    chosen = list(scan["temperatures"]).index(theory.temperature)
    assert scan["validation"][chosen] == np.nanmax(scan["validation"])  # ties go to the smaller squared error
    assert scan["raw_scores"].shape == (3, 2) and theory.solution.converged
    accuracy = study_theory.accuracy(theory.solution.predict(features[val])[0], labels[val])
    assert accuracy == np.nanmax(scan["validation"])


def test_the_ridge_readout_learns_a_linear_rule_and_takes_its_penalty_from_validation():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 5))
    y = np.sign(X @ np.array([1.0, -2.0, 0.5, 0.0, 0.0]) + 0.3)
    fit = study_theory.fit_readout(X[:300], y[:300], X[300:], y[300:], penalties=(1e-4, 1e3))
    assert fit["penalty"] == 1e-4 and fit["validation"][0] > fit["validation"][1]
    assert study_theory.accuracy(X[300:] @ fit["weight"] + fit["bias"], y[300:]) > 0.95
    assert study_theory.accuracy(np.array([0.0, 1.0]), np.array([1, 1])) == 0.75  # an output of 0 is chance


def test_pruning_a_head_changes_the_readout_and_the_curves_start_unpruned():
    encoder = tiny_encoder()
    ids, mask, labels, _ = snippets(30)
    readout = encoder.with_readout(torch.linspace(-1, 1, 8), bias=0.1)
    evaluator = study.SnippetAccuracy(readout, ids, mask, labels, np.arange(30), batch_size=4)
    whole = study.SnippetAccuracy(readout, ids, mask, labels, np.arange(30), batch_size=30)
    assert evaluator() == whole() and abs(evaluator.loss([(1, 0)]) - whole.loss([(1, 0)])) < 1e-12
    assert float(np.abs(evaluator.outputs([(0, 1)]) - evaluator.outputs()).max()) > 1e-3
    orders = study.head_orders(np.array([[0.3, 0.1], [0.2, 0.4]]), np.array([[1.0, 2.0], [4.0, 3.0]]),
                               np.array([[0.5, 0.9], [0.1, 0.2]]), 2, seed=0)  # fmt: skip
    assert orders["theory"][:2] == [(0, 1), (1, 0)] and orders["gradient"][:2] == [(0, 0), (0, 1)]
    assert orders["entropy"][0] == (0, 1) and sorted(orders["random 2"]) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    result = study.pruning_study(evaluator, orders, step=1)
    assert result["curve_steps"].tolist() == [0, 1, 2] and result["curves"].shape == (5, 3)
    assert np.all(result["curves"][:, 0] == evaluator())
    assert result["head_costs"][1, 0] == pytest.approx(100 * (evaluator() - evaluator([(1, 0)])))
    assert result["curves"][0, 1] == evaluator([(0, 1)])  # the theory's order prunes its lowest score first


def test_spearman_with_monte_carlo_p_values():
    a = np.arange(12.0)
    agree = study_theory.spearman_monte_carlo(a, a**2, num_draws=2000)
    assert agree["rho"] == pytest.approx(1.0) and agree["p_greater"] == pytest.approx(1 / 2001)
    assert agree["p_smaller"] == 1.0
    b = np.random.default_rng(3).normal(size=12)
    mixed = study_theory.spearman_monte_carlo(a, b, num_draws=500)
    from scipy import stats

    assert mixed["rho"] == pytest.approx(stats.spearmanr(a, b).statistic, abs=1e-12)
    assert study_theory.spearman_monte_carlo(a, -a)["num_draws"] == 9900


def test_the_precomputed_study_round_trips_and_a_changed_file_is_refused(tmp_path):
    encoder = tiny_encoder()
    ids, mask, labels, splits = snippets(60)
    arrays, info = study.precompute_study(encoder, ids, mask, labels, splits, SETTINGS)
    assert arrays["features"].shape == (60, 4, 2) and arrays["embeddings"].shape == (60, 8)
    validation = arrays["layer_validation"]
    assert validation[info["layer"], list(SETTINGS.temperatures).index(info["temperature"])] == np.nanmax(validation)
    assert arrays["orders"].shape == (5, 4, 2) and info["rankings"][:3] == ["theory", "gradient", "entropy"]
    path = tmp_path / "study.npz"
    sha256 = study.save_study(arrays, {"settings": SETTINGS, "info": info}, path)
    loaded, provenance = study.load_study(path, sha256)
    assert provenance["sha256"] == sha256 and provenance["settings"]["input_dims"] == 4
    for key in study.ARRAYS:
        np.testing.assert_array_equal(loaded[key], arrays[key])
    accuracies = study_theory.split_accuracies(loaded["features"], loaded["embeddings"], loaded["labels"],
                                               loaded["splits"][1], width=8.0, temperatures=(0.1, 0.3, 1.0))  # fmt: skip
    assert set(accuracies) == {"theory", "gp", "readout", "temperature", "penalty"}
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(DamagedFile, match="study.npz"):
        study.load_study(path, sha256)
    with pytest.raises(ValueError, match=r"arrays lack \['curves'\]"):
        study.save_study({k: v for k, v in arrays.items() if k != "curves"}, {}, tmp_path / "other.npz")


def test_learning_curves_are_nested_and_bounded():
    rng = np.random.default_rng(0)
    features = rng.normal(size=(80, 3, 2))
    labels = np.sign(features[:, 0].sum(axis=1) + 1e-9)
    curves = study_theory.learning_curves(features[:60], labels[:60], features[60:], labels[60:], [10, 30, 60],
                                          width=6.0, temperature=0.3, draws=2)  # fmt: skip
    assert curves.shape == (3, 2, 2) and np.all((curves >= 0) & (curves <= 1))
    np.testing.assert_array_equal(curves[-1, 0], curves[-1, 1])  # every draw ends with every example
    assert curves[-1, 0, 1] > 0.8
    with pytest.raises(ValueError, match="sizes must be increasing"):
        study_theory.learning_curves(features, labels, features, labels, [30, 10], width=6.0, temperature=0.3)


def test_review_splits_follow_the_fixed_splits_of_each_seed():
    from attnpaths.pretrained.reviews import Reviews, split_reviews

    texts = tuple(f"snippet {i}" for i in range(50)) + ("snippet 3",)
    corpus = Reviews(texts, np.array([1] * 30 + [-1] * 20 + [-1], dtype=np.int64))  # one text in both classes
    codes = study.review_splits(corpus, (0, 7))
    assert codes.shape == (2, 51) and codes.dtype == np.int8 and (codes[0] != codes[1]).any()
    for row, seed in zip(codes, (0, 7)):
        parts = split_reviews(corpus, seed=seed)
        for code, name in enumerate(("train", "validation", "test")):
            assert sorted(zip(parts[name].texts, parts[name].labels.tolist())) == sorted(
                (t, int(y)) for t, y, c in zip(corpus.texts, corpus.labels, row) if c == code
            )
