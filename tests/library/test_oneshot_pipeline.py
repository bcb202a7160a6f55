"""Tests of attnpaths.oneshot.episodes, .temperature_grid and .pruning: temperature selection uses only the selection split, the theory
grid and its warm starts, pruning orders and sets, the statistics behind the verdicts, and the verdicts
themselves (each must say "does not hold" on data that contradict its claim, and never raise)."""

import copy
import dataclasses
import itertools
import math

import numpy as np
import pytest
import torch
from helpers import random_problem
from scipy.stats import spearmanr

from attnpaths import statistics
from attnpaths.attention import Attention, AttentionLayer
from attnpaths.claims import Outcome
from attnpaths.experiments import head_pruning
from attnpaths.experiments.finite_width import sample_agreement
from attnpaths.experiments.head_subsets import best_curve
from attnpaths.experiments.path_data import PathData
from attnpaths.experiments.sampling import sample_posterior
from attnpaths.head_scoring import pruning_order
from attnpaths.oneshot import episodes, temperature_grid
from attnpaths.oneshot import pruning as oneshot_pruning
from attnpaths.oneshot.imagesets import ImageClasses
from attnpaths.oneshot.sequences import SequenceEncoder
from attnpaths.oneshot.training import TrainedModel, TrainingConfig
from attnpaths.oneshot.training import accuracy as model_accuracy
from attnpaths.paths import all_paths
from attnpaths.theory import classification_accuracy, solve
from attnpaths.transformer import SumHeadTransformer


def tiny_attention(heads=(2, 2), n0=6, g=3, seed=0):
    gen = torch.Generator().manual_seed(seed)
    layers = tuple(
        AttentionLayer(
            Q=torch.randn(h, g, n0, generator=gen, dtype=torch.float64),
            K=torch.randn(h, g, n0, generator=gen, dtype=torch.float64),
        )
        for h in heads
    )
    return Attention(layers, readout="average_pooling")


@pytest.fixture(scope="module")
def features():
    """Random path features with label structure for train / validation / test (2 x 2 heads, 4 paths)."""
    feats, ys = {}, {}
    for split, (P, seed) in {"train": (24, 0), "validation": (30, 1), "test": (30, 2)}.items():
        xi, y = random_problem(P=P, n0=6, heads=(2, 2), seed=seed)
        feats[split], ys[split] = xi, y
    return PathData(
        episodes.OneShotNetwork(tiny_attention()),
        feats["train"],
        ys["train"],
        {s: (feats[s], ys[s]) for s in ("validation", "test")},
    )


@pytest.fixture(scope="module")
def grid(features):
    return temperature_grid.theory_grid(features, widths=(5, 50), temperatures=(0.1, 0.5, 1.0), progress=False)


# ------------------------------------------------------------------------------------------------ network
def test_one_shot_network_names_paths_like_the_authors():
    net = episodes.OneShotNetwork(tiny_attention(heads=(4, 4), n0=5))
    assert net.heads == (4, 4) and net.num_paths == 16
    assert net.path_names[:5] == ("1,1", "1,2", "1,3", "1,4", "2,1")  # h1 slowest, 1-based
    assert net.plot_order == tuple(range(16))
    with pytest.raises(ValueError, match="attention"):
        episodes.OneShotNetwork("not attention")


# ------------------------------------------------------------------------------------------------ episodes
def blob_classes(n_classes, seed):
    rng = np.random.default_rng(seed)
    images = rng.uniform(size=(n_classes, 4, 16, 16)).astype(np.float32)
    return ImageClasses(images, tuple(f"b{seed}-{k}" for k in range(n_classes)), ("blobs",) * n_classes)


def test_class_sorted_sequences_are_balanced_and_reproducible():
    classes = blob_classes(5, 0)
    encoder = SequenceEncoder.create(np.random.default_rng(0), patch_size=4, image_size=16)
    a = episodes.class_sorted_sequences(classes, 40, encoder, np.random.default_rng(3))
    b = episodes.class_sorted_sequences(classes, 40, encoder, np.random.default_rng(3))
    assert torch.equal(a.x, b.x)  # determinism: the same episodes drawn twice from the same seed
    assert a.y[:20].eq(1).all() and a.y[20:].eq(-1).all()
    with pytest.raises(ValueError, match="even"):
        episodes.class_sorted_sequences(classes, 7, encoder, np.random.default_rng(0))


