"""What the library's test modules share: the statistical thresholds, the rounding comparison of two code paths,
small random problems and networks. Standard library, numpy, scipy, torch and the library only: nothing of the
book's companion, so that ``pip install .`` runs these tests. Test modules import from here, never from one
another or from ``conftest``; the book's tests add ``book_helpers``."""

from __future__ import annotations

import math
import sys
import textwrap
from pathlib import Path

import numpy as np
import torch
from scipy import stats

from attnpaths.attention import Attention, AttentionLayer
from attnpaths.claims import Outcome, Verdict, bonferroni_z
from attnpaths.engine import IN_PROCESS, Engine
from attnpaths.hmc import HMCTask
from attnpaths.network import AttentionNetwork, NetworkWeights
from attnpaths.sampler import PosteriorSampler

ROOT = Path(__file__).resolve().parents[2]
"""The repository root."""

IN_THIS_PROCESS = Engine(IN_PROCESS, None, 1, None)
"""The engine that runs every task in this process, one after another."""
SMALL_TASK = HMCTask(seq_len=5, feature_width=8)
"""A small HMC task: N0 = 14, so D = 56 with the four paths."""

BOOK_MODULES = (
    "attnpaths_book",
    "yaml",
    "jupytext",
    "papermill",
    "nbformat",
    "nbclient",
    "myst_nb",
    "nbval",
    "jupyter_book",
    "sphinx",
    "selenium",
    "IPython",
)
"""The book's companion and what ``pip install .`` (without the book extra) does not install."""


def hiding_modules(modules) -> str:
    """Python source that, run first in a fresh interpreter, makes the top-level ``modules`` unimportable there (an
    import raises ImportError, as where they are not installed) and forgets those already imported."""
    return textwrap.dedent(f"""
        import importlib.abc, sys
        class Hidden(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {tuple(modules)!r}:
                    raise ImportError(f"{{name}} is hidden: not installed")
        sys.meta_path.insert(0, Hidden())
        for name in list(sys.modules):
            if name.split(".")[0] in {tuple(modules)!r}:
                del sys.modules[name]
    """)


# --------------------------------------------------------------------------------------------------------
# statistical thresholds

Z_MAX = 4.0
"""z bound of one Monte-Carlo comparison (one entry): a two-sided normal tail of 6.3e-5, so a file with a
handful of such checks stays well below a 1e-3 false-alarm rate, while the errors they guard against
(factors of H or N, swapped classes, a wrong normalisation) sit at tens of standard errors."""

ALPHA = 1e-4
"""False-alarm rate (p-value threshold) of one statistical test that gives a p-value (KS, chi-square)."""


def family_z(num_entries: int, family_alpha: float = 0.01) -> float:
    """Two-sided Bonferroni z bound that keeps the family-wise false-alarm rate of ``num_entries``
    comparisons at ``family_alpha``."""
    return bonferroni_z(num_entries, family_alpha)


# --------------------------------------------------------------------------------------------------------
# rounding: one result computed along two different code paths

CODE_PATH_RTOL = 1e-12
"""Relative tolerance of a well-conditioned float64 result computed along two different code paths: ~4500 units
in the last place, what a few thousand roundings of 1.1e-16 can add up to, and still a million times smaller than
any real error (a factor, a transpose, a wrong sign or a missing term moves a result by a fraction of itself)."""

FLOAT32_CODE_PATH_RTOL = 1e-5
"""The same for float32 (unit roundoff 6e-8): ~170 units in the last place, sums of some hundred terms."""


def _rounding_array(value) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        return value.numpy() if value.dtype != torch.bfloat16 else value.double().numpy()
    return np.asarray(value)


