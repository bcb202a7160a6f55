"""Input validation of the library's entry points: every wrong argument is refused with the exception of its kind
(``ValueError`` out of range, ``TypeError`` of the wrong kind, ``MemoryError`` too large to fit) and a message that
names the argument, before any work is done (attnpaths._validation)."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import torch
from helpers import multihead_stack, random_problem, sampler_problem

from attnpaths import (
    PosteriorSampler,
    _validation,
    path_features,
    sample_order_parameters,
    solve,
    theory_from_attention,
)
from attnpaths.frozen_attention import ROW_SUM_EPS, ROW_SUM_TOLERANCE, row_sum_tolerance

try:
    import resource
except ImportError:  # pragma: no cover
    resource = None


@pytest.fixture(scope="module")
def problem():
    """Features ``[20, 4, 4]`` (heads (2, 2)) and +-1 labels; P = 20 exceeds the kernel's rank N0 n_paths = 16."""
    return random_problem(P=20, n0=4, heads=(2, 2), seed=1)


@pytest.fixture(scope="module")
def solution(problem):
    xi, y = problem
    return solve(xi, y, heads=(2, 2), width=10, temperature=0.1)


@pytest.fixture(scope="module")
def stack():
    _, tokens, attention, targets = multihead_stack(B=30)
    return attention, tokens, targets


# --------------------------------------------------------------------------------------------------------
# 1. batch_size


BAD_BATCH_SIZES = [-5, 0, True, 2.5, "8"]


@pytest.mark.parametrize("batch_size", BAD_BATCH_SIZES)
def test_predict_refuses_a_batch_size_that_is_not_a_positive_integer(solution, batch_size):
    xt, _ = random_problem(P=1000, n0=4, heads=(2, 2), seed=2)
    with pytest.raises(ValueError, match=r"batch_size must be an integer >= 1, got"):
        solution.predict(xt, batch_size=batch_size)