# ------------------------------------------------------------------------------------------------ theory grid
def test_grid_matches_independent_solves_and_warm_starts_find_the_same_minimum(features, grid):
    assert grid.converged.all()
    assert grid.warm_started[:, :-1].all() and not grid.warm_started[:, -1].any()  # highest T starts from GP
    for i, w in enumerate((5, 50)):
        for j, T in enumerate((0.1, 0.5, 1.0)):
            sol = solve(features.features, features.y, heads=(2, 2), width=w, temperature=T)
            np.testing.assert_allclose(grid.U[i, j], sol.U, atol=1e-7)
            mean = sol.predict(features.features_test)[0]
            np.testing.assert_allclose(grid.means["test"][i, j], mean, atol=1e-7)
            # exact on any CPU: accuracies are counts (the means agree to 1e-7 and none lies that close to zero)
            assert grid.accuracy["test"][i, j] == classification_accuracy(mean, features.y_test.numpy())


def test_label_fraction_draws_are_independent_reproducible_draws_of_the_training_episodes():
    from attnpaths.experiments import kernel_pcs
    from attnpaths.paths import path_features

    classes = blob_classes(6, 1)
    encoder = SequenceEncoder.create(np.random.default_rng(0), patch_size=4, image_size=16)
    attention = tiny_attention(n0=encoder.input_width)
    kwargs = dict(num_train=20, width=5, temperature=0.5, num_components=3)
    draws = temperature_grid.label_fraction_draws(
        classes, encoder, attention, [np.random.default_rng([9, d]) for d in range(3)], **kwargs
    )
    again = temperature_grid.label_fraction_draws(
        classes, encoder, attention, [np.random.default_rng([9, d]) for d in range(3)], **kwargs
    )
    assert draws["finite_width"].shape == draws["gp"].shape == (3,)
    np.testing.assert_array_equal(draws["finite_width"], again["finite_width"])  # determinism: the same draws twice
    assert len(set(np.round(draws["gp"], 12))) == 3  # each draw has its own episodes
    assert np.all((draws["gp"] >= 0) & (draws["gp"] <= 1))
    # the first draw is the chapter's PC analysis (kernel_pcs.pc_overlaps) on those episodes
    seqs = episodes.class_sorted_sequences(classes, 20, encoder, np.random.default_rng([9, 0]))
    xi, y = path_features(seqs.x, attention), seqs.y.to(torch.float64)
    data = PathData(episodes.OneShotNetwork(attention), xi, y, {"test": (xi, y)})
    U = solve(xi, y, heads=attention.heads, width=5, temperature=0.5).U
    pcs = kernel_pcs.pc_overlaps(data, U, 3)
    assert draws["finite_width"][0] == pytest.approx(kernel_pcs.label_fraction(pcs["finite_width"], 3), abs=1e-12)
    assert draws["gp"][0] == pytest.approx(kernel_pcs.label_fraction(pcs["gp"], 3), abs=1e-12)
    with pytest.raises(ValueError, match="rngs"):
        temperature_grid.label_fraction_draws(classes, encoder, attention, [np.random.default_rng(0)], **kwargs)


def test_gp_grid_is_the_identity_order_parameter(features):
    gp = temperature_grid.gp_grid(features, (0.1, 0.5))
    assert gp.widths.tolist() == [math.inf]
    np.testing.assert_allclose(gp.U[0, 0], np.eye(4))


@pytest.mark.parametrize("bad", [(), (5, 5), (0, 5), (5.5,)])
def test_theory_grid_rejects_bad_widths(features, bad):
    with pytest.raises(ValueError, match="widths"):
        temperature_grid.theory_grid(features, widths=bad, temperatures=(0.1,), progress=False)


def test_warm_start_differences_measure_the_distance_to_a_start_from_the_gp_values(features, grid):
    sel = temperature_grid.selected(grid, on="validation")
    diffs = temperature_grid.warm_start_differences(features, grid, sel, (5, 50))
    assert set(diffs) == {5, 50} and max(diffs.values()) < 1e-6
    # a selection whose U is off by 0.01 in one entry is caught, by that amount
    shifted = dict(sel, U=sel["U"].copy())
    shifted["U"][1, 0, 1] += 0.01
    moved = temperature_grid.warm_start_differences(features, grid, shifted, (5, 50))
    assert moved[5] == diffs[5] and moved[50] == pytest.approx(0.01, abs=1e-6)
    with pytest.raises(ValueError, match="width"):
        temperature_grid.warm_start_differences(features, grid, sel, (7,))


def test_order_parameter_summary_locates_U_relative_to_the_gp_value():
    U = np.array([[2.0, -0.5, 0.1], [-0.5, 1.0, 0.3], [0.1, 0.3, 0.5]])
    summary = temperature_grid.order_parameter_summary(U)
    assert summary == pytest.approx(
        {
            "diagonal_min": 0.5,
            "diagonal_max": 2.0,
            "offdiagonal_min": -0.5,
            "offdiagonal_max": 0.3,
            "distance_to_gp": math.sqrt(1 + 0.25 + 2 * 0.35),
        }
    )
    assert temperature_grid.order_parameter_summary(np.eye(4))["distance_to_gp"] == 0.0  # exact on any CPU: I - I = 0
    with pytest.raises(ValueError, match="square"):
        temperature_grid.order_parameter_summary(np.ones((2, 3)))


