"""The exact pruning optimum (attnpaths.experiments.head_subsets, attnpaths.pruning.exact), the stronger practical
baselines (attnpaths.pruning.practical) and the theory scores that measure what pruning removes
(attnpaths.pruning.theory_scores): each computes what it claims, and each score ranks a planted useless head
first to go."""

import itertools
import math

import numpy as np
import pytest
import torch
from helpers import assert_rounding_close

from attnpaths.attention_stack import MultiheadAttentionStack
from attnpaths.claims import Outcome
from attnpaths.experiments.head_pruning import all_heads, pruning_sets
from attnpaths.experiments.head_rankings import gradient_head_importance
from attnpaths.experiments.head_subsets import (
    allowed_subsets,
    best_curve,
    curve_table,
    greedy_order,
    normalised_area,
    random_order_area_distribution,
    random_order_curve,
    random_order_p_values,
    random_order_weights,
    shapley_values,
    subset_curve,
    subset_index,
    subset_masks,
)
from attnpaths.head_masks import pruning_mask
from attnpaths.head_models import head_model
from attnpaths.head_scoring import pruning_order
from attnpaths.paths import all_paths, path_features
from attnpaths.pruning import claims as pr_claims
from attnpaths.pruning.exact import TableEvaluator, subset_table
from attnpaths.pruning.masked_outputs import gated_stack, subset_outputs
from attnpaths.pruning.practical import fisher_pruning_sets, gate_fisher, iterative_gradient_order
from attnpaths.pruning.theory_scores import (
    action_changes,
    action_gate_gradients,
    head_paths,
    loo_scores,
    removal_scores,
    trained_path_scores,
)
from attnpaths.theory import solve
from attnpaths.transformer import SumHeadTransformer

N0, T = 10, 7


def stack(seed=0, heads=4, width=12, layers=2):
    return MultiheadAttentionStack(
        N0, width, heads, layers, generator=torch.Generator().manual_seed(seed), dtype=torch.float64
    ).eval()