def test_predict_does_not_depend_on_a_valid_batch_size(solution):
    xt, _ = random_problem(P=37, n0=4, heads=(2, 2), seed=2)
    mean, var = solution.predict(xt)
    for batch_size in (1, np.int64(5), 1000):
        other_mean, other_var = solution.predict(xt, batch_size=batch_size)
        np.testing.assert_allclose(other_mean, mean, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(other_var, var, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("batch_size", BAD_BATCH_SIZES)
def test_every_public_batch_size_is_checked(batch_size):
    from attnpaths.oneshot.training import predict as model_predict
    from attnpaths.pruning.practical import gate_fisher

    network, x, y, _ = sampler_problem()
    calls = {
        "path_features": lambda: path_features(x, network.attention, batch_size=batch_size),
        "AttentionNetwork.features": lambda: network.features(x, batch_size=batch_size),
        # the check comes first: no model is needed to see it
        "oneshot.training.predict": lambda: model_predict(None, x, batch_size=batch_size),
        "pruning.practical.gate_fisher": lambda: gate_fisher(None, x, y, batch_size=batch_size),
    }
    for name, call in calls.items():
        with pytest.raises(ValueError, match=r"batch_size must be an integer >= 1"):
            call()
            pytest.fail(f"{name} accepted batch_size={batch_size!r}")


# --------------------------------------------------------------------------------------------------------
# 2. complex, boolean and object inputs


def test_complex_features_are_refused_not_silently_made_real(problem):
    xi, y = problem
    for features, dtype in (
        (xi + 1j * xi, "torch.complex128"),
        (xi.numpy() + 1j * xi.numpy(), "complex128"),
        (xi.to(torch.complex64), "torch.complex64"),
    ):
        with pytest.raises(TypeError, match=rf"features must hold real numbers, got the complex dtype {dtype}"):
            solve(features, y, heads=(2, 2), width=10, temperature=0.1)


def test_boolean_and_object_features_are_refused(problem):
    xi, y = problem
    with pytest.raises(TypeError, match=r"features must hold real numbers, got the boolean dtype torch.bool"):
        solve(xi > 0, y, heads=(2, 2), width=10, temperature=0.1)
    with pytest.raises(TypeError, match=r"features must hold real numbers, got the boolean dtype bool"):
        solve(xi.numpy() > 0, y, heads=(2, 2), width=10, temperature=0.1)
    with pytest.raises(TypeError, match=r"features must be a numeric array, got the object dtype object"):
        solve(np.asarray(xi.numpy(), dtype=object), y, heads=(2, 2), width=10, temperature=0.1)


def test_boolean_labels_are_refused_with_the_plus_minus_one_convention(problem):
    xi, y = problem
    for labels in (y > 0, (y > 0).numpy(), [bool(v > 0) for v in y]):
        with pytest.raises(
            TypeError,
            match=r"targets must hold real targets, got the boolean dtype .*labels are \+-1 "
            r"floats, pass 2.0 \* targets - 1.0",
        ):
            solve(xi, labels, heads=(2, 2), width=10, temperature=0.1)
    with pytest.raises(TypeError, match=r"targets must hold real numbers, got the complex dtype"):
        solve(xi, y + 0j, heads=(2, 2), width=10, temperature=0.1)
    # the +-1 labels the message asks for are accepted and are the labels
    fixed = solve(xi, 2.0 * (y > 0).double() - 1.0, heads=(2, 2), width=10, temperature=0.1)
    # determinism: 2 * (y > 0) - 1 is y exactly (+-1), so this is the same solve of the same inputs
    np.testing.assert_array_equal(fixed.U, solve(xi, y, heads=(2, 2), width=10, temperature=0.1).U)


def test_own_model_entry_refuses_complex_boolean_and_object_inputs(stack):
    attention, tokens, targets = stack
    settings = dict(width=30, temperature=0.1)
    with pytest.raises(TypeError, match=r"tokens must hold real numbers, got the complex dtype"):
        theory_from_attention(attention, tokens + 0j, targets, **settings)
    with pytest.raises(TypeError, match=r"attention\[1\] must hold real numbers, got the boolean dtype"):
        theory_from_attention([attention[0], attention[1] > 0], tokens, targets, **settings)
    with pytest.raises(TypeError, match=r"attention\[0\] must hold real numbers, got the complex dtype"):
        theory_from_attention([attention[0].numpy() + 0j, attention[1]], tokens, targets, **settings)
    with pytest.raises(TypeError, match=r"tokens must be a numeric array, got the object dtype"):
        theory_from_attention(attention, np.asarray(tokens.numpy(), dtype=object), targets, **settings)
    with pytest.raises(
        TypeError,
        match=r"targets must hold real targets, got the boolean dtype .*pass 2.0 \* "
        r"targets - 1.0",
    ):
        theory_from_attention(attention, tokens, targets > 0, **settings)


def test_the_sampler_refuses_complex_and_boolean_inputs():
    network, x, y, _ = sampler_problem()
    with pytest.raises(TypeError, match=r"x must hold real numbers, got the complex dtype"):
        PosteriorSampler(network, y, 0.1, x=x + 1j)
    with pytest.raises(TypeError, match=r"features must hold real numbers, got the complex dtype complex128"):
        PosteriorSampler(network, y, 0.1, features=network.features(x).numpy() + 0j)
    with pytest.raises(TypeError, match=r"targets must hold real targets, got the boolean dtype .*\+-1"):
        PosteriorSampler(network, y > 0, 0.1, x=x)


def test_the_shared_conversions_refuse_the_same_kinds():
    for convert in (_validation.as_float64_tensor, _validation.as_float64_array):
        with pytest.raises(TypeError, match=r"values must hold real numbers, got the complex dtype"):
            convert(np.ones(3) * 1j, "values")
        with pytest.raises(TypeError, match=r"values must hold real numbers, got the boolean dtype"):
            convert(torch.ones(3, dtype=torch.bool), "values")
        with pytest.raises(TypeError, match=r"values must be a numeric array, got the object dtype"):
            convert([1.0, None], "values")
        with pytest.raises(ValueError, match=r"values must contain only finite values"):
            convert([1.0, math.nan], "values")
        # real inputs of any precision convert exactly to float64
        for value in (np.arange(3, dtype=np.int32), torch.arange(3, dtype=torch.bfloat16), [0.0, 1.0, 2.0]):
            np.testing.assert_array_equal(np.asarray(convert(value, "values")), [0.0, 1.0, 2.0])


# --------------------------------------------------------------------------------------------------------
# 3. the solver's stopping rule


@pytest.mark.parametrize("tolerance", [math.nan, -1e-8, 0.0, math.inf, "1e-8", True])
def test_gradient_tolerance_must_be_finite_and_positive(problem, tolerance):
    xi, y = problem
    with pytest.raises(ValueError, match=r"gradient_tolerance must be a (finite )?real number > 0, got"):
        solve(xi, y, heads=(2, 2), width=10, temperature=0.1, gradient_tolerance=tolerance)


@pytest.mark.parametrize("max_iterations", [-1, 0, 2.5, True, None])
def test_max_iterations_must_be_a_positive_integer(problem, stack, max_iterations):
    xi, y = problem
    with pytest.raises(ValueError, match=r"max_iterations must be an integer >= 1, got"):
        solve(xi, y, heads=(2, 2), width=10, temperature=0.1, max_iterations=max_iterations)
    attention, tokens, targets = stack
    with pytest.raises(ValueError, match=r"max_iterations must be an integer >= 1, got"):
        theory_from_attention(attention, tokens, targets, width=30, temperature=0.1, max_iterations=max_iterations)


def test_the_functions_that_pass_max_iterations_on_check_it_first(solution, problem):
    from attnpaths import rank_heads
    from attnpaths.pruning.theory_scores import action_changes
    from attnpaths.theory.claims import certificate_verdict

    xi, y = problem
    with pytest.raises(ValueError, match=r"max_iterations must be an integer >= 1, got -1"):
        action_changes(xi, y, solution, max_iterations=-1)
    with pytest.raises(ValueError, match=r"max_iterations must be an integer >= 1, got 0"):
        rank_heads(None, xi.transpose(1, 2), y, width=10, temperature=0.1, max_iterations=0)  # before the model
    with pytest.raises(ValueError, match=r"gradient_tolerance must be a finite real number > 0, got nan"):
        certificate_verdict([10.0], [1e-12], [1.0], gradient_tolerance=math.nan)


def test_a_valid_tolerance_still_certifies(problem):
    xi, y = problem
    sol = solve(xi, y, heads=(2, 2), width=10, temperature=0.1, gradient_tolerance=1e-10, max_iterations=1000)
    assert sol.converged and sol.gradient_norm < 1e-6


# --------------------------------------------------------------------------------------------------------
# 4. an action that is not finite at the start


def test_a_singular_kernel_names_the_temperature_not_initial(problem):
    xi, y = problem  # P = 20 examples, a kernel of rank at most 16: singular at T = 0 to rounding
    with pytest.raises(ValueError) as info:
        solve(xi, y, heads=(2, 2), width=10, temperature=5e-324)
    message = str(info.value)
    assert message.startswith(
        "the action is not finite at the starting point U = the GP values (U_1 = 1 I): "
        "the kernel K(U_1) + T I is numerically singular or overflows at temperature=5e-324"
    )
    assert "try a larger temperature" in message and "initial" not in message


def test_an_overflowing_kernel_names_the_temperature_in_both_routes(problem):
    xi, y = problem
    for widths, where in ((10, "at the starting point U"), (math.inf, "in the GP limit at U")):
        with pytest.raises(
            ValueError,
            match=rf"the action is not finite {where} = the GP values \(U_1 = 1 I\): the "
            r"kernel .* overflows at temperature=1e-10; try a larger temperature",
        ):
            solve(xi * 1e200, y, heads=(2, 2), width=widths, temperature=1e-10)


def test_a_given_initial_keeps_the_initial_wording(problem):
    xi, y = problem
    with pytest.raises(
        ValueError,
        match=r"^initial must give a finite action \(K\(U_1\) \+ T I positive definite "
        r"at temperature=5e-324\)$",
    ):
        solve(xi, y, heads=(2, 2), width=10, temperature=5e-324, initial=[np.eye(4), np.eye(2)])


# --------------------------------------------------------------------------------------------------------
# 5. low-precision attention


def test_row_sum_tolerance_scales_with_the_precision_of_the_given_attention():
    assert row_sum_tolerance(torch.zeros(1)) == ROW_SUM_TOLERANCE  # float32: eps far below the tolerance
    assert row_sum_tolerance(np.zeros(1)) == ROW_SUM_TOLERANCE
    assert row_sum_tolerance([[0.5, 0.5]]) == ROW_SUM_TOLERANCE
    assert row_sum_tolerance(torch.zeros(1, dtype=torch.float16)) == ROW_SUM_EPS * 2.0**-10
    assert row_sum_tolerance(np.zeros(1, dtype=np.float16)) == ROW_SUM_EPS * 2.0**-10
    assert row_sum_tolerance(torch.zeros(1, dtype=torch.bfloat16)) == ROW_SUM_EPS * 2.0**-7


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_attention_is_accepted_and_computed_in_float64(stack, dtype, monkeypatch):
    from attnpaths import frozen_attention

    attention, tokens, targets = stack
    low = [a.to(dtype) for a in attention]
    assert max(float((a.double().sum(-1) - 1).abs().max()) for a in low) > ROW_SUM_TOLERANCE  # the probed case
    theory = theory_from_attention(low, tokens, targets, width=30, temperature=0.1)
    assert theory.features.dtype == torch.float64 and theory.certificate["converged"]
    # the same float64 numbers as the low-precision weights given in float64 (there, only a looser tolerance
    # lets them through)
    monkeypatch.setattr(frozen_attention, "ROW_SUM_TOLERANCE", 0.1)
    reference = theory_from_attention([a.double() for a in low], tokens, targets, width=30, temperature=0.1)
    # determinism: both convert the same weights to the same float64 numbers, then run the same code on them
    torch.testing.assert_close(theory.features, reference.features, rtol=0, atol=0)
    np.testing.assert_array_equal(theory.U, reference.U)
    mean, _ = theory.predict(low, tokens)
    assert mean.shape == (tokens.shape[0],) and np.all(np.isfinite(mean))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_attention_with_swapped_axes_is_still_refused(stack, dtype):
    attention, tokens, targets = stack
    swapped = [a.transpose(-1, -2).to(dtype) for a in attention]
    with pytest.raises(ValueError, match=r"attention\[0\] must hold softmax weights over the keys.*query, key"):
        theory_from_attention(swapped, tokens, targets, width=30, temperature=0.1)


# --------------------------------------------------------------------------------------------------------
# 6. heads


def test_heads_are_checked_where_the_layout_tells_them(problem, stack):
    xi, y = problem
    # the features' flat path axis fixes the product of the heads only
    with pytest.raises(ValueError, match=r"heads=\(3,\) gives 3 paths but features hold 4 paths"):
        solve(xi, y, heads=(3,), width=10, temperature=0.1)
    with pytest.raises(ValueError, match=r"heads=\(2, 2, 2\) gives 8 paths but features hold 4 paths"):
        solve(xi, y, heads=(2, 2, 2), width=10, temperature=0.1)
    # attention lists carry the heads of every layer: new attention must have the training data's heads
    attention, tokens, targets = stack
    theory = theory_from_attention(attention, tokens, targets, width=30, temperature=0.1)
    assert theory.heads == (2, 2)
    one_layer_of_four = [torch.cat([attention[0], attention[1]], dim=1)]  # [B, 4, T, T]: 4 paths, as (2, 2)
    with pytest.raises(ValueError, match=r"attention must have the heads \(2, 2\) of the training data, got \(4,\)"):
        theory.predict(one_layer_of_four, tokens)


def test_the_heads_that_features_cannot_tell_apart_are_documented():
    assert "indistinguishable" in solve.__doc__ and "(4,)" in solve.__doc__


# --------------------------------------------------------------------------------------------------------
# 7. memory


def test_solve_estimates_its_memory_before_allocating(problem, monkeypatch):
    xi, y = problem
    monkeypatch.setattr(_validation, "available_memory", lambda: 1000)
    for widths, route, kernels in ((10, "(sample|feature)-space", "six"), (math.inf, "GP-limit", "five")):
        with pytest.raises(
            MemoryError,
            match=rf"solve with P = 20 examples \({route} route: {kernels} \[P, P\] float64 "
            r"matrices and the features \[P, N0, n_paths\] = \[20, 4, 4\]\) needs "
            r"about [0-9.e-]+ GiB, but only 9.31e-07 GiB of memory is available",
        ):
            solve(xi, y, heads=(2, 2), width=widths, temperature=0.1, route="feature")
    monkeypatch.setattr(_validation, "available_memory", lambda: None)  # a system that does not say
    assert solve(xi, y, heads=(2, 2), width=10, temperature=0.1).converged


def test_the_estimate_for_a_large_problem_is_six_kernels(monkeypatch):
    """Five [P, P] matrices at once at the measured peak, and one for the margin (theory._solver_memory)."""
    from attnpaths.theory._minimise import _solver_memory, architecture

    needed, what = _solver_memory(12000, 4, 2, architecture((2,), 10), "feature")
    assert needed >= 6 * 12000**2 * 8 and needed < 6.2 * 12000**2 * 8
    assert what.startswith("solve with P = 12000 examples (feature-space route")
    monkeypatch.setattr(_validation, "available_memory", lambda: 3 * 2**30)
    with pytest.raises(MemoryError, match=r"P = 12000 .* needs about 6.63 GiB, but only 3 GiB of memory is available"):
        _validation.check_memory(needed, what)


def test_available_memory_is_the_smaller_of_meminfo_and_the_address_space_limit(monkeypatch):
    monkeypatch.setattr(_validation.resource, "getrlimit", lambda which: (_validation.resource.RLIM_INFINITY,) * 2)
    unlimited = _validation.available_memory()
    assert unlimited is None or unlimited > 0
    limit = 2**30
    monkeypatch.setattr(_validation.resource, "getrlimit", lambda which: (limit, _validation.resource.RLIM_INFINITY))
    monkeypatch.setattr(_validation, "_address_space_in_use", lambda: limit // 4)
    assert _validation.available_memory() == min(limit - limit // 4, unlimited or limit)
    monkeypatch.setattr(_validation, "_address_space_in_use", lambda: 2 * limit)
    assert _validation.available_memory() == 0
    with pytest.raises(MemoryError, match=r"the test computation needs about 1 GiB, but only 0 GiB"):
        _validation.check_memory(2**30, "the test computation")
    _validation.check_memory(0, "nothing")


DENSE_SOLVE = """
import json, resource, sys
import torch
from attnpaths.theory._minimise import _solver_memory, architecture, solve

def status(key):
    with open("/proc/self/status") as lines:
        return next(int(line.split()[1]) * 1024 for line in lines if line.startswith(key + ":"))

P, n0 = 1500, 60  # D = 240: the feature route's [P, P] matrices dominate
g = torch.Generator().manual_seed(0)
y = torch.cat([torch.ones(P // 2), -torch.ones(P - P // 2)]).to(torch.float64)
xi = torch.randn(P, n0, 4, generator=g, dtype=torch.float64)
xi[:, 0, 0] += 1.5 * y
estimate = _solver_memory(P, n0, 4, architecture((2, 2), 10), "feature")[0]
headroom = sys.argv[1]
if headroom != "none":
    resource.setrlimit(resource.RLIMIT_AS, (status("VmSize") + int(headroom), resource.getrlimit(resource.RLIMIT_AS)[1]))
try:
    open("/proc/self/clear_refs", "w").write("5")  # VmHWM from here on
except OSError:
    pass
size, resident = status("VmSize"), status("VmRSS")
try:
    solve(xi, y, heads=(2, 2), width=10, temperature=0.01, route="feature", on_failure="warn")
    outcome = ["solved", ""]
except BaseException as err:
    outcome = [type(err).__name__, str(err)]
print(json.dumps(dict(outcome=outcome, estimate=estimate, virtual=status("VmPeak") - size,
                      resident=status("VmHWM") - resident)))
"""


def _dense_solve(headroom) -> dict:
    """A forced feature-route solve of P = 1500 examples (D = 240) in a fresh process, with ``headroom`` bytes of
    address space (RLIMIT_AS) beyond what the process has mapped before it, or none; its outcome, the estimate and
    the peaks it reached (virtual: VmPeak, resident: VmHWM, over their values before the solve)."""
    environment = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, "-c", DENSE_SOLVE, str(headroom)], capture_output=True, text=True, env=environment, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
@pytest.mark.usefixtures("long_computation")
def test_the_estimate_covers_the_measured_peak_of_a_dense_solve():
    run = _dense_solve("none")
    assert run["outcome"] == ["solved", ""]
    # the estimate holds the peak, virtual (what RLIMIT_AS counts) and resident, and is not several times it
    assert max(run["virtual"], run["resident"]) <= run["estimate"] <= 2.5 * max(run["virtual"], run["resident"])


@pytest.mark.skipif(resource is None or not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc")
def test_a_dense_solve_beyond_the_address_space_limit_is_refused_before_it_starts():
    """80 MiB of address space is more than three [P, P] matrices and the features take (57 MiB) but less than the
    solve's peak (above 100 MiB resident, 170 MiB of address space): the solve is refused by the library's check
    before it starts, not by torch part-way."""
    run = _dense_solve(80 * 2**20)
    kind, message = run["outcome"]
    assert kind == "MemoryError"
    assert re.match(
        r"solve with P = 1500 examples \(feature-space route: .*\) needs about 0.3\d* GiB, but only 0.0\d* GiB of "
        r"memory is available",
        message,
    ), message


def test_available_memory_reads_the_cgroup_memory_limit(tmp_path, monkeypatch):
    """A cgroup memory limit (v2: memory.max, v1: memory.limit_in_bytes, on this process's cgroup or one above it)
    bounds the memory left where it is below MemAvailable: the limit less the usage, less the inactive page cache
    the kernel reclaims first."""
    monkeypatch.setattr(_validation.resource, "getrlimit", lambda which: (_validation.resource.RLIM_INFINITY,) * 2)
    gib = 2**30
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(f"MemTotal: {64 * 2**20} kB\nMemAvailable: {32 * 2**20} kB\n")  # 32 GiB
    monkeypatch.setattr(_validation, "PROC_MEMINFO", str(meminfo))
    for version, (limit_file, usage_file, inactive) in {
        2: ("memory.max", "memory.current", "inactive_file"),
        1: ("memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"),
    }.items():
        root = tmp_path / f"v{version}"
        base = root if version == 2 else root / "memory"
        for where, limit, usage, cache in (("outer", 3 * gib, 2 * gib, 0), ("outer/job", gib, gib, gib // 4)):
            (base / where).mkdir(parents=True)
            (base / where / limit_file).write_text(f"{limit}\n")
            (base / where / usage_file).write_text(f"{usage}\n")
            (base / where / "memory.stat").write_text(f"cache 5\n{inactive} {cache}\nactive_file 7\n")
        (root / "self").write_text("0::/outer/job\n" if version == 2 else "9:pids:/\n4:cpu,memory:/outer/job\n0::/\n")
        monkeypatch.setattr(_validation, "CGROUP_ROOT", str(root))
        monkeypatch.setattr(_validation, "PROC_SELF_CGROUP", str(root / "self"))
        assert _validation.available_memory() == gib // 4  # the job's 1 - (1 - 0.25) GiB, less than 3 - 2 GiB above
        with pytest.raises(MemoryError, match=r"only 0.25 GiB of memory is available \(.*the cgroup memory limit"):
            _validation.check_memory(gib // 2, "the test computation")
        (base / "outer" / limit_file).write_text("max\n" if version == 2 else f"{2**63 - 4096}\n")  # no limit
        (base / "outer/job" / limit_file).write_text(f"{2 * gib}\n")
        assert _validation.available_memory() == gib + gib // 4
        (base / "outer/job" / limit_file).write_text(f"{64 * gib}\n")  # above MemAvailable: that one counts
        assert _validation.available_memory() == 32 * gib


# --------------------------------------------------------------------------------------------------------
# 8. data and temperature at the theory's entry points


def _bad_data(xi, y):
    nan_features = xi.clone()
    nan_features[0, 0, 0] = math.nan
    inf_labels = y.clone()
    inf_labels[3] = math.inf
    return [
        ((nan_features, y), ValueError, r"features must contain only finite values \(found NaN or inf\)"),
        ((xi, inf_labels), ValueError, r"targets must contain only finite values \(found NaN or inf\)"),
        ((xi, y[:-1]), ValueError, r"targets must have shape \[P\] = \[20\], got \(19,\)"),
        ((xi[:0], y[:0]), ValueError, r"features must have shape \[P, N0, n_paths\] with P >= 1, got \(0, 4, 4\)"),
    ]


BAD_TEMPERATURES = [(0.0, "0.0"), (-1.0, "-1.0"), (math.nan, "nan"), (math.inf, "inf")]


def test_solve_checks_its_data_and_temperature(problem):
    xi, y = problem
    for (features, labels), kind, match in _bad_data(xi, y):
        with pytest.raises(kind, match=match):
            solve(features, labels, heads=(2, 2), width=10, temperature=0.1)
    for temperature, shown in BAD_TEMPERATURES:
        with pytest.raises(ValueError, match=rf"temperature must be a finite real number > 0, got {shown}"):
            solve(xi, y, heads=(2, 2), width=10, temperature=temperature)


def test_the_order_parameter_sampler_checks_its_data_and_temperature(problem):
    xi, y = problem
    settings = dict(
        heads=(2, 2), width=10, generator=torch.Generator().manual_seed(0), num_chains=2, num_warmup=0, num_samples=4
    )
    for (features, labels), kind, match in _bad_data(xi, y):
        with pytest.raises(kind, match=match):
            sample_order_parameters(features, labels, temperature=0.1, **settings)
    for temperature, shown in BAD_TEMPERATURES:
        with pytest.raises(ValueError, match=rf"temperature must be a finite real number > 0, got {shown}"):
            sample_order_parameters(xi, y, temperature=temperature, **settings)


def test_the_own_model_entry_checks_its_data_and_temperature(stack):
    attention, tokens, targets = stack
    settings = dict(width=30, temperature=0.1)
    nan_tokens = tokens.clone()
    nan_tokens[0, 0, 0] = math.nan
    with pytest.raises(ValueError, match=r"tokens must contain only finite values"):
        theory_from_attention(attention, nan_tokens, targets, **settings)
    inf_targets = targets.clone()
    inf_targets[0] = -math.inf
    with pytest.raises(ValueError, match=r"targets must contain only finite values"):
        theory_from_attention(attention, tokens, inf_targets, **settings)
    with pytest.raises(ValueError, match=r"targets must have shape \[B\] = \[30\]"):
        theory_from_attention(attention, tokens, targets[:-1], **settings)
    with pytest.raises(ValueError, match=r"tokens must have shape \[B, T, D\]"):
        theory_from_attention([a[:0] for a in attention], tokens[:0], targets[:0], **settings)
    for temperature, shown in BAD_TEMPERATURES:
        with pytest.raises(ValueError, match=rf"temperature must be a finite real number > 0, got {shown}"):
            theory_from_attention(attention, tokens, targets, width=30, temperature=temperature)


def test_the_posterior_sampler_checks_its_data_and_temperature():
    network, x, y, _ = sampler_problem()
    with pytest.raises(ValueError, match=r"targets must have shape \[6\] \(one label per example\), got \(5,\)"):
        PosteriorSampler(network, y[:-1], 0.1, x=x)
    with pytest.raises(ValueError, match=r"x must hold at least one example \(P >= 1\), got P = 0"):
        PosteriorSampler(network, y[:0], 0.1, x=x[:0])
    with pytest.raises(ValueError, match=r"features must hold at least one example \(P >= 1\), got P = 0"):
        PosteriorSampler(network, y[:0], 0.1, features=network.features(x)[:0])
    bad = x.clone()
    bad[0, 0, 0] = math.inf
    with pytest.raises(ValueError, match=r"x must contain only finite values"):
        PosteriorSampler(network, y, 0.1, x=bad)
    for temperature, shown in BAD_TEMPERATURES:
        with pytest.raises(ValueError, match=rf"temperature must be a finite real number > 0, got {shown}"):
            PosteriorSampler(network, y, temperature, x=x)


# --------------------------------------------------------------------------------------------------------
# 9. numbers given as 0-d arrays, and strings where numbers are expected


def test_a_temperature_given_as_a_zero_dimensional_array_or_numpy_scalar_is_that_number(problem):
    xi, y = problem
    reference = solve(xi, y, heads=(2, 2), width=10, temperature=0.01)
    for temperature in (np.array(0.01), torch.tensor(0.01, dtype=torch.float64), np.float64(0.01)):
        assert _validation.positive_real(temperature, "temperature") == 0.01
        found = solve(xi, y, heads=(2, 2), width=10, temperature=temperature)
        assert found.temperature == 0.01 and type(found.temperature) is float
        assert np.array_equal(found.U, reference.U)  # determinism: the same number, the same computation
    assert _validation.positive_real(np.float32(0.5), "temperature") == 0.5  # exact in float32
    assert _validation.finite_real(torch.tensor(-2), "shift") == -2.0
    for temperature, shown in (
        (np.array([0.01]), r"array\(\[0.01\]\)"),
        (np.array(True), r"array\(True\)"),
        (torch.tensor(0.01 + 0.01j), r"tensor\(0.0100\+0.0100j\)"),
        (np.array(-0.01), r"-0.01"),
        (torch.tensor(float("nan")), r"nan"),
    ):
        with pytest.raises(ValueError, match=rf"^temperature must be a (finite )?real number > 0, got {shown}"):
            solve(xi, y, heads=(2, 2), width=10, temperature=temperature)


@pytest.mark.parametrize("widths", ["10", b"10", "inf"])
def test_widths_given_as_a_string_are_refused_not_read_as_characters(problem, widths):
    xi, y = problem
    with pytest.raises(
        ValueError, match=r"^width must be a number >= 1 or a tuple \(N_1, \.\.\., N_L, N_a\) of them, "
    ):
        solve(xi, y, heads=(4,), width=widths, temperature=0.1)  # two characters and two values for L = 1
    assert solve(xi, y, heads=(4,), width=np.array(10.0), temperature=0.1).widths == (10.0, 10.0)


# --------------------------------------------------------------------------------------------------------
# 10. head scores


def test_head_scores_name_u_and_refuse_a_matrix_that_is_not_an_order_parameter():
    from attnpaths.head_scoring import head_scores, prune_order_parameter

    F = np.random.default_rng(3).standard_normal((4, 2))
    U = F @ F.T  # rank 2: eigenvalues 0 to rounding, some of them negative
    U[0, 1] += 1e-16 * np.abs(U).max()  # and symmetric to rounding only
    assert np.nanmax(head_scores(U, (2, 2))) == 1.0  # exact on any CPU: x / x = 1
    for bad, match in (
        (np.eye(3), r"^heads=\(2, 2\) gives 4 paths but U is \[3, 3\] \(one row and column per path\)"),
        (np.eye(4)[:3], r"^U must be a square \[n_paths, n_paths\] matrix, got shape \(3, 4\)"),
        (np.ones(4), r"^U must be a square \[n_paths, n_paths\] matrix, got shape \(4,\)"),
        (np.triu(np.ones((4, 4))), r"^U must be symmetric .* largest \|U_ij - U_ji\| is 1 "),
        (np.diag([1.0, -0.5, 1.0, 1.0]), r"^U must be positive semidefinite .* smallest eigenvalue is -0.5 "),
    ):
        for check in (head_scores, lambda U, heads: prune_order_parameter(U, heads, [])):
            with pytest.raises(ValueError, match=match):
                check(bad, (2, 2))