# ------------------------------------------------------------------------------------------------ selection
def test_select_temperature_takes_the_best_then_lowest_mse_then_lowest_temperature():
    acc = np.array([[0.6, 0.8, 0.7], [0.9, 0.9, 0.9], [0.5, 0.7, 0.7]])
    mse = np.array([[1.0, 1.0, 1.0], [0.5, 0.4, 0.4], [1.0, 0.9, 0.3]])
    assert temperature_grid.select_temperature(acc, mse).tolist() == [1, 1, 2]
    assert temperature_grid.select_temperature(acc).tolist() == [1, 0, 1]
    allowed = np.array([[True, False, True], [True, True, True], [True, True, True]])
    assert temperature_grid.select_temperature(acc, mse, allowed)[0] == 2
    with pytest.raises(ValueError, match="allowed"):
        temperature_grid.select_temperature(acc, mse, np.zeros_like(acc, dtype=bool))


def test_selection_on_validation_never_looks_at_the_test_split(grid):
    chosen = temperature_grid.selected(grid, on="validation")
    # scramble the test split's accuracies and errors: the validation choice cannot change
    rng = np.random.default_rng(0)
    scrambled = dataclasses.replace(
        grid,
        accuracy={**grid.accuracy, "test": rng.uniform(size=grid.accuracy["test"].shape)},
        mse={**grid.mse, "test": rng.uniform(size=grid.mse["test"].shape)},
    )
    again = temperature_grid.selected(scrambled, on="validation")
    assert again["index"].tolist() == chosen["index"].tolist()
    np.testing.assert_array_equal(again["temperature"], chosen["temperature"])  # exact on any CPU: grid values chosen
    np.testing.assert_array_equal(
        chosen["index"],
        temperature_grid.select_temperature(grid.accuracy["validation"], grid.mse["validation"], grid.converged),
    )
    # the reported test accuracy is the test split at the validation-chosen temperature
    rows = np.arange(len(grid.widths))
    # exact on any CPU: the chosen entries of the grid, copied
    np.testing.assert_array_equal(chosen["accuracy"]["test"], grid.accuracy["test"][rows, chosen["index"]])
    # the authors' rule picks the best test accuracy: never below the validation rule on the test split
    assert np.all(temperature_grid.selected(grid, on="test")["accuracy"]["test"] >= chosen["accuracy"]["test"])
    with pytest.raises(ValueError, match="on must be"):
        temperature_grid.selected(grid, on="train")


def test_selection_skips_uncertified_points(grid):
    converged = grid.converged.copy()
    best = temperature_grid.selected(grid, on="validation")["index"]
    converged[0, best[0]] = False
    masked = dataclasses.replace(grid, converged=converged)
    assert temperature_grid.selected(masked, on="validation")["index"][0] != best[0]


# ------------------------------------------------------------------------------------------------ pruning
def test_pruning_sets_never_empty_a_layer_and_grow_one_head_at_a_time():
    heads = (4, 4)
    order = [(0, 0), (0, 1), (0, 2), (0, 3), (1, 3), (1, 2), (1, 1), (1, 0)]
    sets = head_pruning.pruning_sets(order, heads)
    assert len(sets) == 1 + 3 + 3
    assert sets[0] == () and all(len(s) == k for k, s in enumerate(sets))
    assert all(sets[k][:-1] == sets[k - 1] for k in range(1, len(sets)))
    assert (0, 3) not in sets[-1] and (1, 0) not in sets[-1]  # the last head of each layer is skipped
    for s in sets:
        for layer in range(2):
            assert sum(1 for l, _ in s if l == layer) <= heads[layer] - 1
    with pytest.raises(ValueError, match="permutation"):
        head_pruning.pruning_sets(order[:-1], heads)


def test_random_orders_are_reproducible_permutations():
    a = head_pruning.random_orders((4, 4), 10, np.random.default_rng(5))
    b = head_pruning.random_orders((4, 4), 10, np.random.default_rng(5))
    assert a == b
    assert all(sorted(o) == head_pruning.all_heads((4, 4)) for o in a)
    assert len({tuple(o) for o in a}) > 1
    with pytest.raises(ValueError, match="rng"):
        head_pruning.random_orders((4, 4), 2, 0)
    with pytest.raises(ValueError, match="num_orders"):
        head_pruning.random_orders((4, 4), 0, np.random.default_rng(0))


def test_pruning_order_is_ascending_with_layer_major_ties():
    scores = np.array([[0.5, 0.2, 1.0], [0.2, 0.9, np.nan]])
    assert pruning_order(scores) == [(0, 1), (1, 0), (0, 0), (1, 1), (0, 2)]
    assert pruning_order(scores, prune_first="highest") == [(0, 2), (1, 1), (0, 0), (0, 1), (1, 0)]
    with pytest.raises(ValueError, match="prune_first"):
        pruning_order(scores, prune_first="random")