def assert_rounding_close(actual, expected, *, scale=None, rtol=None, what=""):
    """Assert that ``actual`` and ``expected``, one quantity computed along two *different* code paths (two
    functions, two algorithms, a closed form against a computed value, ``matmul`` against ``einsum``), agree up to
    floating-point rounding: ``|actual - expected| <= rtol * (|expected| + scale)`` entry by entry, with the same
    shape (``expected`` may be a scalar) and, for two tensors, the same dtype.

    Why not bit for bit: another summation order, another vectorisation width (the SSE / AVX2 / AVX-512 kernels
    that BLAS and numpy pick for the CPU at hand) or fused multiply-adds move the last bits of a result, by ~1e-16
    relative per operation (on an AMD CPU, 30 % of the entries of the path features of a frozen attention
    differ by up to 8.9e-16 between two routes that agree exactly on an Intel one). Exact equality is for
    determinism checks (the same code computing the same thing twice) and for results that are exact in floating
    point on any CPU; those say so in a ``# determinism:`` or ``# exact on any CPU:`` comment.

    Args:
        actual, expected: numbers, numpy arrays or tensors.
        scale: the magnitude of the terms that an entry is computed from; default the largest ``|expected|``. A
            well-conditioned result needs no more; an entry that is (nearly) zero, or a difference of nearly
            equal numbers, carries the rounding of its terms, not of itself: then the default scale (the array's
            largest entry) or an explicit one (the terms' size) gives it an absolute tolerance.
        rtol: default :data:`CODE_PATH_RTOL` for float64, :data:`FLOAT32_CODE_PATH_RTOL` when either side is
            float32 (or lower). Pass a larger one only for an ill-conditioned result (a Hessian through solves, a
            minimiser), and say why at the call.
        what: names the quantity in the error message.
    """
    a, e = _rounding_array(actual), _rounding_array(expected)
    if isinstance(actual, torch.Tensor) and isinstance(expected, torch.Tensor):
        assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} against {expected.dtype}"
    if e.ndim:
        assert a.shape == e.shape, f"{what}: shape {a.shape} against {e.shape}"
    if rtol is None:
        single = any(np.issubdtype(v.dtype, np.floating) and np.finfo(v.dtype).eps > 1e-10 for v in (a, e))
        rtol = FLOAT32_CODE_PATH_RTOL if single else CODE_PATH_RTOL
    if scale is None:
        finite = np.abs(e[np.isfinite(e)]).astype(np.float64)
        scale = float(finite.max()) if finite.size else 0.0
    np.testing.assert_allclose(
        a.astype(np.float64),
        e.astype(np.float64),
        rtol=rtol,
        atol=rtol * float(scale),
        err_msg=f"{what} (rounding tolerance rtol={rtol:g}, scale={float(scale):.3g})",
    )


# --------------------------------------------------------------------------------------------------------
# random problems, attention and inputs


