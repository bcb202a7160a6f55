"""Theory-guided head pruning (attnpaths.pruning): the frozen views compute each model's attention and output
exactly, the rankings compute what they claim, and the pruning curves and the sweep are reproducible."""

import math

import numpy as np
import pytest
import torch
from helpers import assert_rounding_close

from attnpaths import rank_heads
from attnpaths.attention_stack import MultiheadAttentionStack, MultiheadStackModel
from attnpaths.experiments.head_pruning import all_heads, curve_auc, pruning_curve
from attnpaths.head_masks import HeadMaskEvaluator, pruning_mask
from attnpaths.head_models import attention_error, head_model
from attnpaths.head_scoring import head_scores, pruning_order
from attnpaths.paths import all_paths, path_features
from attnpaths.pruning import attention_entropy, gradient_head_importance, value_norms
from attnpaths.pruning.digits import digit_patches, held_out_splits, train_test_split
from attnpaths.pruning.exact import subset_outcomes, subset_table
from attnpaths.pruning.sweep import RANKINGS, pruning_sweep, run_seed, split_mean
from attnpaths.pruning.training import ModelTraining, train_model
from attnpaths.statistics import mean_interval
from attnpaths.theory import solve
from attnpaths.transformer import SumHeadModel, SumHeadTransformer

N0, T = 10, 7


def stack(seed=0, bias=False, heads=4, width=12, layers=2):
    model = MultiheadAttentionStack(
        N0, width, heads, layers, bias=bias, generator=torch.Generator().manual_seed(seed), dtype=torch.float64
    )
    if bias:  # non-zero biases, so that the test sees them
        g = torch.Generator().manual_seed(seed + 100)
        with torch.no_grad():
            for layer in model.layers:
                layer.in_proj_bias.copy_(torch.randn(layer.in_proj_bias.shape, generator=g, dtype=torch.float64))
                layer.out_proj.bias.copy_(torch.randn(layer.out_proj.bias.shape, generator=g, dtype=torch.float64))
    return model.eval()


