"""Tests of the one-shot claims over replicates (attnpaths.oneshot.replicates and the replicate claims of
attnpaths.oneshot.claims): the unit of replication is the trained model, the GP limit of claim Iw has its own
temperature, claim 7c is measured from the best set of heads, the order parameters of the plausible mistakes are
those of wrong_theories, a power law that its chi-square rejects decides no slope, and the claims the paper does not
state say so."""

import dataclasses

import numpy as np
import pytest
import torch
from helpers import random_problem
from scipy import stats

from attnpaths.attention import Attention, AttentionLayer
from attnpaths.claims import Outcome, detectable_effect
from attnpaths.experiments.head_subsets import curve_table
from attnpaths.experiments.path_data import PathData
from attnpaths.experiments.wrong_theories import transposed_features, wrong_order_parameters, wrong_theories
from attnpaths.oneshot import claims as os_claims
from attnpaths.oneshot import episodes, temperature_grid
from attnpaths.oneshot import pruning as oneshot_pruning
from attnpaths.oneshot import replicates as reps
from attnpaths.oneshot.imagesets import ImageClasses, ImageDataset
from attnpaths.oneshot.sequences import SequenceEncoder
from attnpaths.oneshot.training import TrainedModel, TrainingConfig
from attnpaths.paths import path_features
from attnpaths.theory import solve
from attnpaths.transformer import SumHeadTransformer

HOLDS, NS, CONTRADICTED = Outcome.HOLDS, Outcome.NOT_SIGNIFICANT, Outcome.CONTRADICTED


def _blob_classes(n_classes, seed):
    images = np.random.default_rng(seed).uniform(size=(n_classes, 4, 16, 16)).astype(np.float32)
    return ImageClasses(images, tuple(f"b{seed}-{k}" for k in range(n_classes)), ("blobs",) * n_classes)