def seqs_encoder():
    """The encoder of :func:`_episodes_and_model`'s episodes."""
    return SequenceEncoder.create(np.random.default_rng(1), patch_size=4, image_size=16)


def _episodes_and_model():
    model = SumHeadTransformer(16, 8, 4, 2, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    encoder = seqs_encoder()
    seqs = episodes.class_sorted_sequences(blob_classes(6, 1), 60, encoder, np.random.default_rng(2))
    return model, seqs


def test_pruning_evaluator_reproduces_the_models_own_pruning_with_any_heads_pruned():
    model, seqs = _episodes_and_model()
    evaluator = oneshot_pruning.pruning_evaluator(model, seqs)
    for pruned in ([], [(1, 2)], [(0, 0), (0, 2), (1, 1)]):
        expected = model(seqs.x, drop_heads=pruned).detach().numpy()
        # two float64 routes to the same outputs (the model's folded forward pass, the evaluator's layer by layer)
        np.testing.assert_allclose(evaluator.outputs(pruned), expected, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="at least one head"):
        evaluator.outputs([(0, 0), (0, 1), (0, 2)])
    with pytest.raises(ValueError, match="SumHeadTransformer"):
        oneshot_pruning.pruning_evaluator(torch.nn.Linear(2, 2), seqs)


def test_pruning_evaluator_measures_the_model_with_heads_dropped():
    model, seqs = _episodes_and_model()
    evaluator = oneshot_pruning.pruning_evaluator(model, seqs)
    single = oneshot_pruning.single_head_drops(evaluator)
    # exact on any CPU: accuracies are counts over 60 episodes; the evaluator and the model's forward pass are two
    # routes to the outputs, but none lies within rounding of zero
    assert single["base"] == model_accuracy(model, seqs)
    assert single["accuracy"][1, 2] == model_accuracy(model, seqs, drop_heads=[(1, 2)])
    # exact on any CPU: the drops are this one correctly rounded subtraction
    np.testing.assert_array_equal(single["drop"], single["base"] - single["accuracy"])
    order = head_pruning.all_heads((3, 3))
    curve = head_pruning.pruning_curve(evaluator, order)
    # determinism: the curve reads the same evaluator (its cached accuracies) as the single drops
    assert curve.shape == (5,) and curve[0] == single["base"] and curve[1] == single["accuracy"][0, 0]
    assert curve[3] == model_accuracy(model, seqs, drop_heads=[(0, 0), (0, 1), (1, 0)])  # counts, as above
    assert evaluator([(0, 1), (0, 0)]) == evaluator([(0, 0), (0, 1)])  # a set, whatever its order


@pytest.fixture(scope="module")
def pruning_setup():
    model, seqs = _episodes_and_model()
    return model, seqs, oneshot_pruning.pruning_evaluator(model, seqs)


def test_prune_heads_gathers_the_single_drops_and_the_pruning_curves(pruning_setup):
    _, _, evaluator = pruning_setup
    scores = np.array([[0.5, 0.1, 0.9], [1.0, 0.3, 0.2]])
    result = oneshot_pruning.prune_heads(evaluator, scores, 4, np.random.default_rng(5))
    single = oneshot_pruning.single_head_drops(evaluator)
    assert result.labels == ["(1)1", "(1)2", "(1)3", "(2)1", "(2)2", "(2)3"] and result.num_episodes == 60
    # determinism: prune_heads calls single_head_drops and pruning_curve on the same evaluator
    assert result.base_accuracy == single["base"]
    np.testing.assert_array_equal(result.single_head_drop, single["drop"])
    assert result.score_order == [(0, 1), (1, 2), (1, 1), (0, 0), (0, 2), (1, 0)]
    np.testing.assert_array_equal(result.score_curve, head_pruning.pruning_curve(evaluator, result.score_order))
    orders = head_pruning.random_orders((3, 3), 4, np.random.default_rng(5))
    assert result.random_orders == orders
    # determinism: as above, along a random order
    np.testing.assert_array_equal(result.random_curves[2], head_pruning.pruning_curve(evaluator, orders[2]))
    # along the score order (1)2, (2)3, (2)2 are pruned; (1)1 next, then (1)3 is the last of layer 1: skipped
    assert result.score_order_pruned == ["(1)2", "(2)3", "(2)2", "(1)1"]
    record = result.to_dict()
    assert record["score_order"] == ["(1)2", "(2)3", "(2)2", "(1)1", "(1)3", "(2)1"]
    assert record["random_order_sd"] == pytest.approx(result.random_curves.std(axis=0, ddof=1))
    assert record["single_head_accuracy"].shape == (6,)
    drops = single["drop"].ravel()
    assert [label for label, _ in result.largest_drops(2)] == [result.labels[i] for i in np.argsort(-drops)[:2]]
    assert result.largest_drops(1)[0][1] == drops.max()  # exact on any CPU: the largest drop, selected
    with pytest.raises(ValueError, match="scores"):
        oneshot_pruning.prune_heads(evaluator, scores[:, :2], 4, np.random.default_rng(5))


def test_forward_pass_errors_are_rounding_and_catch_a_wrong_evaluation(pruning_setup):
    model, seqs, evaluator = pruning_setup
    sets = [[], [(0, 0)], [(1, 2), (0, 1)]]
    checks = oneshot_pruning.forward_pass_errors(model, seqs, evaluator, sets)
    assert [c["pruned"] for c in checks] == [[], [(0, 0)], [(1, 2), (0, 1)]]
    assert all(c["output"] < 1e-10 * c["scale"] and c["accuracy"] == 0 for c in checks)
    doubled = copy.deepcopy(model)
    with torch.no_grad():
        doubled.readout.mul_(2.0)  # every output doubled
    wrong = oneshot_pruning.pruning_evaluator(doubled, seqs)
    assert oneshot_pruning.forward_pass_errors(model, seqs, wrong, [[]])[0]["output"] == pytest.approx(
        checks[0]["scale"]
    )


# ------------------------------------------------------------------------------------------------ statistics
def test_spearman_permutation_test_is_exact():
    a = np.array([0.1, 0.4, 0.2, 0.9, 0.5])
    same = statistics.spearman_permutation_test(a, 2 * a + 1)
    assert same["rho"] == pytest.approx(1.0) and same["p_value"] == pytest.approx(1 / math.factorial(5))
    reverse = statistics.spearman_permutation_test(a, -a)
    assert reverse["rho"] == pytest.approx(-1.0) and reverse["p_value"] == pytest.approx(1.0)
    b = np.array([3.0, 1.0, 2.0, 2.0, 5.0])  # with a tie
    assert statistics.spearman_permutation_test(a, b)["rho"] == pytest.approx(spearmanr(a, b).statistic)
    assert statistics.spearman_permutation_test(a, np.full(5, 2.0)) == {"rho": 0.0, "p_value": 1.0, "n": 5}
    with pytest.raises(ValueError, match="n must be <= 9"):
        statistics.spearman_permutation_test(np.arange(10.0), np.arange(10.0))


# (a, b, rho, p-value) computed by the package's former own implementation (its own average ranks and an
# enumeration of every pairing, counting permuted rho >= rho - 1e-12): the scipy-based test gives the same
# p-values, exactly, with ties, rho = 0 and both signs
SPEARMAN_REFERENCE = [
    ([1.0, 0.0, 2.0], [2.0, 1.0, 1.0], 0.0, 0.6666666666666666),
    ([0.3, 0.1, 0.4, 0.2], [1.0, 0.0, 0.5, 0.2], 0.8, 0.16666666666666666),
    ([2.0, 3.0, 3.0, 2.0], [3.0, 2.0, 3.0, 3.0], -0.5773502691896258, 1.0),
    ([0.1, 0.4, 0.2, 0.9, 0.5], [3.0, 1.0, 2.0, 2.0, 5.0], -0.051298917604257706, 0.55),
    ([2.0, 2.0, 5.0, 5.0, 2.0, 3.0], [1.0, 5.0, 1.0, 0.0, 1.0, 0.0], -0.6166666666666667, 0.95),
    (
        [4.0, 2.0, 4.0, 0.0, 2.0, 4.0, 3.0],
        [6.0, 3.0, 4.0, 2.0, 1.0, 6.0, 3.0],
        0.8860760232362956,
        0.009523809523809525,
    ),
    (
        [0.62, 0.05, 0.31, 1.0, 0.47, 0.12, 0.88, 0.2],
        [0.025, 0.004, 0.031, 0.079, 0.043, 0.008, 0.066, 0.017],
        0.9285714285714286,
        0.0011160714285714285,
    ),
    (
        [0.62, 0.05, 0.31, 1.0, 0.47, 0.12, 0.88, 0.2],
        [-0.025, -0.004, -0.031, -0.079, -0.043, -0.008, -0.066, -0.017],
        -0.9285714285714286,
        0.9994295634920635,
    ),
]


@pytest.mark.parametrize("a, b, rho, p_value", SPEARMAN_REFERENCE)
def test_spearman_permutation_test_reproduces_the_former_p_values(a, b, rho, p_value):
    result = statistics.spearman_permutation_test(a, b)
    assert result["p_value"] == p_value
    assert result["rho"] == pytest.approx(rho, abs=1e-14)
    assert result["n"] == len(a)


def test_spearman_permutation_test_counts_ties_of_rho_exactly():
    # every pairing of 4 distinct values against a tied b: the p-value is the fraction of the 24 pairings
    # whose rho is at least the observed one, counted with rational arithmetic
    a, b = np.array([0.4, 0.1, 0.3, 0.2]), np.array([1.0, 1.0, 2.0, 3.0])
    ra, rb = np.array([3, 0, 2, 1]) * 2 - 3, np.array([1, 1, 4, 6]) - 3  # twice the centred average ranks
    observed = ra @ rb
    count = sum(ra[list(p)] @ rb >= observed for p in itertools.permutations(range(4)))
    assert statistics.spearman_permutation_test(a, b)["p_value"] == count / 24


def test_head_relabelings_permute_paths_and_keep_shared_heads():
    perms = oneshot_pruning.head_relabelings((3, 2))
    assert perms.shape == (math.factorial(3) * math.factorial(2), 6)
    assert perms[0].tolist() == list(range(6))
    paths = all_paths((3, 2))
    for p in perms:
        assert sorted(p) == list(range(6))
        # two paths share their layer-1 head iff their images do
        for i in range(6):
            for j in range(6):
                assert (paths[i][0] == paths[j][0]) == (paths[p[i]][0] == paths[p[j]][0])


def test_pattern_similarity_finds_a_pattern_and_its_relabelling():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((4, 4))
    U = A @ A.T + np.eye(4)
    same = oneshot_pruning.pattern_similarity(U, 3 * U, (2, 2))
    assert same["pearson"] == pytest.approx(1.0) and same["p_value"] == pytest.approx(1 / 4)
    p = oneshot_pruning.head_relabelings((2, 2))[3]
    moved = oneshot_pruning.pattern_similarity(U, U[np.ix_(p, p)], (2, 2))
    assert moved["pearson"] < 1 and moved["null_max"] == pytest.approx(1.0)


# ------------------------------------------------------------------------------------------------ reuse
@pytest.mark.needs("diagnostics")
def test_layer_sampler_and_checks_run_on_one_shot_features(features, grid):
    """The experiment layer's posterior sampling and the claim-2 test work with the one-shot network."""
    k, j = 0, 1
    point = sample_posterior(
        features, 5, 0.5, torch.Generator().manual_seed(0), num_warmup=5, num_samples=20, num_chains=2, progress=False
    )
    assert point.U.shape == (4, 4) and 0 <= point.accuracy <= 1
    verdict = sample_agreement(
        "2", points=[point], reference_accuracy={5: grid.accuracy["test"][k, j]}, reference_U={5: grid.U[k, j]}
    )
    assert verdict.outcome in set(Outcome)


# ------------------------------------------------------------------------------------------------ little loss


def test_paired_difference_over_episodes_and_over_fine_tuning_seeds():
    reference = np.array([1, 1, 0, 1, 0, 1, 1, 0], dtype=float)
    one = np.array([1, 0, 0, 1, 1, 1, 0, 0], dtype=float)
    estimate, se = oneshot_pruning.paired_difference(one, reference)
    d = one - reference
    assert estimate == pytest.approx(d.mean()) and se == pytest.approx(d.std(ddof=1) / math.sqrt(8))
    seeds = np.array([one, reference, np.ones(8)])
    estimate, se = oneshot_pruning.paired_difference(seeds, reference)
    per_episode = seeds.mean(axis=0) - reference
    expected = per_episode.var(ddof=1) / 8 + seeds.mean(axis=1).var(ddof=1) / 3
    assert estimate == pytest.approx(per_episode.mean()) and se == pytest.approx(math.sqrt(expected))
    # seeds that agree on every episode add no seed variance: the one-model standard error
    assert oneshot_pruning.paired_difference(np.array([one, one]), reference)[1] == pytest.approx(
        d.std(ddof=1) / math.sqrt(8)
    )
    with pytest.raises(ValueError, match="correct"):
        oneshot_pruning.paired_difference(one[:5], reference)


def test_paired_difference_df_counts_the_seeds_where_their_variance_dominates():
    rng = np.random.default_rng(5)
    reference = (rng.random(400) < 0.8).astype(float)
    one = (rng.random(400) < 0.8).astype(float)
    assert oneshot_pruning.paired_difference_df(one, reference) == 399.0
    # three seeds that differ in their overall accuracy (a shift of whole models): the seeds' share dominates and the
    # degrees of freedom fall towards S - 1 = 2
    seeds = np.array([one, np.roll(one, 1), np.ones(400)])
    df = oneshot_pruning.paired_difference_df(seeds, reference)
    per_episode = seeds.mean(axis=0) - reference
    v_e, v_s = per_episode.var(ddof=1) / 400, seeds.mean(axis=1).var(ddof=1) / 3
    assert df == pytest.approx((v_e + v_s) ** 2 / (v_e**2 / 399 + v_s**2 / 2))
    assert 2.0 <= df < 10.0
    with pytest.raises(ValueError, match="correct"):
        oneshot_pruning.paired_difference_df(one[:5], reference)


def test_little_loss_compares_the_score_order_with_the_unpruned_model_the_random_orders_and_the_best(pruning_setup):
    model, seqs, evaluator = pruning_setup
    scores = np.array([[0.5, 0.1, 0.9], [1.0, 0.3, 0.2]])
    result = oneshot_pruning.prune_heads(evaluator, scores, 2, np.random.default_rng(5))
    sets = head_pruning.pruning_sets(result.score_order, result.heads)
    trained = TrainedModel(model, seqs_encoder(), TrainingConfig(batch_size=8, learning_rate=1e-3), {})
    tuned = oneshot_pruning.fine_tune_pruned_sets(
        trained, blob_classes(6, 3), seqs, {0: sets[0], 1: sets[1], 2: sets[2]}, num_seeds=2, seed=0, steps=3
    )
    assert tuned[2]["pruned"] == tuple(sorted(sets[2])) and tuned[1]["correct"].shape == (2, 60)
    ll = oneshot_pruning.little_loss(evaluator, result, [1, 2], tuned)
    assert ll.ks == (1, 2) and ll.num_seeds == 2 and ll.num_episodes == 60
    assert ll.score_sets == [["(1)2"], ["(1)2", "(2)3"]]
    # the same evaluator's numbers, read three ways: the pruning curve, the exact random expectation, the ceiling
    np.testing.assert_allclose(ll.pruned_accuracy, result.score_curve[1:3], rtol=1e-12)
    np.testing.assert_allclose(ll.random_accuracy, result.random_expectation[1:3], rtol=1e-12)
    np.testing.assert_allclose(ll.best_accuracy, best_curve(result.curve_accuracy, result.heads)[1:3], rtol=1e-12)
    np.testing.assert_allclose(ll.pruned_difference, ll.pruned_accuracy - ll.base_accuracy, atol=1e-12)
    np.testing.assert_allclose(ll.minus_random, ll.pruned_accuracy - ll.random_accuracy, atol=1e-12)
    np.testing.assert_allclose(ll.minus_best, ll.pruned_accuracy - ll.best_accuracy, atol=1e-12)
    assert np.all(ll.minus_best <= 1e-12)  # no set of k heads beats the best one
    np.testing.assert_allclose(ll.tuned_difference, ll.tuned_accuracy.mean(axis=1) - ll.base_accuracy, atol=1e-12)
    assert ll.control_accuracy.shape == (2,) and ll.losses[0].shape == (2, 3)
    assert set(ll.to_dict()) >= {"tuned_mean_accuracy", "final_loss", "best_sets", "base_se"}
    with pytest.raises(ValueError, match="ks"):
        oneshot_pruning.little_loss(evaluator, result, [5], tuned)
    with pytest.raises(ValueError, match="fine_tuned"):
        oneshot_pruning.little_loss(evaluator, result, [1, 2], {1: tuned[1], 2: tuned[1]})


# ------------------------------------------------------------------ ablations, entropy weights, one temperature
def test_ablation_means_predict_with_U_its_diagonal_and_the_gp_value(features, grid):
    T = 0.5
    j = grid.temperature_index(T)
    U = grid.U[0, j]
    means = temperature_grid.ablation_means(features, U, T)
    # the theory's own predictor and the GP limit's at the same temperature (tolerance: two solves of the same
    # linear system, equal to rounding)
    np.testing.assert_allclose(means["theory"], grid.means["test"][0, j], atol=1e-7)
    gp = temperature_grid.gp_grid(features, (T,))
    np.testing.assert_allclose(means["gp"], gp.means["test"][0, 0], atol=1e-9)
    assert not np.allclose(means["diagonal"], means["theory"])  # the cross-path entries matter on this problem
    with pytest.raises(ValueError, match="U must be"):
        temperature_grid.ablation_means(features, np.eye(3), T)


def test_scaled_saddle_points_are_the_theory_at_width_c_n(features, grid):
    j = grid.temperature_index(0.1)
    saddle = temperature_grid.scaled_saddle_points(features, [5], [0.1], [1.0, 10.0])
    assert list(saddle) == [5] and sorted(saddle[5]) == [1.0, 10.0]
    # entropy weight 1 at N = 5 is the grid's point; weight 10 is the grid's N = 50 (the action's entropy term is
    # N times a function of U): two certified minimisers of one action, equal to the solver's tolerance
    np.testing.assert_allclose(saddle[5][1.0], grid.U[0, j], atol=1e-6)
    np.testing.assert_allclose(saddle[5][10.0], grid.U[1, j], atol=1e-6)
    with pytest.raises(ValueError, match="integer"):
        temperature_grid.scaled_saddle_points(features, [5], [0.1], [1.1])
    with pytest.raises(ValueError, match="one temperature per width"):
        temperature_grid.scaled_saddle_points(features, [5, 50], [0.1], [1.0])


@pytest.mark.needs("diagnostics")
def test_fixed_temperature_samples_reuse_the_samples_drawn_at_that_temperature(features, grid):
    from types import SimpleNamespace

    kept = SimpleNamespace(U=np.eye(4))
    other = SimpleNamespace(U=np.eye(4))
    samples = {5: kept, 50: other}
    drawn, reference = temperature_grid.fixed_temperature_samples(
        features, grid, samples, [0.5, 1.0], 0.5, 3, warmup=[2, 2], draws=[4, 4], chains=[1, 1], progress=False
    )
    assert list(drawn) == [5, 50] and drawn[5] is kept and drawn[50] is not other and drawn[50].width == 50
    j = grid.temperature_index(0.5)
    np.testing.assert_array_equal(reference[50], grid.U[1, j])
    with pytest.raises(ValueError, match="one entry per sampled width"):
        temperature_grid.fixed_temperature_samples(
            features, grid, samples, [0.5], 0.5, 3, warmup=[2, 2], draws=[4, 4], chains=[1, 1]
        )


def test_selection_summary_quotes_the_selected_grid_at_its_smallest_and_largest_width(features, grid):
    gp = temperature_grid.gp_grid(features, (0.1, 1.0))
    sel, sel_test = temperature_grid.selected(grid, on="validation"), temperature_grid.selected(grid, on="test")
    gp_sel, gp_sel_test = temperature_grid.selected(gp, on="validation"), temperature_grid.selected(gp, on="test")
    summary = temperature_grid.selection_summary(grid.widths, sel, sel_test, gp_sel, gp_sel_test)
    assert summary["N_small"] == 5 and summary["N_large"] == 50
    assert summary["acc_small"] == pytest.approx(100 * sel["accuracy"]["test"][0], rel=1e-15)
    assert summary["acc_large"] == pytest.approx(100 * sel["accuracy"]["test"][1], rel=1e-15)
    assert summary["T_small"] == sel["temperature"][0]  # exact on any CPU: a temperature of the grid, copied
    assert summary["gp_T"] == gp_sel["temperature"][0] and summary["gp_T_test_rule"] == gp_sel_test["temperature"][0]
    assert summary["gp_acc"] == pytest.approx(100 * gp_sel["accuracy"]["test"][0], rel=1e-15)
    assert summary["gp_test_rule"] == pytest.approx(100 * gp_sel_test["accuracy"]["test"][0], rel=1e-15)
    # choosing on the test episodes never lowers the test accuracy: the gain is the mean of non-negative differences
    gains = sel_test["accuracy"]["test"] - sel["accuracy"]["test"]
    assert summary["test_rule_gain"] == pytest.approx(100 * gains.mean(), rel=1e-12) and summary["test_rule_gain"] >= 0


def test_pruning_and_little_loss_summaries_quote_their_results_in_points(pruning_setup):
    model, seqs, evaluator = pruning_setup
    scores = np.array([[0.5, 0.1, 0.9], [1.0, 0.3, 0.2]])
    result = oneshot_pruning.prune_heads(evaluator, scores, 3, np.random.default_rng(5))
    summary = result.summary()
    # 6 heads in two layers: at most 4 pruned (a layer keeps its last head)
    assert {k: summary[k] for k in ("P_prune", "num_random", "max_pruned")} == {
        "P_prune": 60,
        "num_random": 3,
        "max_pruned": 4,
    }
    assert summary["base_acc"] == pytest.approx(100 * result.base_accuracy, rel=1e-15)
    assert summary["curve_end_score"] == pytest.approx(100 * result.score_curve[4], rel=1e-15)
    assert summary["curve_end_random"] == pytest.approx(100 * result.random_curves[:, 4].mean(), rel=1e-15)
    sets = head_pruning.pruning_sets(result.score_order, result.heads)
    trained = TrainedModel(model, seqs_encoder(), TrainingConfig(batch_size=8, learning_rate=1e-3), {})
    tuned = oneshot_pruning.fine_tune_pruned_sets(
        trained, blob_classes(6, 3), seqs, {0: sets[0], 1: sets[1]}, num_seeds=2, seed=0, steps=2
    )
    ll = oneshot_pruning.little_loss(evaluator, result, [1], tuned)
    assert ll.summary() == pytest.approx(
        {
            "ll_seeds": 2,
            "ll_base": 100 * result.base_accuracy,
            "ll_control": 100 * ll.control_accuracy.mean(),
            "ll_control_diff": 100 * (ll.control_accuracy.mean() - result.base_accuracy),
            "ll_control_se": 100 * ll.control_se,
        },
        rel=1e-12,
        abs=1e-12,
    )
    without_control = dataclasses.replace(ll, control_accuracy=None, control_difference=None, control_se=None)
    assert set(without_control.summary()) == {"ll_seeds", "ll_base"}
