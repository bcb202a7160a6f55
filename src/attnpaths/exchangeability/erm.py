"""E3: empirical risk minimisation of the attention parameter ``W`` in model (M3).

Objectives [DERIVED; the paper's exact objectives could not be checked]:

* supervised (ex-erm-sup): ``min_W (1/N) sum_i (Attn_W(q_i; X_i) - y_i)^2`` with ``q_i ~ N(0, Sigma)`` and
  ``y_i = z_i^T q_i + sigma_y xi_i``;
* masked-value prediction (ex-erm-ssl): hide ``v_1``, use ``k_1`` as the query over tokens ``2..L``:
  ``min_W (1/N) sum_i (Attn_W(k_{i1}; X_{i,2:L}) - v_{i1})^2``.

Both have the same population minimiser as ``L -> inf``, ``W = Sigma^{-1}`` (ex-tilt); at finite ``L`` the
minimiser ``W*_L`` is a softened (higher-temperature) version of it. The fits are trust-region Newton steps
with the exact gradient (ex-grad) and Hessian.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy.optimize import minimize
from tqdm import tqdm

from .._validation import (
    as_float64_array,
    as_float64_tensor,
    increasing_ints,
    nonnegative_real,
    numpy_generator,
    positive_int,
)
from ..engine import single_threaded
from .latent_models import factored_key_cov, sample_linear_key_value

MODES = ("supervised", "masked")


@dataclass(frozen=True)
class AttentionRegressionData:
    """``N`` regression examples for attention: ``queries`` ``[N, d]``, ``keys`` ``[N, L, d]``,
    ``values`` ``[N, L]`` (the context) and ``targets`` ``[N]``, all float64 tensors."""

    queries: torch.Tensor
    keys: torch.Tensor
    values: torch.Tensor
    targets: torch.Tensor

    def __post_init__(self):
        for name in ("queries", "keys", "values", "targets"):
            object.__setattr__(self, name, as_float64_tensor(getattr(self, name), name))
        if self.keys.ndim != 3:
            raise ValueError(f"keys must have shape [N, L, d], got {tuple(self.keys.shape)}")
        n, L, d = self.keys.shape
        if self.queries.shape != (n, d) or self.values.shape != (n, L) or self.targets.shape != (n,):
            raise ValueError(
                f"expected queries [N, d], keys [N, L, d], values [N, L], targets [N]; got {tuple(self.queries.shape)}, "
                f"{tuple(self.keys.shape)}, {tuple(self.values.shape)}, {tuple(self.targets.shape)}"
            )


def _sample_task_arrays(
    rng, mode: str, num_sequences: int, length: int, key_cov, value_noise: float, label_noise: float
):
    """:func:`sample_task` as numpy arrays ``(queries, keys, values, targets)``."""
    numpy_generator(rng)
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    n, L = positive_int(num_sequences, "num_sequences"), positive_int(length, "length")
    label_noise = nonnegative_real(label_noise, "label_noise")
    if mode == "masked":
        if L < 2:
            raise ValueError(f"length must be >= 2 for the masked task, got {L}")
        _, keys, values = sample_linear_key_value(rng, n, L, key_cov, value_noise)
        return keys[:, 0], keys[:, 1:], values[:, 1:], values[:, 0]
    z, keys, values = sample_linear_key_value(rng, n, L, key_cov, value_noise)
    _, chol = factored_key_cov(key_cov, np.linalg.cholesky, "symmetric positive definite")
    queries = rng.standard_normal((n, chol.shape[0])) @ chol.T
    return queries, keys, values, np.einsum("nd,nd->n", queries, z) + label_noise * rng.standard_normal(n)


def sample_task(
    rng, mode: str, num_sequences: int, length: int, key_cov, value_noise: float, label_noise: float = 0.1
) -> AttentionRegressionData:
    """Draw ``N`` examples of the supervised (ex-erm-sup) or masked (ex-erm-ssl) task on (M3).

    ``length`` is the number of tokens drawn per sequence: the supervised context has ``L`` tokens and an
    extra query ``q ~ N(0, Sigma)``; the masked context has ``L - 1`` tokens (token 1 is the query).
    ``label_noise`` is used by the supervised task only.
    """
    data = _sample_task_arrays(rng, mode, num_sequences, length, key_cov, value_noise, label_noise)
    return AttentionRegressionData(*(torch.from_numpy(np.ascontiguousarray(a)) for a in data))


#: The risk is accumulated over chunks of at most this many tokens (sequences x context length).
_TOKENS_PER_CHUNK = 1 << 18


@dataclass(frozen=True)
class _Arrays:
    """The examples as numpy arrays laid out for :func:`_risk_terms`: ``queries`` ``[N, d]``, ``keys_t``
    ``[N, d, L]`` (keys transposed, so that each coordinate is contiguous over the tokens), ``values`` ``[N, L]``,
    ``targets`` ``[N]``."""

    queries: np.ndarray
    keys_t: np.ndarray
    values: np.ndarray
    targets: np.ndarray

    @classmethod
    def of(cls, queries, keys, values, targets) -> _Arrays:
        """From arrays or tensors ``[N, d]``, ``[N, L, d]``, ``[N, L]`` and ``[N]``."""
        queries, keys, values, targets = (np.asarray(a) for a in (queries, keys, values, targets))
        return cls(*(np.ascontiguousarray(a) for a in (queries, keys.transpose(0, 2, 1), values, targets)))

    def prefix(self, context: int) -> _Arrays:
        """The same examples with the first ``context`` tokens of every context."""
        return _Arrays(self.queries, self.keys_t[:, :, :context], self.values[:, :context], self.targets)


def _risk_terms(W: np.ndarray, data: _Arrays, order: int):
    """Risk (order 0), its gradient (1) and its Hessian (2) in ``W``, in one pass over the tokens; order 3 adds
    the per-example gradients ``g_i = 2 r_i vec(q_i c_i^T)`` (``[N, d^2]``), for sandwich standard errors.

    The formulas are those of :func:`attention_risk_gradient_hessian`.
    """
    n, d, L = data.keys_t.shape
    risk = 0.0
    grad = np.zeros((d, d))
    hess = np.zeros((d, d, d, d))
    scores = np.zeros((n, d * d)) if order == 3 else None
    step = max(1, _TOKENS_PER_CHUNK // L)
    for start in range(0, n, step):
        stop = start + step
        q, kt = data.queries[start:stop], data.keys_t[start:stop]
        v, y = data.values[start:stop], data.targets[start:stop]
        m = q.shape[0]
        weights = np.empty((m, 2, L))  # unnormalised softmax weights e_l and e_l v_l
        e = weights[:, 0]
        np.matmul((q @ W)[:, None, :], kt, out=e[:, None, :])  # scores q^T W k_l
        e -= e.max(axis=1, keepdims=True)
        np.exp(e, out=e)
        np.multiply(e, v, out=weights[:, 1])
        sums = weights.sum(axis=2)  # [m, 2]: Z and Z o
        out = sums[:, 1] / sums[:, 0]
        resid = out - y
        risk += float(resid @ resid)
        if order == 0:
            continue
        weights_t = weights.transpose(0, 2, 1)
        norm = sums[:, None, :1]
        first = np.matmul(kt, weights_t) / norm  # [m, d, 2]: E_a[k], E_a[v k]
        k_mean = first[:, :, 0]
        c = first[:, :, 1] - out[:, None] * k_mean  # Cov_a(v, k)
        grad += (q * resid[:, None]).T @ c
        if order == 1:
            continue
        outer = (kt[:, :, None, :] * kt[:, None, :, :]).reshape(m, d * d, L)
        second = (np.matmul(outer, weights_t) / norm).reshape(m, d, d, 2)  # E_a[k k^T], E_a[v k k^T]
        M = (
            second[..., 1]
            - out[:, None, None] * second[..., 0]
            - c[:, :, None] * k_mean[:, None, :]
            - k_mean[:, :, None] * c[:, None, :]
        )
        jac = q[:, :, None] * c[:, None, :]  # [m, d, d]: d o_i / d W
        hess += np.einsum("nab,ncd->abcd", jac, jac) + np.einsum("n,na,nc,nbd->abcd", resid, q, q, M)
        if order == 3:
            scores[start:stop] = 2.0 * resid[:, None] * jac.reshape(m, d * d)
    terms = (risk / n, grad * (2.0 / n), hess.reshape(d * d, d * d) * (2.0 / n))
    return terms + (scores,) if order == 3 else terms


def _terms(W, data: AttentionRegressionData, order: int):
    """:func:`_risk_terms` of ``W`` ``[d, d]`` on the examples ``data``."""
    arrays = _Arrays.of(data.queries, data.keys, data.values, data.targets)
    d = arrays.keys_t.shape[1]
    W = np.asarray(as_float64_tensor(W, "W"))
    if W.shape != (d, d):
        raise ValueError(f"W must have shape [{d}, {d}], got {tuple(W.shape)}")
    return _risk_terms(W, arrays, order)


def attention_risk_and_gradient(W, data: AttentionRegressionData):
    """Empirical risk ``(1/N) sum_i (Attn_W(q_i; X_i) - y_i)^2`` and its gradient in ``W`` (ex-grad).

    Args:
        W: ``[d, d]``; data: the examples.

    Returns:
        ``(risk, gradient)``: a float and a ``[d, d]`` numpy array.
    """
    risk, grad, _ = _terms(W, data, order=1)
    return risk, grad


def attention_risk_gradient_hessian(W, data: AttentionRegressionData):
    """Empirical risk, its gradient ``[d, d]`` and its Hessian ``[d^2, d^2]`` in ``W`` (row-major ``vec(W)``).

    With ``a_l = softmax_l(q^T W k_l)``, the read-out ``o = E_a[v]`` is an exponential-family mean in the
    statistic ``q k_l^T``. Its gradient is the covariance ``q c^T`` with ``c = E_a[(v - o)(k - E_a k)]`` (ex-grad),
    and its Hessian is the third central moment ``(q q^T) (x) M`` with
    ``M = E_a[(v - o)(k - E_a k)(k - E_a k)^T]``. For the risk ``R = mean_i (o_i - y_i)^2`` this gives
    ``grad R = (2/N) sum_i r_i q_i c_i^T`` and
    ``hess R = (2/N) sum_i [vec(q_i c_i^T) vec(q_i c_i^T)^T + r_i (q_i q_i^T) (x) M_i]`` with ``r_i = o_i - y_i``
    (``vec`` row-major, the order of ``W.reshape(-1)``). The moments are products of the ``[N, 2, L]`` weights
    ``(e_l, e_l v_l)`` with the keys and their outer products, normalised by ``Z = sum_l e_l``.
    """
    return _terms(W, data, order=2)


def attention_risk(W, data: AttentionRegressionData) -> float:
    """Empirical risk of ``W`` on ``data`` (ex-erm-sup / ex-erm-ssl)."""
    return _terms(W, data, order=0)[0]


@dataclass(frozen=True)
class AttentionFit:
    """A fitted parameter ``W`` ``[d, d]``, its empirical risk, the largest gradient entry there, the number
    of Newton iterations and (when requested) ``influence`` ``[N, d^2]``, the influence of each example,
    ``psi_i = -H^{-1} g_i`` (``H`` the Hessian, ``g_i`` the example's gradient), so that
    ``vec(W) - vec(W_population) ~ mean_i psi_i``; ``None`` otherwise. The sandwich covariance of ``vec(W)`` over
    draws of the examples is :attr:`covariance` ``= psi^T psi / N^2``, and two fits on the same examples have the
    cross-covariance ``psi_1^T psi_2 / N^2``."""

    W: np.ndarray
    risk: float
    max_gradient: float
    iterations: int
    influence: np.ndarray | None = None

    @property
    def covariance(self) -> np.ndarray | None:
        """The sandwich covariance ``[d^2, d^2]`` of ``vec(W)`` over draws of the examples, ``psi^T psi / N^2``
        (``None`` without ``influence``)."""
        psi = self.influence
        return None if psi is None else psi.T @ psi / psi.shape[0] ** 2


def fit_attention(
    data: AttentionRegressionData,
    *,
    initial=None,
    max_iter: int = 200,
    gradient_tol: float = 1e-9,
    influence: bool = False,
) -> AttentionFit:
    """Minimise the empirical risk over ``W`` by a trust-region Newton method with the exact Hessian
    (``scipy.optimize.minimize(method="trust-exact")``), from ``initial`` (default ``W = 0``).

    The risk is not convex in ``W``; the trust region makes every step decrease it, also where the Hessian is
    indefinite. With ``d^2`` parameters the Hessian costs about as much as the gradient and the iteration
    converges quadratically near the minimiser, in a handful of passes over the data. The fit has converged
    when the gradient norm is below ``gradient_tol``, or when the Hessian is positive definite and the Newton
    decrement ``g^T H^{-1} g`` is below ``1e-12`` times the risk (the next step would change the risk by less than
    its rounding error; the trust region then stops before ``gradient_tol``). With ``influence=True`` the
    result carries the examples' influences (see :class:`AttentionFit`).

    Raises:
        ValueError: if the iteration stops without converging within ``max_iter`` iterations.
    """
    if isinstance(data, AttentionRegressionData):
        data = _Arrays.of(data.queries, data.keys, data.values, data.targets)
    d = data.keys_t.shape[1]
    w0 = np.zeros(d * d) if initial is None else as_float64_array(initial, "initial").reshape(-1)
    if w0.size != d * d:
        raise ValueError(f"initial must have shape [{d}, {d}], got {np.shape(initial)}")
    max_iter = positive_int(max_iter, "max_iter")
    cache = {}

    def terms(flat):
        key = flat.tobytes()
        if key not in cache:
            cache.clear()
            cache[key] = _risk_terms(flat.reshape(d, d), data, order=2)
        return cache[key]

    fit = minimize(
        lambda x: (terms(x)[0], terms(x)[1].reshape(-1)),
        w0,
        jac=True,
        hess=lambda x: terms(x)[2],
        method="trust-exact",
        options={"maxiter": max_iter, "gtol": gradient_tol},
    )
    risk, grad, hess = terms(fit.x)
    g = grad.reshape(-1)
    if np.linalg.norm(g) > gradient_tol:
        eigval = np.linalg.eigvalsh(hess)
        decrement = float(g @ np.linalg.solve(hess, g)) if eigval[0] > 0 else np.inf
        if not decrement <= 1e-12 * risk:
            raise ValueError(f"the fit did not converge in max_iter={max_iter} iterations ({fit.message})")
    psi = None
    if influence:
        _, _, hess, scores = _risk_terms(fit.x.reshape(d, d), data, order=3)
        psi = -np.linalg.solve(hess, scores.T).T
    return AttentionFit(
        W=fit.x.reshape(d, d), risk=risk, max_gradient=float(np.abs(grad).max()), iterations=fit.nit, influence=psi
    )


def fit_attention_parameter(
    data: AttentionRegressionData, *, initial=None, max_iter: int = 200, gradient_tol: float = 1e-9
) -> np.ndarray:
    """The minimiser ``W`` ``[d, d]`` of the empirical risk found by :func:`fit_attention`."""
    return fit_attention(data, initial=initial, max_iter=max_iter, gradient_tol=gradient_tol).W


@dataclass(frozen=True)
class ErmResult:
    """E3 for one objective (``mode``).

    * ``W_reference[j]`` ``[d, d]``: ``W*_L``, the minimiser of the empirical risk on ``reference_size`` reference
      sequences of length ``lengths[j]``, held out from the test set;
    * ``approximation[j] = |W*_L - Sigma^{-1}|_F`` and ``temperature[j] = <W*_L, Sigma^{-1}> / |Sigma^{-1}|^2``
      (the ``c_L`` of ``W*_L ~ c_L Sigma^{-1}``); ``reference_cov`` ``[J, d^2, J, d^2]`` the covariance of the
      ``vec(W*_L)`` over draws of the reference set (sandwich, from the influences of the reference sequences,
      which all lengths share, see :class:`AttentionFit`); ``approximation_cov`` ``[J, J]`` the covariance of the
      approximation terms (delta method), ``approximation_se`` its diagonal's square root and ``temperature_se``
      the standard error of ``c_L``;
    * ``excess[j, k, r] = R_test(W_hat_N) - R_test(W*_L)`` on the test set, for ``N = sample_sizes[k]``,
      repetition ``r``; ``excess_mean[j, k]`` its mean over repetitions. ``W_hat_N`` and ``W*_L`` are both fitted
      on data independent of the test set, so the excess estimates the difference of their population risks
      and can be negative.
    """

    mode: str
    lengths: np.ndarray
    sample_sizes: np.ndarray
    W_reference: np.ndarray
    reference_cov: np.ndarray
    approximation: np.ndarray
    approximation_cov: np.ndarray
    approximation_se: np.ndarray
    temperature: np.ndarray
    temperature_se: np.ndarray
    excess: np.ndarray
    excess_mean: np.ndarray


def approximation_terms(W_reference, reference_cov, target):
    """Distances ``|W*_L - target|_F`` ``[J]`` of reference fits ``W_reference`` ``[J, d, d]`` to ``target``
    ``[d, d]``, and their covariance ``[J, J]`` (delta method on ``reference_cov`` ``[J, d^2, J, d^2]``)."""
    W = as_float64_array(W_reference, "W_reference")
    target = as_float64_array(target, "target")
    if W.ndim != 3 or W.shape[1:] != target.shape:
        raise ValueError(f"W_reference must be [J, d, d] and target [d, d], got {W.shape} and {target.shape}")
    J = W.shape[0]
    gap = (W - target).reshape(J, -1)
    dist = np.linalg.norm(gap, axis=1)
    if np.any(dist == 0):
        raise ValueError("a reference fit equals the target: the distance has no derivative there")
    grad = gap / dist[:, None]  # derivative of |W - target|_F in vec(W)
    cov = as_float64_array(reference_cov, "reference_cov").reshape(J, gap.shape[1], J, gap.shape[1])
    return dist, np.einsum("ja,jakb,kb->jk", grad, cov, grad)


def erm_experiment(
    rng,
    mode: str,
    *,
    lengths,
    sample_sizes,
    repetitions: int,
    test_size: int,
    reference_size: int,
    key_cov,
    value_noise: float,
    label_noise: float = 0.1,
    progress: bool = False,
) -> ErmResult:
    """Run E3: approximation term ``|W*_L - Sigma^{-1}|`` and excess test risk of ERM versus ``N`` and ``L``.

    Three independent data sets, each drawn at the largest length: a reference set of ``reference_size``
    sequences, on which the reference minimiser ``W*_L`` is fitted; a test set of ``test_size`` sequences, on
    which every risk is measured; and, for every ``L``, ``N`` and repetition, a training set of ``N`` sequences,
    on which ``W_hat_N`` is fitted from ``W = 0``. Every length ``L`` uses the first ``L`` tokens of the
    reference and test sequences, which by exchangeability form sequences of length ``L`` (common random numbers
    across ``L``). The excess risk ``R_test(W_hat_N) - R_test(W*_L)`` is a paired difference on the test set,
    and no fit has seen the test set.
    """
    numpy_generator(rng)
    lengths = increasing_ints(lengths, "lengths", 2)
    sizes = increasing_ints(sample_sizes, "sample_sizes")
    reps = positive_int(repetitions, "repetitions")
    cov = as_float64_array(key_cov, "key_cov")
    target = np.linalg.inv(cov)
    test_size = positive_int(test_size, "test_size")
    reference_size = positive_int(reference_size, "reference_size")
    value_noise = nonnegative_real(value_noise, "value_noise")
    task = dict(mode=mode, key_cov=cov, value_noise=value_noise, label_noise=label_noise)
    J = lengths.size
    w_ref = np.zeros((J,) + cov.shape)
    influence = np.zeros((J, reference_size, cov.size))
    risk_ref = np.zeros(J)
    excess = np.zeros((J, sizes.size, reps))
    longest = int(lengths[-1])
    bar = tqdm(total=J * (1 + sizes.size * reps), desc=f"E3 {mode} fits", disable=not progress)
    with single_threaded(blas_only=True):
        reference = _Arrays.of(*_sample_task_arrays(rng, num_sequences=reference_size, length=longest, **task))
        test = _Arrays.of(*_sample_task_arrays(rng, num_sequences=test_size, length=longest, **task))
        contexts = [int(L) - (mode == "masked") for L in lengths]  # the masked task's query is not context
        for j, context in enumerate(contexts):
            fit = fit_attention(reference.prefix(context), influence=True)
            w_ref[j], influence[j] = fit.W, fit.influence
            risk_ref[j] = _risk_terms(fit.W, test.prefix(context), order=0)[0]
            bar.update()
        for j, L in enumerate(lengths):
            for k, n in enumerate(sizes):
                for r in range(reps):
                    train = _Arrays.of(*_sample_task_arrays(rng, num_sequences=int(n), length=int(L), **task))
                    W = fit_attention(train).W
                    excess[j, k, r] = _risk_terms(W, test.prefix(contexts[j]), order=0)[0] - risk_ref[j]
                    bar.update()
    bar.close()
    # joint sandwich covariance of the vec(W*_L): the lengths share the reference sequences
    reference_cov = np.einsum("jna,knb->jakb", influence, influence) / reference_size**2
    approximation, approx_cov = approximation_terms(w_ref, reference_cov, target)
    temp_influence = influence @ target.reshape(-1) / np.sum(target**2)  # [J, n]
    return ErmResult(
        mode=mode,
        lengths=lengths,
        sample_sizes=sizes,
        W_reference=w_ref,
        reference_cov=reference_cov,
        approximation=approximation,
        approximation_cov=approx_cov,
        approximation_se=np.sqrt(np.diag(approx_cov)),
        temperature=np.einsum("jab,ab->j", w_ref, target) / np.sum(target**2),
        temperature_se=np.sqrt(np.sum(temp_influence**2, axis=1)) / reference_size,
        excess=excess,
        excess_mean=excess.mean(axis=2),
    )