def sum_heads(seed=0, heads=3):
    return SumHeadTransformer(N0, 8, 5, 2, heads, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def inputs(batch=6, seed=1):
    return torch.randn(batch, N0, T, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def module_attention(model, x):
    """Each layer's attention from the module itself (need_weights=True, per head), in the (key, query) convention,
    with the module's own outputs feeding the next layer."""
    h = model.embed(x.transpose(1, 2))
    out = []
    for layer in model.layers:
        h, weights = layer(h, h, h, need_weights=True, average_attn_weights=False)  # [B, H, T_query, T_key]
        out.append(weights.transpose(-1, -2))
    return out


# ------------------------------------------------------------------------------------------------ the views


@pytest.mark.parametrize("bias", [False, True])
def test_multihead_view_computes_the_modules_attention_and_output_to_1e_12(bias):
    model, x = stack(bias=bias), inputs()
    view = head_model(model)
    assert isinstance(view, MultiheadStackModel) and view.heads == (4, 4) and view.input_width == N0
    with torch.no_grad():
        expected = module_attention(model, x)
        ours = view.attention_weights(x.transpose(1, 2))  # [B, H, query, key]
        for a, b in zip(ours, expected):
            assert a.shape == (6, 4, T, T)
            assert (a - b.transpose(-1, -2)).abs().max() < 1e-12
            torch.testing.assert_close(a.sum(dim=-1), torch.ones(6, 4, T, dtype=torch.float64))
        assert (view.masked_output(x.transpose(1, 2)) - model(x)).abs().max() < 1e-12
    # the theory's form of the attention: the last layer averaged over queries
    assert_rounding_close(view.matrices(x)[-1], expected[-1].mean(dim=-1), what="last layer's readout")


def test_masking_a_multihead_head_is_zeroing_its_block_of_the_output_projection():
    model, x = stack(bias=True), inputs()
    view = head_model(model)
    pruned = [(0, 1), (1, 3), (1, 0)]
    d = 12 // 4
    with torch.no_grad():
        for l, h in pruned:
            model.layers[l].out_proj.weight[:, h * d : (h + 1) * d] = 0.0
        assert (view.masked_output(x.transpose(1, 2), pruning_mask(view.heads, pruned)) - model(x)).abs().max() < 1e-12
        # the pruned model's second-layer attention is recomputed from the pruned first layer
        masked = view.attention_weights(x.transpose(1, 2), pruning_mask(view.heads, pruned))
        for a, b in zip(masked, module_attention(model, x)):
            assert (a - b.transpose(-1, -2)).abs().max() < 1e-12


def test_sum_head_view_is_the_model_and_its_drop_heads_pruning():
    model, x = sum_heads(), inputs()
    view = head_model(model)
    assert isinstance(view, SumHeadModel) and view.heads == (3, 3)
    with torch.no_grad():
        omega = model.attention_matrices(x)
        for l, a in enumerate(view.attention_weights(x.transpose(1, 2))):
            assert (a - omega[:, l].transpose(-1, -2)).abs().max() < 1e-12
        assert (view.masked_output(x.transpose(1, 2)) - model(x)).abs().max() < 1e-12
        for pruned in ([(0, 0)], [(0, 2), (1, 1)], [(1, 0), (1, 2)]):
            rescaled = view.masked_output(x.transpose(1, 2), pruning_mask(view.heads, pruned, rescale=True))
            assert (rescaled - model(x, drop_heads=pruned)).abs().max() < 1e-12
    # its path features are those of the package's own Attention of the model
    # (two routes to the same attention: rounding on the features' scale)
    assert_rounding_close(path_features(x, view), path_features(x, model.attention()), what="path features")


@pytest.mark.parametrize("make", [stack, sum_heads])
def test_the_output_is_linear_in_the_last_layers_mask(make):
    view, x = head_model(make()), inputs()
    rng = np.random.default_rng(0)
    H = max(view.heads)
    for _ in range(3):
        mask = torch.as_tensor(rng.normal(size=(6, 2, H)))
        terms, offset = view.last_layer_terms(x.transpose(1, 2), mask)
        assert terms.shape == (6, H)
        expected = view.masked_output(x.transpose(1, 2), mask)
        assert (torch.einsum("bh,bh->b", terms, mask[:, -1]) + offset - expected).abs().max() < 1e-12


def test_the_frozen_multihead_stack_without_biases_is_a_sum_over_attention_paths():
    """f(x) = sum_pi e_pi . xi_pi(x) with the path features of the frozen attention (eq-path-features) and
    e_pi = (a^T W_o2^h2 W_v2^h2 W_o1^h1 W_v1^h1 E)^T (eq-path-form): the theory's network."""
    model, x = stack(bias=False), inputs()
    view = head_model(model)
    xi = path_features(x, view)  # [B, N0, paths]
    d = 12 // 4
    a = model.readout.weight.detach()[0]

    def head_map(layer, h):
        W_v = layer.in_proj_weight.detach()[24:][h * d : (h + 1) * d]
        return layer.out_proj.weight.detach()[:, h * d : (h + 1) * d] @ W_v

    weights = torch.stack(
        [
            a @ head_map(model.layers[1], h2) @ head_map(model.layers[0], h1) @ model.embed.weight.detach()
            for h1, h2 in all_paths(view.heads)
        ]
    )  # [paths, N0]
    torch.testing.assert_close(torch.einsum("pi,bip->b", weights, xi), model(x).detach(), rtol=1e-10, atol=1e-12)


def test_head_model_and_masks_refuse_what_they_cannot_read():
    with pytest.raises(ValueError, match="model must be"):
        head_model(torch.nn.Linear(3, 3))
    odd = stack()
    odd.layers[0] = torch.nn.MultiheadAttention(12, 4, add_zero_attn=True, batch_first=True, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"model.layers\[0\]"):
        head_model(odd)
    view = head_model(stack())
    with pytest.raises(ValueError, match="tokens must have shape"):
        view.masked_output(torch.zeros(2, T, N0 + 1))
    with pytest.raises(ValueError, match="mask must have shape"):
        view.masked_output(inputs().transpose(1, 2), torch.ones(3, 4))
    with pytest.raises(ValueError, match="pruned must hold 0-based"):
        pruning_mask((4, 4), [(2, 0)])
    with pytest.raises(ValueError, match="at least one head"):
        pruning_mask((2, 2), [(0, 0), (0, 1)], rescale=True)
    with pytest.raises(ValueError, match="width must be a multiple"):
        MultiheadAttentionStack(N0, 10, 4, generator=torch.Generator())


def test_the_stack_draws_its_weights_from_its_generator_and_leaves_the_global_state_alone():
    state = torch.random.get_rng_state()
    a, b = stack(seed=3), stack(seed=3)
    assert torch.equal(torch.random.get_rng_state(), state)  # determinism: the global generator's bytes, untouched
    for p, q in zip(a.parameters(), b.parameters()):
        assert torch.equal(p, q)  # determinism: the same initialisation from the same seed, twice
    assert not torch.equal(stack(seed=4).embed.weight, a.embed.weight)


# ------------------------------------------------------------------------------------------------ the rankings


def labelled(batch=40, seed=2):
    x = inputs(batch, seed)
    y = torch.sign(x[:, 0].mean(dim=1) + 1e-9)
    return x, y


@pytest.mark.parametrize("make", [stack, sum_heads])
def test_theory_ranking_is_the_head_score_of_the_minimiser_on_the_frozen_attention(make):
    model = make()
    x, y = labelled()
    ranking = rank_heads(model, x.transpose(1, 2), y, width=20, temperature=0.5)
    view = head_model(model)
    solution = solve(path_features(x, view), y, heads=view.heads, width=20, temperature=0.5)
    # determinism: the ranking computes these features, this solve and these head scores, the same way
    np.testing.assert_array_equal(ranking.U, solution.U)
    np.testing.assert_array_equal(ranking.head_scores, head_scores(solution.U, view.heads))
    # exact on any CPU: scores divided by the largest (x / x = 1); the temperature is the one given
    assert np.nanmax(ranking.head_scores) == 1.0 and ranking.temperature == 0.5
    assert sorted(ranking.pruning_order) == all_heads(view.heads)
    ordered = [ranking.head_scores[lh] for lh in ranking.pruning_order]
    assert ordered == sorted(ordered)


def test_theory_ranking_keeps_the_temperature_with_the_smallest_certified_action():
    model = stack()
    x, y = labelled()
    tokens = x.transpose(1, 2)
    ranking = rank_heads(model, tokens, y, width=20, temperature=[0.1, 0.5, 2.0])
    scan = ranking.scan
    assert scan["converged"].all()
    best = int(np.argmin(scan["action"]))
    assert ranking.temperature == scan["temperatures"][best]
    single = rank_heads(model, tokens, y, width=20, temperature=float(scan["temperatures"][best]))
    # the scan starts each temperature from the minimum of the one before, the single solve from the GP values:
    # the same minimum, reached along another path of Newton steps (rounding apart)
    np.testing.assert_allclose(single.head_scores, ranking.head_scores, rtol=1e-10)
    # exact on any CPU: the scan's row, selected
    np.testing.assert_array_equal(scan["head_scores"][best], ranking.head_scores)
    with pytest.raises(ValueError, match="temperature"):
        rank_heads(model, tokens, y, width=20, temperature=[0.5, 0.1])
    with pytest.raises(ValueError, match="temperature"):
        rank_heads(model, tokens, y, width=20, temperature="0.5")


@pytest.mark.parametrize("make", [stack, sum_heads])
def test_gradient_importance_is_the_mean_absolute_mask_gradient_normalised_per_layer(make):
    view = head_model(make(bias=True) if make is stack else make())
    x, y = labelled(12)
    raw = gradient_head_importance(view, x.transpose(1, 2), y, normalize=False, batch_size=5)
    # central finite differences of each example's loss in each head's mask variable
    eps = 1e-6
    expected = np.zeros_like(raw)
    with torch.no_grad():
        for l, h in all_heads(view.heads):
            step = torch.zeros(2, max(view.heads), dtype=torch.float64)
            step[l, h] = eps
            plus = (view.masked_output(x.transpose(1, 2), 1 + step) - y) ** 2
            minus = (view.masked_output(x.transpose(1, 2), 1 - step) - y) ** 2
            expected[l, h] = ((plus - minus) / (2 * eps)).abs().mean()
    np.testing.assert_allclose(raw, expected, rtol=1e-6, atol=1e-9)
    normalised = gradient_head_importance(view, x.transpose(1, 2), y)
    np.testing.assert_allclose(np.linalg.norm(normalised, axis=1), 1.0)
    np.testing.assert_allclose(normalised * np.linalg.norm(raw, axis=1, keepdims=True), raw)


def test_entropy_is_log_T_for_uniform_attention_and_smaller_otherwise():
    model = sum_heads()
    with torch.no_grad():
        model.queries[0] = 0.0  # layer 1 attends uniformly
    entropy = attention_entropy(model, inputs().transpose(1, 2))
    assert_rounding_close(entropy[0], math.log(T), what="entropy of uniform attention")  # against the closed form
    assert (entropy[1] < math.log(T)).all() and (entropy[1] > 0).all()


def test_value_norms_and_orders():
    model = sum_heads()
    np.testing.assert_allclose(value_norms(model), torch.linalg.matrix_norm(model.values.detach()).numpy())
    norms = value_norms(stack())
    assert norms.shape == (2, 4) and (norms > 0).all()
    scores = np.array([[0.3, 0.1, 0.2], [0.5, 0.0, 0.4]])
    assert pruning_order(scores) == [(1, 1), (0, 1), (0, 2), (0, 0), (1, 2), (1, 0)]
    assert pruning_order(scores, prune_first="highest") == [(1, 0), (1, 2), (0, 0), (0, 2), (0, 1), (1, 1)]
    with pytest.raises(ValueError, match="prune_first"):
        pruning_order(scores, prune_first="middle")


# ------------------------------------------------------------------------------------------------ data and training


@pytest.mark.needs("tasks")
def test_digit_patches_are_the_images_cut_into_positioned_patches():
    from sklearn.datasets import load_digits

    data = digit_patches(2, positive_digits=(7, 5))
    assert data.x.shape == (1797, 4 + 16, 16) and data.positive_digits == (5, 7)
    images = load_digits().images / 16.0
    # token t = row-major patch (t // 4, t % 4): its 2x2 pixels, then one-hot position t
    for t in (0, 5, 15):  # exact on any CPU: copies of the same pixels (images / 16, one division) and a one-hot code
        r, c = divmod(t, 4)
        np.testing.assert_array_equal(
            data.x[:, :4, t].numpy(), images[:, 2 * r : 2 * r + 2, 2 * c : 2 * c + 2].reshape(-1, 4)
        )
        np.testing.assert_array_equal(data.x[:, 4:, t].numpy(), np.broadcast_to(np.eye(16)[t], (1797, 16)))
    np.testing.assert_array_equal(data.y.numpy() > 0, np.isin(data.digits, (5, 7)))
    assert digit_patches(4).x.shape == (1797, 16 + 4, 4)
    train, test = train_test_split(data, 97, np.random.default_rng(0))
    assert len(train) == 1700 and len(test) == 97
    # the two parts are the whole data set, each image once
    both = torch.cat([train.x, test.x]).reshape(1797, -1).numpy()  # exact on any CPU: a permutation of the rows
    np.testing.assert_array_equal(
        np.sort(both.view([("", both.dtype)] * both.shape[1]).ravel(), axis=0),
        np.sort(data.x.reshape(1797, -1).numpy().view([("", both.dtype)] * both.shape[1]).ravel(), axis=0),
    )
    with pytest.raises(ValueError, match="patch_size"):
        digit_patches(3)
    with pytest.raises(ValueError, match="positive_digits"):
        digit_patches(2, positive_digits=range(10))
    with pytest.raises(ValueError, match="num_test"):
        train_test_split(data, 1797, np.random.default_rng(0))


@pytest.fixture(scope="module")
def small_split():
    data = digit_patches(4, positive_digits=(0,))
    return train_test_split(data, 300, np.random.default_rng(0))


@pytest.mark.needs("tasks")
@pytest.mark.parametrize("architecture", ["multihead", "sum_heads"])
def test_training_is_reproducible_and_learns(small_split, architecture):
    train, test = small_split
    config = ModelTraining(
        architecture=architecture, width=8, qk_width=4, num_heads=2, steps=150, batch_size=64, learning_rate=1e-2
    )
    a, history = train_model(config, train, 5)
    b, _ = train_model(config, train, 5)
    for p, q in zip(a.parameters(), b.parameters()):
        assert torch.equal(p, q)  # determinism: the same training from the same seed, twice
    assert history["loss"][-10:].mean() < history["loss"][:10].mean()
    # 0 vs the other digits: far better than always answering "not 0" (90 %)
    assert HeadMaskEvaluator(a, test.x.transpose(1, 2), test.y)() > 0.97
    with pytest.raises(ValueError, match="architecture"):
        ModelTraining(architecture="lstm")
    with pytest.raises(ValueError, match="seed"):
        train_model(config, train, -1)


# ------------------------------------------------------------------------------------------------ pruning curves


def test_evaluator_curves_and_areas():
    view = head_model(stack())
    x, y = labelled(30)
    evaluator = HeadMaskEvaluator(view, x.transpose(1, 2), y)
    for pruned in ([], [(1, 2)], [(0, 0), (1, 1), (1, 3)]):
        with torch.no_grad():
            direct = view.masked_output(x.transpose(1, 2), pruning_mask(view.heads, pruned)).numpy()
        # the evaluator's cached layer inputs against a masked forward pass: rounding on the outputs' scale
        assert_rounding_close(evaluator.outputs(pruned), direct, what=f"outputs with {pruned} pruned")
        # exact on any CPU: accuracies are counts over 30 examples (no output lies within rounding of zero)
        assert evaluator(pruned) == np.mean(np.sign(direct) == y.numpy())
    curve = pruning_curve(evaluator, pruning_order(value_norms(view)))
    assert curve.shape == (7,) and curve[0] == evaluator()  # determinism: the evaluator of the unpruned model
    assert curve_auc(np.full(7, 0.8)) == pytest.approx(0.8)
    assert curve_auc([1.0, 0.5, 0.0]) == pytest.approx(0.5)
    np.testing.assert_allclose(curve_auc(np.array([[1.0, 0.0], [0.5, 0.5]])), [0.5, 0.5])
    with pytest.raises(ValueError, match="curves"):
        curve_auc([0.7])
    # three layers: every layer's input is kept per set of heads pruned before it
    deep = head_model(stack(layers=3))
    evaluator = HeadMaskEvaluator(deep, x.transpose(1, 2), y)
    for pruned in ([(0, 1), (2, 0)], [(1, 3), (0, 1)], [(0, 2), (1, 0), (1, 1), (2, 3)]):
        with torch.no_grad():
            direct = deep.masked_output(x.transpose(1, 2), pruning_mask(deep.heads, pruned)).numpy()
        assert_rounding_close(evaluator.outputs(pruned), direct, what=f"outputs with {pruned} pruned")  # as above


def test_mean_interval_is_students_t():
    values = np.array([1.0, 2.0, 3.0, 4.0])
    interval = mean_interval(values, 0.95)
    half = 3.182446305284263 * values.std(ddof=1) / 2  # t_{3, 0.975}
    assert interval["mean"] == 2.5 and interval["low"] == pytest.approx(2.5 - half)
    with pytest.raises(ValueError, match="replicates"):
        mean_interval([1.0])


def test_held_out_splits_are_seeded_streams_of_the_stated_sizes():
    masks = held_out_splits(50, 20, 7, 4)
    assert masks.shape == (4, 50) and masks.dtype == bool and (masks.sum(axis=1) == 20).all()
    assert len({m.tobytes() for m in masks}) == 4  # four different splits
    np.testing.assert_array_equal(held_out_splits(50, 20, 7, 2), masks[:2])  # a split is its own stream
    assert not np.array_equal(held_out_splits(50, 20, 8, 1)[0], masks[0])
    with pytest.raises(ValueError, match="num_validation"):
        held_out_splits(50, 50, 7, 2)
    with pytest.raises(ValueError, match="num_splits"):
        held_out_splits(50, 20, 7, 0)


@pytest.mark.needs("tasks")
def test_a_split_table_is_the_table_of_its_images(small_split):
    """The table of a split read from the per-image outcomes is the table evaluated on that split's images."""
    train, held_out = small_split
    model, _ = train_model(ModelTraining(width=8, num_heads=2, steps=10, batch_size=32), train, 2)
    mask = held_out_splits(len(held_out), 100, 0, 1)[0]
    outcomes = subset_outcomes(model, held_out.x, held_out.y)
    table = outcomes.table({"validation": mask, "test": ~mask})
    index = np.arange(len(held_out))
    direct = subset_table(
        model,
        {
            "validation": (held_out.x[index[mask]], held_out.y[index[mask]]),
            "test": (held_out.x[index[~mask]], held_out.y[index[~mask]]),
        },
    )
    for split in ("validation", "test"):
        np.testing.assert_allclose(table.accuracy[split], direct.accuracy[split], rtol=0, atol=1e-12)
        np.testing.assert_allclose(table.loss[split], direct.loss[split], rtol=1e-12)
    with pytest.raises(ValueError, match="bool mask"):
        outcomes.table({"test": np.zeros(len(held_out), dtype=bool)})


@pytest.mark.needs("tasks")
def test_sweep_is_one_task_per_seed_and_reproducible(small_split):
    train, held_out = small_split
    masks = held_out_splits(len(held_out), 100, 1, 3)
    config = ModelTraining(width=8, num_heads=2, steps=20, batch_size=32)
    arguments = dict(
        seed=3,
        train=train,
        held_out=held_out,
        validation_masks=masks,
        training=config,
        theory_width=10,
        theory_examples=60,
        sensitivity_widths=[40],
    )
    sweep = pruning_sweep(num_seeds=2, temperatures=[0.1, 1.0], progress=False, **arguments)
    n = len(RANKINGS)
    assert sweep.curves["test"].shape == (2, 3, n, 3) and sweep.curves["validation"].shape == (2, 3, n, 3)
    assert sweep.num_splits == 3 and sweep.held_out["best"].shape == (2, 3)
    assert sweep.theory_scan["curves"].shape == (2, 2, 2, 3) and sweep.width_scan["curves"].shape == (2, 1, 2, 3)
    single = run_seed(1, temperatures=[0.1, 1.0], **arguments)
    for split in ("validation", "test"):  # determinism: the sweep's task for seed 1 is this run_seed call
        np.testing.assert_array_equal(single["curves"][split], sweep.curves[split][1])
        np.testing.assert_array_equal(single["best"][split], sweep.best[split][1])
    auc = sweep.auc()
    assert set(auc) == set(RANKINGS) | {"random", "best"} and auc["michel"].shape == (2, 3)
    # no ranking passes the ceiling, and the ceiling is 1 in normalised area
    assert all((auc[name] <= auc["best"] + 1e-12).all() for name in RANKINGS)
    normalised = sweep.normalised_auc("validation")
    np.testing.assert_allclose(normalised["best"][~np.isnan(normalised["best"])], 1.0)
    # a ranking that does not depend on the split is one order, its curves differ only by the images judged
    fixed = RANKINGS.index("michel")
    for r in range(3):
        mask = masks[r]
        test_images = mask.size - mask.sum()
        valid = sweep.curves["validation"][:, r, fixed] * mask.sum()
        np.testing.assert_allclose(
            (valid + sweep.curves["test"][:, r, fixed] * test_images)[:, 0] / mask.size, sweep.base_accuracy
        )
    np.testing.assert_allclose(split_mean(auc)["michel"], auc["michel"].mean(axis=1))
    # every ranking's cost is timed, and those that need the theory's minimum include its solve
    assert set(sweep.cost_seconds) == {*RANKINGS, "table"}
    assert (sweep.cost_seconds["theory_removal"] >= sweep.cost_seconds["theory"]).all()
    assert (sweep.cost_seconds["shapley"] >= sweep.cost_seconds["table"]).all()
    assert len(sweep.order_labels("greedy")[0]) == 3 and len(sweep.order_labels("michel")[0]) == 4
    with pytest.raises(ValueError, match="theory_examples"):
        pruning_sweep(num_seeds=2, temperatures=[0.1], **{**arguments, "theory_examples": len(train)})
    with pytest.raises(ValueError, match="temperatures"):
        pruning_sweep(num_seeds=2, temperatures=[1.0, 0.1], **arguments)
    with pytest.raises(ValueError, match="validation_masks"):
        run_seed(0, temperatures=[0.1], **{**arguments, "validation_masks": masks[:, :10]})


@pytest.mark.parametrize("make", [stack, sum_heads])
def test_attention_error_measures_the_views_agreement_with_the_model(make):
    model = make().float()
    x = inputs()
    assert attention_error(model, x) < 1e-12  # the view copies the float32 weights exactly into float64
    frozen = head_model(model)
    with torch.no_grad():  # the model changes after its view was taken: the view no longer computes its attention
        (model.layers[0].in_proj_weight if make is stack else model.queries).mul_(1.5)
    assert attention_error(model, x) < 1e-12
    assert attention_error(model, x, view=frozen) > 1e-3


@pytest.mark.needs("tasks")
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_training_on_the_gpu_matches_the_cpu_up_to_float32_rounding(small_split):
    train, _ = small_split
    config = ModelTraining(width=8, num_heads=2, steps=20, batch_size=32)
    cpu, _ = train_model(config, train, 4)
    gpu, _ = train_model(config, train, 4, device="cuda")
    for p, q in zip(cpu.parameters(), gpu.parameters()):
        assert q.device.type == "cpu"
        torch.testing.assert_close(p, q, rtol=1e-3, atol=1e-4)


@pytest.mark.needs("tasks")
def test_training_refuses_a_device_it_cannot_use(small_split):
    train, _ = small_split
    with pytest.raises(ValueError, match="device"):
        train_model(ModelTraining(steps=1), train, 0, device="tpu")