def _trained(seed):
    """A random (untrained) model of 2 layers x 3 heads on 16 x 16 images, as a TrainedModel of training seed ``seed``."""
    model = SumHeadTransformer(16, 8, 4, 2, 3, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    encoder = SequenceEncoder.create(np.random.default_rng(seed), patch_size=4, image_size=16)
    return TrainedModel(model, encoder, TrainingConfig(seed=seed), {})


@pytest.fixture(scope="module")
def dataset():
    return ImageDataset(_blob_classes(6, 0), _blob_classes(4, 1), _blob_classes(5, 2))


SETTINGS = reps.ReplicateSettings(
    draws=2,
    seed=5,
    num_train=16,
    num_validation=20,
    num_test=24,
    episode_seed=0,
    num_pruning_test=30,
    pruning_seed=7,
    width=4,
    near_gp_width=4000,
    temperatures=(0.1, 1.0),
    gp_temperatures=(0.1, 1.0),
    num_components=2,
    ks=(1, 2),
    chunk_size=7,
)


# ------------------------------------------------------------------------------------------- the pipeline
def test_subset_table_in_chunks_is_the_table_of_one_evaluator(dataset):
    trained = _trained(0)
    sequences = episodes.class_sorted_sequences(dataset.test, 30, trained.encoder, np.random.default_rng(1))
    whole = curve_table(oneshot_pruning.pruning_evaluator(trained.model, sequences))
    # accuracies weighted by the chunks' sizes (4 of 7 episodes and one of 2): the same fractions up to rounding
    np.testing.assert_allclose(
        oneshot_pruning.subset_accuracy_table(trained.model, sequences, chunk_size=7), whole, atol=1e-12
    )
    with pytest.raises(ValueError, match="chunk_size"):
        oneshot_pruning.subset_accuracy_table(trained.model, sequences, chunk_size=0)


@pytest.mark.usefixtures("long_computation")
def test_model_replicates_are_reproducible_independent_draws_that_reuse_the_chapters_numbers(dataset):
    trained = _trained(0)
    first = reps.model_replicates(trained, dataset, SETTINGS, index=0)
    again = reps.model_replicates(trained, dataset, SETTINGS, index=0)
    # determinism: every draw comes from experiment_generator(seed, index, draw)
    np.testing.assert_array_equal(first.transfer["theory"], again.transfer["theory"])
    np.testing.assert_array_equal(first.accuracy["gp"], again.accuracy["gp"])
    assert first.num_draws == 2 and first.theories[0] == "theory" and first.theories[-1].startswith("near the GP")
    assert first.transfer["theory"][0] != first.transfer["theory"][1]  # the draws differ
    # the chapter's model reuses the chapter's episodes and table: given them, the same numbers come out
    model = reps.model_evaluation(trained, dataset, SETTINGS, index=0)
    reused = reps.model_replicates(trained, dataset, SETTINGS, index=0, data=model.data, table=model.table)
    np.testing.assert_array_equal(reused.order_gain["theory"], first.order_gain["theory"])
    # another model index draws other episodes, even for the same weights
    other = reps.model_replicates(trained, dataset, SETTINGS, index=1)
    assert not np.array_equal(other.transfer["theory"], first.transfer["theory"])
    # the best set of k heads is the best any ranking can reach, and the GP limit is U = I whatever its temperature
    assert np.all(first.best_gap["theory"] <= 1e-12)
    assert np.array_equal(first.transfer_excess["GP kernel (U = I)"], np.zeros(2))


def test_a_draw_chooses_each_temperature_on_validation_and_reads_the_theorys_U(dataset):
    trained = _trained(3)
    model = reps.model_evaluation(trained, dataset, SETTINGS, index=2)
    draw = reps.draw_replicate(model, dataset.train, SETTINGS, 1)
    sequences = episodes.class_sorted_sequences(
        dataset.train, SETTINGS.num_train, trained.encoder, np.random.default_rng([SETTINGS.seed, 2, 1])
    )
    features = path_features(sequences.x, trained.model.attention())
    data = dataclasses.replace(model.data, features=features, y=sequences.y.double())
    grid = temperature_grid.theory_grid(data, [SETTINGS.width], SETTINGS.temperatures, progress=False)
    chosen = temperature_grid.selected(grid, "validation")
    gp = temperature_grid.selected(temperature_grid.gp_grid(data, SETTINGS.gp_temperatures), "validation")
    assert draw["temperature"] == chosen["temperature"][0] and draw["gp_temperature"] == gp["temperature"][0]
    assert (
        draw["accuracy"]["theory"] == chosen["accuracy"]["test"][0]
        and draw["accuracy"]["gp"] == gp["accuracy"]["test"][0]
    )
    similarity = oneshot_pruning.pattern_similarity(chosen["U"][0], model.U_gd, model.heads)
    assert draw["theories"]["theory"]["transfer"] == pytest.approx(similarity["pearson"], abs=1e-9)


# ------------------------------------------------------------------------------------------- building blocks
@pytest.fixture(scope="module")
def problem():
    def attention(seed=0):
        gen = torch.Generator().manual_seed(seed)
        layers = tuple(
            AttentionLayer(
                Q=torch.randn(2, 3, 6, generator=gen, dtype=torch.float64),
                K=torch.randn(2, 3, 6, generator=gen, dtype=torch.float64),
            )
            for _ in range(2)
        )
        return Attention(layers, readout="average_pooling")

    x = {
        s: torch.randn(n, 6, 5, generator=torch.Generator().manual_seed(k), dtype=torch.float64)
        for k, (s, n) in enumerate({"train": 24, "test": 30}.items())
    }
    y = {s: torch.cat([torch.ones(len(v) // 2), -torch.ones(len(v) - len(v) // 2)]).double() for s, v in x.items()}
    att = attention()
    network = episodes.OneShotNetwork(att)
    data = PathData(
        network, path_features(x["train"], att), y["train"], {"test": (path_features(x["test"], att), y["test"])}
    )
    return data, transposed_features(data, x)


def test_wrong_order_parameters_are_those_of_wrong_theories_with_u_near_the_gp_limit(problem):
    data, transposed = problem
    ours = wrong_order_parameters(data.features, data.y, transposed.features, (2, 2), 10, 0.5, near_gp_width=10**5)
    theirs = wrong_theories(data, transposed, 10, 0.5)
    assert list(ours) == [m for m in theirs if m != "none"] + ["near the GP limit"]
    for mistake, (U, _) in theirs.items():
        if mistake != "none":  # the one-shot network's figure order is its flat order
            np.testing.assert_allclose(ours[mistake], U, atol=1e-9)
    right = solve(data.features, data.y, heads=(2, 2), width=10, temperature=0.5).U
    near = ours["near the GP limit"]
    assert np.linalg.norm(near - np.eye(4)) < 1e-2 * np.linalg.norm(right - np.eye(4))


def test_ablation_puts_the_gp_limit_at_its_own_temperature():
    xi, y = random_problem(P=24, n0=6, heads=(2, 2), seed=0)
    xt, yt = random_problem(P=30, n0=6, heads=(2, 2), seed=2)
    gen = torch.Generator().manual_seed(0)
    att = Attention(
        tuple(
            AttentionLayer(
                Q=torch.randn(2, 3, 6, generator=gen, dtype=torch.float64),
                K=torch.randn(2, 3, 6, generator=gen, dtype=torch.float64),
            )
            for _ in range(2)
        ),
        readout="average_pooling",
    )
    data = PathData(episodes.OneShotNetwork(att), xi, y, {"test": (xt, yt)})
    U = solve(xi, y, heads=(2, 2), width=5, temperature=0.1).U
    own = temperature_grid.ablation_means(data, U, 0.1, gp_temperature=1.0)
    same = temperature_grid.ablation_means(data, U, 0.1)
    gp = temperature_grid.gp_grid(data, (0.1, 1.0))
    np.testing.assert_allclose(own["gp"], gp.means["test"][0, 1], atol=1e-9)
    np.testing.assert_allclose(same["gp"], gp.means["test"][0, 0], atol=1e-9)
    np.testing.assert_array_equal(own["diagonal"], same["diagonal"])  # the diagonal stays at the theory's temperature


def test_label_fractions_agree_where_u_is_the_gp_value():
    xi, y = random_problem(P=24, n0=6, heads=(2, 2), seed=0)
    at_gp = temperature_grid.label_fractions(xi, y, np.eye(4), 3)
    assert at_gp["finite_width"] == pytest.approx(at_gp["gp"], abs=1e-12)
    moved = temperature_grid.label_fractions(xi, y, np.diag([4.0, 1.0, 1.0, 1.0]), 3)
    assert moved["finite_width"] != pytest.approx(moved["gp"], abs=1e-6)


# ------------------------------------------------------------------------------------------- the claims
def _models(per_model, *, spread=1e-4, draws=40, seed=0):
    """Fake replicates: model ``i``'s draws scatter by ``spread`` around ``per_model[i]`` in every statistic."""
    rng = np.random.default_rng(seed)
    out = []
    for i, value in enumerate(per_model):

        def around(v):
            return v + spread * rng.standard_normal(draws)

        zero = np.zeros(draws)
        out.append(
            reps.ModelReplicates(
                index=i,
                seed=42 + i,
                temperature=np.full(draws, 0.5),
                gp_temperature=np.full(draws, 0.1),
                accuracy={
                    "theory": 0.8 + around(value),
                    "gp": np.full(draws, 0.8),
                    "diagonal": 0.8 + around(value / 2),
                    "theory_test_rule": 0.8 + around(value),
                    "gp_test_rule": np.full(draws, 0.8),
                },
                label_fraction={"finite_width": 0.3 + around(value), "gp": np.full(draws, 0.3)},
                transfer={"theory": 0.5 + around(value), "near": np.full(draws, 0.5)},
                transfer_excess={"theory": around(value), "near": zero},
                order_gain={"theory": around(value), "near": zero},
                best_gap={"theory": np.stack([around(value), around(2 * value)], axis=1)},
                ks=(1, 2),
                base_accuracy=0.8,
                best_accuracy=np.array([0.79, 0.75]),
                seconds={},
            )
        )
    return out


def test_replicate_claims_test_over_the_models_not_over_their_draws():
    # 40 draws per model, each model consistent: pooled over 120 draws the advantage would be certain, but the models
    # disagree in sign, and only the models are independent
    disagreeing = _models([0.05, -0.04, 0.03])
    verdict = os_claims.advantage_over_models("1", disagreeing, width=10)
    assert verdict.outcome is NS and len(verdict.inputs["differences"]) == 3
    np.testing.assert_allclose(verdict.inputs["differences"], [0.05, -0.04, 0.03], atol=1e-4)
    assert os_claims.advantage_over_models("1", _models([0.05, 0.04, 0.06, 0.05]), width=10).outcome is HOLDS
    assert os_claims.advantage_over_models("1", _models([-0.05, -0.04, -0.06, -0.05]), width=10).outcome is CONTRADICTED
    agreeing = _models([0.05, 0.04, 0.06, 0.05])
    for verdict in (
        os_claims.alignment_over_models("4", agreeing, k=5, width=10),
        os_claims.order_over_models("7b", agreeing),
        os_claims.transfer_over_models("8", agreeing),
        os_claims.finite_width_against("8f", agreeing, reference="near", width=10),
        os_claims.finite_width_against("7bf", agreeing, reference="near", width=10, statistic="order"),
        *os_claims.interplay_over_models("I", agreeing, width=10),
    ):
        assert verdict.outcome is HOLDS and len(verdict.inputs["differences"]) == 4, verdict.claim
    assert (
        "4 trained models, 40 draws of the training episodes each"
        in os_claims.alignment_over_models("4", agreeing, k=5, width=10).measured
    )
    with pytest.raises(ValueError, match="at least 2"):
        os_claims.advantage_over_models("1", agreeing[:1], width=10)


def test_claim_iw_compares_the_diagonal_with_the_gp_limit_and_says_the_book_derived_it():
    cross, same = os_claims.interplay_over_models("I", _models([0.04, 0.05, 0.06]), width=10)
    # the diagonal carries half of the gain over the GP limit in these replicates
    assert same.value == pytest.approx(0.025, abs=1e-4) and cross.value == pytest.approx(0.025, abs=1e-4)
    assert same.source.startswith("derived in this book") and cross.source.startswith("paper")


def test_claim_7c_counts_its_margin_from_the_best_set_of_heads():
    # one point below the best set at k = 1 and two at k = 2, against a margin of three: both hold
    close = os_claims.best_set_over_models("7c", _models([-0.01, -0.01, -0.01]), margin=0.03)
    assert [v.claim for v in close] == ["7c (k=1)", "7c (k=2)"]
    assert all(v.outcome is HOLDS and v.source.startswith("derived in this book") for v in close)
    assert all(v.inputs["num_tests"] == 2 for v in close)  # Bonferroni over the k asked
    # five points below the best single head and ten below the best pair: beyond the margin beyond doubt
    far = os_claims.best_set_over_models("7c", _models([-0.05, -0.05, -0.05]), margin=0.03)
    assert all(v.outcome is CONTRADICTED for v in far)
    with pytest.raises(ValueError, match="margin"):
        os_claims.best_set_over_models("7c", _models([0.0, 0.0]), margin=3)


def test_replicate_power_reads_the_noncentral_t_law():
    differences = np.array([0.01, 0.03, 0.02, 0.04, 0.015])
    check = os_claims.replicate_power("1", {"": differences}, level=0.01, power=0.8)
    se = differences.std(ddof=1) / np.sqrt(5)
    assert check.se[0] == pytest.approx(se)
    # the t-test over 5 replicates reaches 80 % power at its detectable effect, and only well above the normal law's
    assert stats.nct.sf(stats.t.isf(0.01, 4), 4, check.detectable[0] / se) == pytest.approx(0.8, abs=1e-6)
    assert check.detectable[0] > 1.3 * detectable_effect(se, 0.01, 0.8)


# ------------------------------------------------------------------------------------------- claim 2s and the sources
def test_a_power_law_rejected_by_its_chi_square_decides_no_slope():
    # the paper profile's distances: a slope near -1, but N = 50 lies far off the line (chi-square 13.5 on 2 dof)
    deviation = {
        "N": np.array([10, 20, 50, 100]),
        "r": np.array([0.14892, 0.07388, 0.01624, 0.01604]),
        "se": np.array([0.00371, 0.00345, 0.00257, 0.00209]),
    }
    verdict = os_claims.deviation_decay("2s", deviation, margin=0.5)
    assert verdict.outcome is NS and "rejected by its chi-square" in verdict.measured
    assert os_claims.deviation_decay_power(deviation, margin=0.5) == 0.0
    # the same slope on points that follow the line holds
    fitted = dict(deviation, r=1.49 / deviation["N"], se=0.05 * 1.49 / deviation["N"])
    assert os_claims.deviation_decay("2s", fitted, margin=0.5).outcome is HOLDS


def test_the_claims_the_paper_does_not_state_say_the_book_derived_them():
    assert os_claims.little_loss(
        "7d (k=1)", difference=0.0, se=0.01, margin=0.03, k=1, fine_tuned=True
    ).source.startswith("derived in this book")
    means = {
        "theory": np.array([1.0, -1.0, 1.0]),
        "diagonal": np.array([1.0, -1.0, -1.0]),
        "gp": np.array([1.0, 1.0, -1.0]),
    }
    _, same = os_claims.interplay_gains("I", means=means, labels=np.array([1.0, -1.0, 1.0]), width=10)
    assert same.source.startswith("derived in this book")


def test_claim_2w_says_the_book_derived_it():
    from types import SimpleNamespace

    rng = np.random.default_rng(0)
    A = rng.standard_normal((3, 3))
    U0, G = A @ A.T / 3 + np.eye(3), np.diag([1.0, 0.7, 0.5]) + 0.1
    saddle = {w: {c: U0 + 20 * (1 - c) * G / w for c in (0.5, 0.9, 1.0, 1.1, 2.0)} for w in (50, 100)}
    samples = {w: SimpleNamespace(width=w, U=s[1.0], U_se=np.full((3, 3), 1e-3)) for w, s in saddle.items()}
    verdict = os_claims.entropy_weight_agreement("2w", samples=samples, saddle=saddle, widths=[50, 100], margin=0.25)
    assert verdict.outcome is HOLDS and verdict.source.startswith("derived in this book")


def test_the_finite_width_pruning_order_is_compared_with_the_reference_on_its_own_statistic():
    # the transfer favours finite width, the pruning order favours the near-GP U: each claim reads its own statistic
    models = [
        dataclasses.replace(m, order_gain={"theory": m.order_gain["theory"] - 0.1, "near": m.order_gain["near"]})
        for m in _models([0.05, 0.04, 0.06, 0.05])
    ]
    assert os_claims.finite_width_against("8f", models, reference="near", width=10).outcome is HOLDS
    order = os_claims.finite_width_against("7bf", models, reference="near", width=10, statistic="order")
    assert order.outcome is CONTRADICTED and order.source.startswith("derived in this book")
    assert "pruned heads" in order.statistic and "N=10" in order.statement
    with pytest.raises(ValueError, match="statistic must be 'transfer'"):
        os_claims.finite_width_against("x", models, reference="near", width=10, statistic="accuracy")


def _model_replicates(seed, finite_width, gp):
    """Replicates of one model with the label fractions ``finite_width`` and ``gp`` over its draws, the rest empty."""
    draws = len(finite_width)
    return reps.ModelReplicates(
        index=seed - 42, seed=seed, temperature=np.full(draws, 0.5), gp_temperature=np.full(draws, 0.1), accuracy={},
        label_fraction={"finite_width": np.array(finite_width), "gp": np.array(gp)}, transfer={}, transfer_excess={},
        order_gain={}, best_gap={}, ks=(1,), base_accuracy=0.9, best_accuracy=np.array([0.9]), seconds={},
    )  # fmt: skip


def test_replicate_summary_counts_the_models_and_averages_the_label_fractions_over_every_draw():
    models = [_model_replicates(42, [0.5, 0.7], [0.2, 0.2]), _model_replicates(43, [0.3, 0.1], [0.4, 0.0])]
    summary = reps.replicate_summary(models)
    assert {k: summary[k] for k in ("num_rep_models", "rep_draws", "rep_df")} == {
        "num_rep_models": 2,
        "rep_draws": 2,
        "rep_df": 1,
    }
    assert summary["alignment_fw_mean"] == pytest.approx(0.4) and summary["alignment_gp_mean"] == pytest.approx(0.2)
    with pytest.raises(ValueError, match="same number of draws"):
        reps.replicate_summary([models[0], _model_replicates(44, [0.5], [0.2])])