def sum_heads(seed=0, heads=3):
    return SumHeadTransformer(N0, 8, 5, 2, heads, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def inputs(batch=6, seed=1):
    return torch.randn(batch, N0, T, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def silence(model, layer, head):
    """Plant a useless head: zero its column block of the output projection (its output never reaches the next
    layer)."""
    d = model.hyperparameters["width"] // model.num_heads
    with torch.no_grad():
        model.layers[layer].out_proj.weight[:, head * d : (head + 1) * d] = 0.0
    return model


# ------------------------------------------------------------------------------------------------ subset tables


def test_subset_bookkeeping():
    heads = (2, 3)
    masks = subset_masks(heads)
    assert masks.shape == (32, 5) and masks[subset_index([(1, 0)], heads)].tolist() == [0, 0, 1, 0, 0]
    allowed = allowed_subsets(heads)
    assert not allowed[subset_index([(0, 0), (0, 1)], heads)] and allowed[subset_index([(0, 0), (1, 1)], heads)]
    assert allowed.sum() == 3 * 7
    with pytest.raises(ValueError, match="pruned"):
        subset_index([(2, 0)], heads)
    with pytest.raises(ValueError, match="values"):
        best_curve(np.zeros(7), heads)


@pytest.mark.parametrize("heads", [(2, 2), (3, 2), (2, 2, 2)])
def test_random_order_weights_are_the_enumeration_of_every_order(heads):
    pairs = all_heads(heads)
    counts = np.zeros((sum(heads) - len(heads) + 1, 2 ** sum(heads)))
    for perm in itertools.permutations(range(len(pairs))):
        for k, s in enumerate(pruning_sets([pairs[i] for i in perm], heads)):
            counts[k, subset_index(s, heads)] += 1
    # the closed-form weights against the enumeration's counts over k!: probabilities, rounding apart
    assert_rounding_close(random_order_weights(heads), counts / math.factorial(len(pairs)), what="order weights")


def test_ceiling_random_shapley_greedy_on_an_additive_table():
    """Accuracy 1 - sum of the pruned heads' costs: the ceiling prunes the cheapest heads, the greedy order is the
    ascending cost, the Shapley value of a head is its cost, and a zero-cost head is a dummy."""
    heads = (3, 3)
    cost = np.array([0.05, 0.0, 0.2, 0.1, 0.3, 0.02])
    masks = subset_masks(heads)
    values = 1 - masks @ cost
    np.testing.assert_allclose(best_curve(values, heads), [1, 1, 0.98, 0.93, 0.83])  # one head kept per layer
    np.testing.assert_allclose(best_curve(-values, heads, maximize=False), [-1, -1, -0.98, -0.93, -0.83])
    assert greedy_order(values, heads)[:4] == [(0, 1), (1, 2), (0, 0), (1, 0)]
    np.testing.assert_allclose(shapley_values(values, heads), cost.reshape(2, 3), atol=1e-12)
    np.testing.assert_allclose(
        shapley_values(1 - values, heads, higher_is_better=False), cost.reshape(2, 3), atol=1e-12
    )
    # a random order's expectation: the mean cost of the pruned sets
    expected = random_order_weights(heads) @ values
    np.testing.assert_allclose(random_order_curve(values, heads), expected)
    order = pruning_order(shapley_values(values, heads))
    curve = subset_curve(values, pruning_sets(order, heads), heads)
    np.testing.assert_allclose(curve, best_curve(values, heads))
    np.testing.assert_allclose(normalised_area([0.5, 0.9, 0.7], 0.5, 0.9), [0.0, 1.0, 0.5])
    assert np.isnan(normalised_area(0.5, 0.6, 0.6))


def test_shapley_values_are_efficient_on_any_game():
    heads = (2, 3)
    values = np.random.default_rng(0).normal(size=32)
    phi = shapley_values(values, heads)
    full = 2**5 - 1
    assert np.nansum(phi) == pytest.approx(values[0] - values[full])


@pytest.mark.parametrize("make", [stack, sum_heads])
def test_subset_outputs_are_the_masked_outputs_of_every_subset(make):
    view, x = head_model(make()), inputs()
    out = subset_outputs(view, x)
    pairs = all_heads(view.heads)
    assert out.shape == (2 ** len(pairs), 6)
    for m in (0, 1, 5, 37, 2 ** len(pairs) - 2, 2 ** len(pairs) - 1):
        pruned = [pairs[i] for i in range(len(pairs)) if m >> i & 1]
        with torch.no_grad():
            direct = view.masked_output(x.transpose(1, 2), pruning_mask(view.heads, pruned))
        # every subset at once (batched masks) against one masked forward pass: rounding on the outputs' scale
        assert_rounding_close(out[m], direct, what=f"outputs of subset {m}")


def test_the_table_finds_the_subset_that_is_known_to_be_best():
    """Labels are the signs of the model with two planted heads pruned: that set, and no smaller one, reaches
    accuracy 1, and the ceiling and the table evaluator say so."""
    view = head_model(stack(seed=3))
    x = inputs(200, seed=4)
    known = [(0, 2), (1, 1)]
    with torch.no_grad():
        y = torch.sign(view.masked_output(x.transpose(1, 2), pruning_mask(view.heads, known)))
    table = subset_table(view, {"test": (x, y), "validation": (x[:50], y[:50])})
    # exact on any CPU: accuracies are counts over 200 examples (the table's outputs are another route to the
    # labels' outputs, but none of them lies within rounding of zero)
    assert table.accuracy["test"][subset_index(known, view.heads)] == 1.0
    ceiling = best_curve(table.accuracy["test"], view.heads)
    assert ceiling[2] == 1.0 and ceiling[0] < 1.0  # exact on any CPU: the ceiling selects the table's counts
    assert TableEvaluator(table, "test")(known) == 1.0  # exact on any CPU: reads the same table entry
    with pytest.raises(ValueError, match="split"):
        TableEvaluator(table, "train")


# ------------------------------------------------------------------------------------------------ gating and path weights


def test_gating_the_module_scales_its_heads_column_blocks():
    model, x = stack(), inputs()
    mask = torch.tensor([[1.0, 0.3, 0.0, 2.0], [0.5, 1.0, 1.0, 0.0]], dtype=torch.float64)
    with torch.no_grad():
        # the gated module against the view's masked outputs: two routes, rounding on the outputs' scale
        assert_rounding_close(
            gated_stack(model, mask)(x), head_model(model).masked_output(x.transpose(1, 2), mask), what="gated outputs"
        )
    with pytest.raises(ValueError, match="mask"):
        gated_stack(model, torch.ones(2, 3))


@pytest.mark.parametrize("make", [stack, sum_heads])
def test_path_weights_write_the_output_as_a_sum_over_paths(make):
    view, x = head_model(make()), inputs()
    w = view.path_weights()
    assert w.shape == (len(all_paths(view.heads)), N0)
    with torch.no_grad():
        torch.testing.assert_close(
            torch.einsum("pi,bip->b", w, path_features(x, view)),
            view.masked_output(x.transpose(1, 2)),
            rtol=1e-10,
            atol=1e-12,
        )


def test_path_weights_refuse_a_model_with_biases():
    model = MultiheadAttentionStack(
        N0, 12, 4, 2, bias=True, generator=torch.Generator().manual_seed(0), dtype=torch.float64
    )
    with pytest.raises(ValueError, match="biases"):
        head_model(model).path_weights()


# ------------------------------------------------------------------------------------------------ planted useless heads


def regression_labels(view, x, noise=0.5, seed=0):
    """Labels the model fits up to independent noise, so that the gate gradient is small beside the Fisher."""
    with torch.no_grad():
        f = view.masked_output(x.transpose(1, 2))
    return f + noise * torch.randn(f.shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_the_trained_path_score_ranks_a_silenced_head_first():
    view = head_model(silence(stack(seed=1), 0, 2))
    scores = trained_path_scores(view)
    assert pruning_order(scores)[0] == (0, 2)


def test_iterative_gradient_importance_prunes_a_silenced_head_first():
    view = head_model(silence(stack(seed=1), 1, 3))
    x = inputs(60, seed=2)
    y = regression_labels(view, x)
    order = iterative_gradient_order(view, x.transpose(1, 2), y)
    assert order[0] == (1, 3) and sorted(order) == all_heads(view.heads)
    # the importance at a mask leaves the pruned heads out of the normalisation
    at = gradient_head_importance(view, x.transpose(1, 2), y, mask=pruning_mask(view.heads, [(0, 0)]))
    assert np.isnan(at[0, 0]) and np.nansum(at[0] ** 2) == pytest.approx(1.0)


def test_the_fisher_search_prunes_a_silenced_head_first_and_is_a_second_order_estimate():
    view = head_model(silence(stack(seed=1), 0, 1))
    x = inputs(2000, seed=2)
    y = regression_labels(view, x, noise=2.0)
    sets, change = fisher_pruning_sets(view, x.transpose(1, 2), y)
    assert sets[0] == () and sets[1] == ((0, 1),) and change[1] == pytest.approx(0.0, abs=1e-20)
    assert [len(s) for s in sets] == list(range(7))
    g, F = gate_fisher(view, x.transpose(1, 2), y)
    # exact on any CPU: the silenced head's gate multiplies exactly zero weights, so its gradient terms are exact zeros
    assert F.shape == (8, 8) and np.allclose(F, F.T) and g[1] == 0.0 and (F[1] == 0).all()


def planted_theory(seed=0, P=200, held_out=200):
    """A theory whose labels are a linear function of the paths that avoid head (0, 1): the features of its
    paths are independent of the labels (a useless head for the theory). Returns the heads, the training
    features and labels, ``held_out`` further examples of the same rule, and the solution."""
    heads = (3, 2)
    rng = np.random.default_rng(seed)
    paths = np.array(all_paths(heads))
    features = rng.normal(size=(P + held_out, 6, len(paths)))
    useful = paths[:, 0] != 1
    y = np.einsum("i,pik->p", rng.normal(size=6), features[:, :, useful])
    y /= y.std()
    solution = solve(features[:P], y[:P], heads=heads, width=20, temperature=0.1, on_failure="raise")
    return heads, features[:P], y[:P], (features[P:], y[P:]), solution


def test_every_theory_score_ranks_a_planted_useless_head_first():
    heads, features, y, (held, y_held), solution = planted_theory()
    scores = {
        "removal": removal_scores(solution, held, y_held),
        "loo": loo_scores(solution),
        "gate": action_gate_gradients(solution),
        "action": action_changes(features, y, solution)[0],
    }
    for name, score in scores.items():
        assert np.argmin(score[0, :3]) == 1, (name, score)
    assert action_changes(features, y, solution)[1][0, :3].all()
    assert head_paths(heads).sum(axis=2)[0, 0] == 2


def test_the_gate_gradient_is_the_derivative_of_the_minimal_action():
    """Envelope theorem: at the minimum, d S*/d g equals the partial derivative at fixed U, checked against the
    re-solved action with the head's features scaled by 1 -+ eps."""
    heads, features, y, _, solution = planted_theory(seed=1, P=40, held_out=0)
    through = head_paths(heads)[1, 0]
    eps = 1e-4
    actions = []
    for g in (1 + eps, 1 - eps):
        scaled = features.copy()
        scaled[:, :, through] *= g
        actions.append(
            solve(
                scaled,
                y,
                heads=heads,
                width=20,
                temperature=0.1,
                on_failure="raise",
                initial=solution.U_layers,
                gradient_tolerance=1e-11,
            ).action
        )
    derivative = (actions[0] - actions[1]) / (2 * eps)
    assert action_gate_gradients(solution)[1, 0] == pytest.approx(-derivative, rel=1e-4)


# ------------------------------------------------------------------------------------------------ the primary verdicts


@pytest.mark.parametrize(
    "shift, outcomes, answer",
    [
        (0.3, (Outcome.HOLDS, Outcome.CONTRADICTED), "beats"),
        (0.0, (Outcome.NOT_SIGNIFICANT, Outcome.HOLDS), "matches"),
        (-0.3, (Outcome.CONTRADICTED, Outcome.CONTRADICTED), "loses"),
    ],
)
def test_the_primary_verdicts_have_power(shift, outcomes, answer):
    rng = np.random.default_rng(0)
    practical = 0.5 + 0.05 * rng.normal(size=20)
    theory = practical + shift + 0.03 * rng.normal(size=20)
    beats, matches = pr_claims.family_verdicts(
        "X",
        theory=theory,
        practical=practical,
        theory_choices=[["theory_loo"] * 4 + ["theory_action"]],
        practical_choices=[["fisher"] * 5],
        margin=0.1,
        level=0.05,
        num_tests=4,
    )
    assert (beats.outcome, matches.outcome) == outcomes
    assert pr_claims.primary_answer(beats, matches) == answer
    assert beats.correction == matches.correction == "Bonferroni over 4 tests"
    assert (beats.claim, matches.claim) == ("X-FB", "X-FE")
    # the statement says what each family chose, and how often (one choice per seed and split)
    assert "theory's leave-one-out change in 4 of 5 choices, theory's action change in 1 of 5 choices" in beats.measured
    assert "gate Fisher, joint (Kwon et al.) in 5 of 5 choices" in beats.measured


def test_the_primary_verdicts_are_undecided_with_too_few_seeds_and_check_their_input():
    rng = np.random.default_rng(1)
    arguments = dict(theory_choices=["theory"], practical_choices=["michel"], margin=0.1)
    beats, matches = pr_claims.family_verdicts(
        "X", theory=0.5 + 0.2 * rng.normal(size=3), practical=0.5 + 0.2 * rng.normal(size=3), num_tests=4, **arguments
    )
    assert pr_claims.primary_answer(beats, matches) == "undecided"
    with pytest.raises(ValueError, match="seeds"):
        pr_claims.family_verdicts("X", theory=[0.1], practical=[0.2], **arguments)


def test_the_choice_on_validation_takes_the_largest_mean():
    normalised = {"a": np.array([0.1, 0.2]), "b": np.array([0.5, np.nan]), "c": np.array([0.9, 0.9])}
    assert pr_claims.select_on_validation(normalised, ("a", "b")) == "b"
    assert pr_claims.select_on_validation(normalised, ("a", "b", "c")) == "c"
    with pytest.raises(ValueError, match="candidates"):
        pr_claims.select_on_validation(normalised, ("d",))


@pytest.mark.parametrize("heads", [(2, 2), (3, 2), (2, 3, 2)])
def test_the_distribution_over_random_orders_is_that_of_every_permutation(heads):
    """Every permutation of the heads equally likely: the chain's paths carry the same distribution of a curve's
    mean (compared at every value the permutations take), and its mean is the exact random expectation."""
    rng = np.random.default_rng(sum(heads))
    n = sum(heads)
    values = np.round(rng.random(2**n), 2)  # ties between orders are common, as with accuracies
    areas, probabilities = random_order_area_distribution(values, heads)
    assert probabilities.sum() == pytest.approx(1.0, abs=1e-12) and np.all(probabilities > 0)
    assert areas @ probabilities == pytest.approx(random_order_curve(values, heads)[1:].mean(), abs=1e-12)
    pairs = all_heads(heads)
    means = np.array(
        [subset_curve(values, pruning_sets(p, heads), heads)[1:].mean() for p in itertools.permutations(pairs)]
    )
    for x in np.unique(means):
        greater, smaller = random_order_p_values(x, areas, probabilities)
        assert greater == pytest.approx(np.mean(means >= x - 1e-12), abs=1e-12)
        assert smaller == pytest.approx(np.mean(means <= x + 1e-12), abs=1e-12)


def test_the_distribution_refuses_what_it_cannot_enumerate_and_what_has_nothing_to_prune():
    with pytest.raises(ValueError, match="Monte Carlo"):
        random_order_area_distribution(np.zeros(2**12), (4, 4, 4))
    with pytest.raises(ValueError, match="at least one head to prune"):
        random_order_area_distribution(np.zeros(4), (1, 1))
    with pytest.raises(ValueError, match="probabilities"):
        random_order_p_values(0.5, [0.1, 0.2], [1.0])


def test_curve_table_evaluates_every_set_that_keeps_a_head_per_layer():
    heads = (3, 2)
    calls = []

    class Evaluator:
        def __init__(self):
            self.heads = heads

        def __call__(self, pruned=()):
            calls.append(tuple(pruned))
            return 1.0 - 0.1 * len(pruned)

    table = curve_table(Evaluator())
    allowed = allowed_subsets(heads)
    assert len(calls) == allowed.sum() and len(set(calls)) == len(calls)
    np.testing.assert_array_equal(table[allowed], 1.0 - 0.1 * subset_masks(heads)[allowed].sum(axis=1))
    assert np.all(table[~allowed] == 0)