def random_problem(P=24, n0=6, heads=(2, 2), seed=0, signal=1.5):
    """Path features ``[P, n0, n_paths]`` with class-dependent structure and labels ``+-1`` (class-sorted)."""
    g = torch.Generator().manual_seed(seed)
    n_paths = 1
    for h in heads:
        n_paths *= h
    y = torch.cat([torch.ones(P // 2), -torch.ones(P - P // 2)]).to(torch.float64)
    xi = torch.randn(P, n0, n_paths, generator=g, dtype=torch.float64)
    xi[:, 0, 0] += signal * y  # path 0 carries the label
    if n_paths > 1:
        xi[:, :, 1] += 0.8 * xi[:, :, 0]  # path 1 is correlated with path 0
    return xi, y


def random_spd(n, seed, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    A = torch.randn(n, n, generator=g, dtype=torch.float64)
    return scale * (A @ A.T / n + torch.eye(n, dtype=torch.float64))


def random_attention(generator, heads, input_width, readout="last_token", *, divisor=None):
    """Attention with random bilinear (W-form) heads, ``W ~ N(0, 1) / divisor``; the default ``divisor = N0`` keeps
    the scores O(1), so the softmax is neither flat nor one-hot."""
    divisor = input_width if divisor is None else divisor
    layers = tuple(
        AttentionLayer(W=torch.randn(H, input_width, input_width, generator=generator, dtype=torch.float64) / divisor)
        for H in heads
    )
    return Attention(layers, readout)


def multihead_stack(seed=0, B=120, T=5, D=6, H=2, L=2):
    """A stack of ``L`` ``torch.nn.MultiheadAttention`` layers (``H`` heads, no biases) on random tokens: returns
    the layers, the tokens ``[B, T, D]``, each layer's attention ``[B, H, T, T]`` (batch, head, query, key) and
    the +-1 targets (the sign of one feature's mean). The layers' initial weights come from ``seed``; the
    global generator is left as it was."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        layers = [torch.nn.MultiheadAttention(D, H, batch_first=True, bias=False) for _ in range(L)]
        tokens = torch.randn(B, T, D)
    attention, h = [], tokens
    with torch.no_grad():
        for layer in layers:
            h, weights = layer(h, h, h, need_weights=True, average_attn_weights=False)
            attention.append(weights)
    return layers, tokens, attention, torch.sign(tokens[:, :, 0].mean(dim=1))


def random_inputs(generator, num, input_width, num_tokens):
    return torch.randn(num, input_width, num_tokens, generator=generator, dtype=torch.float64)


# --------------------------------------------------------------------------------------------------------
# the sampler's checks: tests/library/test_sampler.py (two layers), tests/library/test_sampler_depth.py (deeper)


def sampler_problem(
    seed=0, heads=(2, 2), widths=(2, 3, 2), variances=(0.5, 1.5, 0.8, 2.0), num_examples=6, input_width=4, num_tokens=3
):
    """A tiny network with random attention (``heads`` per layer; ``widths`` and ``variances`` as
    :class:`~attnpaths.network.AttentionNetwork` takes them), random inputs ``x`` ``[num_examples, input_width,
    num_tokens]``, class-sorted labels ``+-1`` and the generator that drew them (for further draws)."""
    g = torch.Generator().manual_seed(seed)
    network = AttentionNetwork(random_attention(g, heads, input_width), width=widths, variances=variances)
    x = random_inputs(g, num_examples, input_width, num_tokens)
    y = torch.cat([torch.ones(num_examples // 2), -torch.ones(num_examples - num_examples // 2)]).double()
    return network, x, y, g


def sampled_point(width, U, *, accuracy=0.9, se=0.05, diagnostics=None):
    """A :class:`~attnpaths.experiments.sampling.SampledPoint` at ``width`` whose sampled order parameter is ``U``
    (standard error ``se`` per entry, 100 effective draws): the fields that no claim or table reads are fixed
    stand-ins (three test points of predictor mean 1); ``diagnostics`` by default two chains of 1 s."""
    from attnpaths.experiments.sampling import SampledPoint

    return SampledPoint(
        width=width,
        accuracy=accuracy,
        accuracy_mc_sd=0.01,
        mean=np.ones(3),
        mean_se=np.full(3, 0.1),
        sd=np.ones(3),
        kernel_mean=np.ones(3),
        U=U,
        U_se=np.full_like(U, se),
        U_sd=np.full_like(U, 0.5),
        U_ess=np.full_like(U, 100.0),
        diagnostics={"wall_time_s": 1.0, "num_chains": 2} if diagnostics is None else diagnostics,
    )


def sampled_curve_point(data, width, temperature, *, sweep_widths, num_samples, exact_chain):
    """The theory and the samples at one point of a small problem's curve (``data``, a
    :class:`~attnpaths.experiments.path_data.PathData`): the theory's sweep over ``sweep_widths`` at
    ``temperature``, two chains of the network's posterior at ``width`` (100 warm-up draws, ``num_samples`` kept,
    seed 1) and 32 chains of the exact density of U there (``exact_chain``: their ``num_warmup``, ``num_samples``
    and ``thin``; seed 2). Returns ``(curve, point, exact)``."""
    from attnpaths.experiments import sampling
    from attnpaths.experiments.sweep import theory_sweep

    curve = theory_sweep(data, sweep_widths, [temperature], progress=False)
    at = (data, width, temperature)
    point = sampling.sample_posterior(
        *at, torch.Generator().manual_seed(1), num_warmup=100, num_samples=num_samples, num_chains=2, progress=False
    )
    exact = sampling.exact_order_parameter(
        *at, torch.Generator().manual_seed(2), num_chains=32, **exact_chain, progress=False
    )
    return curve, point, exact


def design_matrix(network, x, weights, block):
    """``Phi[mu, j]``: the output on ``x^mu`` with ``block`` set to the j-th unit tensor (f is linear in it),
    computed by the layer-by-layer forward (eq-forward), independently of the sampler."""
    tensors = weights.as_dict()
    shape = tensors[block].shape
    columns = []
    for j in range(tensors[block].numel()):
        unit = torch.zeros(tensors[block].numel(), dtype=torch.float64)
        unit[j] = 1.0
        changed = dict(tensors, **{block: unit.reshape(shape)})
        values = list(changed.values())
        columns.append(network.forward(x, NetworkWeights(values[0], tuple(values[1:-1]), values[-1])))
    return torch.stack(columns, dim=1)


def gaussian_mismatch(draws, mean, cov):
    """chi-square statistics (and their degrees of freedom) of draws ``[M, d]`` against ``N(mean, cov)``.

    After whitening, ``M |mean z|^2 ~ chi2(d)`` and ``(M/2) |cov z - I|_F^2 ~ chi2(d(d+1)/2)`` for large M.
    """
    M, d = draws.shape
    chol = torch.linalg.cholesky(cov)
    z = torch.linalg.solve_triangular(chol, (draws - mean).T, upper=False).T
    mean_stat = M * (z.mean(0) ** 2).sum().item()
    cov_stat = M / 2 * ((torch.cov(z.T, correction=0) - torch.eye(d, dtype=torch.float64)) ** 2).sum().item()
    return (mean_stat, d), (cov_stat, d * (d + 1) // 2)


def rejects(statistics):
    """Whether any ``(statistic, degrees of freedom)`` pair exceeds its chi-square quantile at :data:`ALPHA`."""
    return any(stat > stats.chi2.ppf(1 - ALPHA, df) for stat, df in statistics)


def conditional_draw_mismatch(network, x, y, generator, block, temperature, num_draws=20000):
    """Draw ``block`` ``num_draws`` times from :meth:`PosteriorSampler.conditional_draw` given one prior draw
    of the other blocks (which must come back untouched) and compare the draws with the closed-form Gaussian
    conditional of Bayesian linear regression (prior ``N(0, s I)``, ``y ~ N(Phi w, T I)``, ``Phi`` from
    :func:`design_matrix`).

    Returns:
        ``(statistics at temperature T, statistics against the conditional at 2 T)``, each as
        :func:`gaussian_mismatch` gives them (:func:`rejects` decides).
    """
    sampler = PosteriorSampler(network, y, temperature, x=x)
    fixed = network.sample_prior(generator)
    copies = NetworkWeights(
        fixed.V0.expand(num_draws, *fixed.V0.shape),
        tuple(v.expand(num_draws, *v.shape) for v in fixed.V),
        fixed.a.expand(num_draws, *fixed.a.shape),
    )
    new = sampler.conditional_draw(block, copies, generator)
    for name, tensor in new.as_dict().items():  # the other blocks are untouched (exact on any CPU: copies or views)
        if name != block:
            assert torch.equal(tensor, copies.as_dict()[name]), f"conditional_draw({block!r}) changed {name}"
    draws = new.as_dict()[block].reshape(num_draws, -1)
    phi = design_matrix(network, x, fixed, block)
    s = network.variances[list(network.weight_shapes()).index(block)]

    def posterior(T):
        precision = torch.eye(phi.shape[1], dtype=torch.float64) / s + phi.T @ phi / T
        cov = torch.linalg.inv(precision)
        return cov @ phi.T @ y / T, cov

    return gaussian_mismatch(draws, *posterior(temperature)), gaussian_mismatch(draws, *posterior(2 * temperature))


def ks_pvalues(samples_a, samples_b, ess_a, ess_b):
    """Two-sample KS p-values per column of ``[S, B]`` samples, with the effective sample sizes in
    place of the (autocorrelated) draw counts (asymptotic Kolmogorov distribution)."""
    pvalues = []
    for j in range(samples_a.shape[1]):
        d = stats.ks_2samp(samples_a[:, j].numpy(), samples_b[:, j].numpy()).statistic
        n_eff = 1 / (1 / ess_a[j].item() + 1 / ess_b[j].item())
        pvalues.append(stats.kstwobign.sf(d * math.sqrt(n_eff)))
    return torch.tensor(pvalues)


def gibbs_against_nuts_pvalues(
    network, x, y, features, nuts, temperature, variance, *, seed=2, num_warmup=50, num_samples=500, num_chains=4
):
    """KS p-values (:func:`ks_pvalues`) of ``f`` on ``features`` between NUTS samples ``nuts`` of ``network``'s
    posterior and blocked-Gibbs samples of the same attention with prior variance ``variance`` at
    ``temperature`` (a wrong posterior when these differ from the NUTS run's). Asserts that both runs carry
    enough effective samples for the comparison to mean something."""
    gibbs_network = AttentionNetwork(network.attention, network.widths, variance)
    sampler = PosteriorSampler(gibbs_network, y, temperature, x=x)
    gibbs = sampler.run(
        torch.Generator().manual_seed(seed), num_warmup, num_samples, num_chains=num_chains, progress=False
    )
    nuts_ess = nuts.diagnostics(features)["predictor_ess"]
    gibbs_diagnostics = gibbs.diagnostics(features)
    assert nuts_ess.min() > 100, "too few effective NUTS samples for a meaningful comparison"
    assert gibbs_diagnostics["max_predictor_rhat"] < 1.01
    return ks_pvalues(
        gibbs.predictor_samples(features).flatten(0, 1),
        nuts.predictor_samples(features).flatten(0, 1),
        gibbs_diagnostics["predictor_ess"],
        nuts_ess,
    )


def send_by_value(module_name: str) -> None:
    """Let the chunk generators and tasks defined in the test module ``module_name`` travel to Dask's workers by
    value (the workers cannot import a test module). Without the engine extra (no cloudpickle) no test starts a
    cluster, and nothing is to be done."""
    try:
        import cloudpickle
    except ImportError:
        return
    cloudpickle.register_pickle_by_value(sys.modules[module_name])


def assert_bad_chunk_arguments_are_refused(make_chunks) -> None:
    """``make_chunks(**fields)``: a chunk generator of 4 chunks with its default fields, ``fields`` replaced. A
    chunk index out of range or not an integer, and each bad field shared by the generators, raise a ValueError
    that names it."""
    import pytest

    chunks = make_chunks()
    for k in (-1, 4, 1.0, True):
        with pytest.raises(ValueError, match=r"k must be a chunk index, an integer in \[0, 4\)"):
            chunks(k)
    for fields, match in (
        (dict(chunk_size=7), r"chunk_size \(even\) must be an even integer >= 2, got 7"),
        (dict(num_examples=31), r"num_examples \(P, even\) must be an even integer >= 2"),
        (dict(seed=-1), r"seed must be an integer >= 0, got -1"),
        (dict(stream=-2), r"stream must be an integer >= 0, got -2"),
        (dict(factored_features=1), r"factored_features must be True or False, got 1"),
    ):
        with pytest.raises(ValueError, match=match):
            make_chunks(**fields)


def assert_chunks_do_not_depend_on_their_order(make_chunks):
    """``make_chunks()``: a fresh chunk generator of 30 examples in chunks of 8. Chunk 2 is the same, bit for bit,
    made first, after chunks 0 and 1 (by another generator), after chunk 3 (backwards) and by a pickled copy; the
    last chunk holds 6 examples, and each chunk is class-sorted. Returns the generator, chunk 2 made first
    ``(features, y)`` and the chunks made in order."""
    import pickle

    chunks = make_chunks()
    assert chunks.num_chunks == 4 and [chunks.chunk_examples(k) for k in range(4)] == [8, 8, 8, 6]
    alone = chunks(2)  # chunk 2 first, in a fresh generator: nothing made before
    in_order = [make_chunks()(k) for k in range(4)]
    backwards = {k: chunks(k) for k in (3, 2, 1, 0)}
    shipped = pickle.loads(pickle.dumps(chunks))(2)
    for found in (in_order[2], backwards[2], shipped):
        assert torch.equal(found[0], alone[0]) and torch.equal(found[1], alone[1])
    assert alone[1].tolist() == [1.0] * 4 + [-1.0] * 4  # class-sorted within the chunk
    assert in_order[3][0].shape[0] == 6
    return chunks, alone, in_order


def assert_streamed_solve_equals_the_whole_set(chunks, widths, rtol: float):
    """Stream ``chunks`` (a chunk generator, ``chunks(k) = (features, y)``) into Gram statistics in this process and
    solve from them: the same certified minimum as the dense feature route on the concatenated chunks, ``U`` and
    action within ``rtol`` (the caller's reason: rounding of sums grouped differently, times the conditioning).
    Returns the statistics."""
    import pytest

    from attnpaths.streaming import gram_statistics
    from attnpaths.theory import solve, solve_from_statistics

    statistics = gram_statistics(chunks, chunks.num_chunks, engine=IN_THIS_PROCESS, progress=False)
    parts = [chunks(k) for k in range(chunks.num_chunks)]
    features, y = torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])
    options = dict(heads=chunks.heads, width=widths, temperature=0.01)
    found = solve_from_statistics(statistics, **options)
    expected = solve(features, y, route="feature", **options)
    assert found.converged and expected.converged
    np.testing.assert_allclose(found.U, expected.U, rtol=rtol, atol=rtol * np.abs(expected.U).max())
    assert found.action == pytest.approx(expected.action, rel=rtol)
    return statistics


def flip_one_weight_bit(path) -> None:
    """Turn the one float32 weight of 101.0 stored in the file at ``path`` into 101.125 (one bit of one byte), as
    a damaged disk would: a file that still loads, with another number in it."""
    good, bad = bytes.fromhex("0000ca42"), bytes.fromhex("0040ca42")  # float32 101.0 and 101.125, little-endian
    data = Path(path).read_bytes()
    assert data.count(good) == 1, "the file must hold the weight 101.0 once"
    Path(path).write_bytes(data.replace(good, bad))


# --------------------------------------------------------------------------------------------------------
# claims


def verdict(claim: str = "c", outcome: Outcome | str = Outcome.HOLDS, **fields) -> Verdict:
    """A :class:`~attnpaths.claims.Verdict` of ``claim`` with ``outcome`` whose other fields are stand-ins (a
    directional test at the 1 % level, p = 0.001), each replaced by ``fields`` where a test reads it."""
    stand_ins = dict(statement="s", source="src", statistic="x", test="t", level=0.01, correction="none", value=1.0,
                     p_value=0.001, z=3.1, measured="m")  # fmt: skip
    return Verdict(claim=claim, outcome=outcome, **(stand_ins | fields))


def random_bert_weights(config, seed: int = 0) -> dict:
    """Random float32 weights of every tensor a BERT checkpoint of ``config`` (attnpaths.pretrained.bert.BertConfig)
    holds, drawn from ``seed``: the tiny models of the pretrained tests."""
    import torch

    g = torch.Generator().manual_seed(seed)
    D, I = config.hidden_size, config.intermediate_size
    shapes = {
        "embeddings.word_embeddings.weight": (config.vocab_size, D),
        "embeddings.position_embeddings.weight": (config.max_position_embeddings, D),
        "embeddings.token_type_embeddings.weight": (config.type_vocab_size, D),
        "embeddings.LayerNorm.weight": (D,),
        "embeddings.LayerNorm.bias": (D,),
        "pooler.dense.weight": (D, D),  # not used by the encoder, present in checkpoints
    }
    for l in range(config.num_hidden_layers):
        p = f"encoder.layer.{l}."
        for name in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            shapes.update({p + name + ".weight": (D, D), p + name + ".bias": (D,)})
        shapes.update({p + "intermediate.dense.weight": (I, D), p + "intermediate.dense.bias": (I,)})
        shapes.update({p + "output.dense.weight": (D, I), p + "output.dense.bias": (D,)})
        for name in ("attention.output.LayerNorm", "output.LayerNorm"):
            shapes.update({p + name + ".weight": (D,), p + name + ".bias": (D,)})
    return {k: torch.randn(s, generator=g, dtype=torch.float32) for k, s in shapes.items()}
