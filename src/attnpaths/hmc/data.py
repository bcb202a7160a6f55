"""Hidden-Markov-chain (HMC) sequence classification data, dataset ``markov_optionE`` (sec-hmc-task).

Generative process, per example:

1. hidden states ``s_t in {+1, -1}``, ``t = 1..T_seq``; ``s_1 = +1`` iff a uniform draw ``u >= 0.5``;
2. transitions: stay with probability ``p_plus`` (from ``+1``) or ``p_minus`` (from ``-1``), i.e. stay iff a
   uniform draw ``u < p``; class a (label ``y = +1``) uses ``(p_a_plus, p_a_minus)``, class b (``y = -1``)
   uses ``(p_b_plus, p_b_minus)``;
3. visible features ``v_{s_t} + noise_t`` in ``R^{N_f}`` with ``v_+ = sqrt(2) (1 x N_f/2, 0 x N_f/2)`` and
   ``v_- = sqrt(2) (0 x N_f/2, 1 x N_f/2)`` (so ``|v_+|^2 = |v_-|^2 = N_f`` and ``v_+ . v_- = 0``);
4. noise ``sigma_A P_A eta + sigma_B P_B eta + sigma_perp (I - P_A - P_B) eta`` with ``eta ~ N(0, I)``,
   ``P_A = e_A e_A^T``, ``e_A = (v_+ + v_-)/|v_+ + v_-|`` and ``P_B = e_B e_B^T``, ``e_B = (v_+ - v_-)/|...|``;
5. a BOS token with all-zero features at position 0, and a one-hot position code of size ``T_seq + 1``
   stacked below the features: ``x`` in ``R^{N0 x (T_seq + 1)}`` with ``N0 = N_f + T_seq + 1``.

Examples are class-sorted: the first ``P/2`` have ``y = +1``, the last ``P/2`` have ``y = -1``.

Noise naming. This module uses the PAPER's names. The paper's "perpendicular" noise ``sigma_perp`` (out of
the plane spanned by ``v_+`` and ``v_-``) is the authors' code argument ``out_of_plane_noise_strength``; the
paper's in-plane ("parallel") noise has two components, ``sigma_A`` along ``v_+ + v_-`` (code
``parallel_noise_strength``) and ``sigma_B`` along ``v_+ - v_-`` (code ``perpendicular_noise_strength``).
Only the ``sigma_B`` component can change the attention of the hand-built heads (:mod:`attnpaths.hmc.heads`),
whose query/key vector is ``v_+ - v_-``.

Reproducing the authors' data. The authors seed torch's global generator (``seed_everything(27)`` for the
training set, ``59`` for the test set) and then draw, for each example in order (class a first), one
float64 ``torch.rand`` for ``s_1`` and ``T_seq - 1`` for the transitions, and finally one float64 ``randn``
of shape ``[P, N_f, T_seq]`` for ``eta``. A fresh ``torch.Generator().manual_seed(s)`` yields the same
stream as the global generator seeded with ``s``, and :func:`markov_optionE` consumes it in the same order,
so the hidden states and ``eta`` are bit-identical to the authors'. The only possible difference in ``x`` is
the rounding of the two rank-one noise projections ``e e^T eta`` (at most ~1e-15): its summation order
depends on the contraction path torch picks for the authors' three-operand einsum (with or without
opt_einsum installed) and on the BLAS library.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .._validation import even_int, nonnegative_real, positive_int, probability, torch_generator

#: Seeds of the authors' training and test sets (``seed_everything`` in ``prepare_dataset_markov_optionE``).
TRAIN_SEED = 27
TEST_SEED = 59


@dataclass(frozen=True)
class HMCTask:
    """Parameters of the HMC task (sec-hmc-task); defaults are the paper's values (Fig. 2c,d).

    Attributes:
        p_a_plus, p_a_minus: stay probabilities from ``+1`` / ``-1`` of class a (label ``y = +1``).
        p_b_plus, p_b_minus: the same for class b (label ``y = -1``).
        seq_len: ``T_seq``, number of visible tokens (the input has ``T_seq + 1`` tokens with BOS).
        feature_width: ``N_f``, even width of the visible features.
        sigma_perp: paper's perpendicular (out-of-plane) noise; code ``out_of_plane_noise_strength``.
        sigma_A: in-plane noise along ``v_+ + v_-``; code ``parallel_noise_strength``.
        sigma_B: in-plane noise along ``v_+ - v_-``; code ``perpendicular_noise_strength``.
    """

    p_a_plus: float = 0.7
    p_a_minus: float = 0.7
    p_b_plus: float = 0.3
    p_b_minus: float = 0.3
    seq_len: int = 30
    feature_width: int = 200
    sigma_perp: float = 1.0
    sigma_A: float = 1.0
    sigma_B: float = 1.0

    def __post_init__(self):
        for name in ("p_a_plus", "p_a_minus", "p_b_plus", "p_b_minus"):
            object.__setattr__(self, name, probability(getattr(self, name), name))
        object.__setattr__(self, "seq_len", positive_int(self.seq_len, "seq_len"))
        object.__setattr__(self, "feature_width", even_int(self.feature_width, "feature_width"))
        for name in ("sigma_perp", "sigma_A", "sigma_B"):
            object.__setattr__(self, name, nonnegative_real(getattr(self, name), name))

    @property
    def num_tokens(self) -> int:
        """``T_seq + 1`` (BOS included)."""
        return self.seq_len + 1

    @property
    def input_width(self) -> int:
        """``N0 = N_f + T_seq + 1`` (features stacked above the one-hot positions)."""
        return self.feature_width + self.num_tokens

    @property
    def v_plus(self) -> torch.Tensor:
        """``v_+ = sqrt(2) (1, ..., 1, 0, ..., 0)``, shape ``[N_f]``, float64."""
        half = self.feature_width // 2
        ones_then_zeros = torch.cat([torch.ones(half, dtype=torch.float64), torch.zeros(half, dtype=torch.float64)])
        return ones_then_zeros * math.sqrt(2.0)

    @property
    def v_minus(self) -> torch.Tensor:
        """``v_- = sqrt(2) (0, ..., 0, 1, ..., 1)``, shape ``[N_f]``, float64."""
        return self.v_plus.flip(0)

    @property
    def e_A(self) -> torch.Tensor:
        """Unit vector along ``v_+ + v_-`` (the ``sigma_A`` noise direction), shape ``[N_f]``."""
        return _unit(self.v_plus + self.v_minus)

    @property
    def e_B(self) -> torch.Tensor:
        """Unit vector along ``v_+ - v_-`` (the ``sigma_B`` noise direction), shape ``[N_f]``."""
        return _unit(self.v_plus - self.v_minus)

    def sample(self, num_examples: int, generator: torch.Generator) -> HMCDataset:
        """Draw ``num_examples`` class-sorted examples; see :func:`markov_optionE`."""
        return _sample(self, num_examples, generator)

    def skip(self, num_examples: int, generator: torch.Generator) -> None:
        """Advance ``generator`` past the data set that :meth:`sample` would draw (the same random numbers, drawn
        and dropped, without building the set): what comes next is what would follow that set."""
        even_int(num_examples, "num_examples (P, half per class)")
        torch_generator(generator, cpu=True)
        _random_draws(self, int(num_examples), generator)


def _unit(vector: torch.Tensor) -> torch.Tensor:
    # torch.dot + sqrt, as in the authors' code, so the directions agree to the last bit.
    return vector / torch.sqrt(torch.dot(vector, vector))


def _coefficients(direction: torch.Tensor, vectors: torch.Tensor) -> torch.Tensor:
    """``e^T v`` for every example and token: ``[N_f]``, ``[P, N_f, T] -> [P, T]``."""
    # A batched row-vector product per example: the same sums as the einsum "b,cbd->cd" (one [1, N_f] x [N_f, P T]
    # product after a transposed copy of the whole array), without the copy; the same bits on the Intel CPU with
    # MKL seen (another BLAS kernel may round differently: tests/library/test_hmc_data.py checks up to rounding).
    return torch.bmm(direction.expand(vectors.shape[0], 1, -1), vectors).squeeze(1)


def _project(direction: torch.Tensor, vectors: torch.Tensor) -> torch.Tensor:
    """``e e^T v`` for every example and token: ``[N_f]``, ``[P, N_f, T] -> [P, N_f, T]``."""
    # Coefficients first: far cheaper than forming e e^T, and the order opt_einsum picks for the authors'
    # three-operand einsum (likely their case: jax, needed by their numpyro sampler, depends on opt_einsum).
    return direction[None, :, None] * _coefficients(direction, vectors)[:, None, :]


@dataclass(frozen=True, eq=False)
class HMCDataset:
    """A class-sorted HMC data set (sec-hmc-task).

    Attributes:
        x: ``[P, N0, T_seq + 1]`` float64 inputs: rows ``0..N_f-1`` features (column 0 = BOS, all zero),
            rows ``N_f..N0-1`` the one-hot position of each token.
        y: ``[P]`` float64 labels, ``+1`` for the first ``P/2`` examples (class a), ``-1`` for the rest.
        hidden_states: ``[P, T_seq]`` int64 hidden states ``s_t in {+1, -1}``.
        noise: ``[P, N_f, T_seq]`` float64 noise added to the clean features (see :meth:`noise_components`).
        task: the generation parameters.
        seed: the generator seed when the set was drawn by :func:`paper_train_set` / :func:`paper_test_set`,
            else ``None``.
    """

    x: torch.Tensor
    y: torch.Tensor
    hidden_states: torch.Tensor
    noise: torch.Tensor
    task: HMCTask
    seed: int | None = None

    @property
    def num_examples(self) -> int:
        """Number of sequences ``P``."""
        return self.x.shape[0]

    @property
    def v_plus(self) -> torch.Tensor:
        """The task's ``v_+``, shape ``[N_f]`` (:attr:`HMCTask.v_plus`)."""
        return self.task.v_plus

    @property
    def v_minus(self) -> torch.Tensor:
        """The task's ``v_-``, shape ``[N_f]`` (:attr:`HMCTask.v_minus`)."""
        return self.task.v_minus

    @property
    def clean_features(self) -> torch.Tensor:
        """``v_{s_t}`` for every example and visible token, ``[P, N_f, T_seq]`` float64."""
        plus = (self.hidden_states == 1).unsqueeze(1)
        return torch.where(plus, self.v_plus[None, :, None], self.v_minus[None, :, None])

    @property
    def features(self) -> torch.Tensor:
        """The noisy visible features ``x[:, :N_f, 1:]``, ``[P, N_f, T_seq]``."""
        return self.x[:, : self.task.feature_width, 1:]

    def noise_components(self) -> dict[str, torch.Tensor]:
        """The noise split by direction, each ``[P, N_f, T_seq]``: ``"A"`` (along ``e_A``, std ``sigma_A``),
        ``"B"`` (along ``e_B``, std ``sigma_B``) and ``"perp"`` (the ``N_f - 2`` out-of-plane directions,
        std ``sigma_perp`` each). They sum to :attr:`noise` up to rounding."""
        along_a, along_b = _project(self.task.e_A, self.noise), _project(self.task.e_B, self.noise)
        return {"A": along_a, "B": along_b, "perp": self.noise - along_a - along_b}

    def resample(self, num_examples: int, generator: torch.Generator) -> HMCDataset:
        """A new data set with the same task parameters (hence the same ``v_+``, ``v_-``), e.g. a test set."""
        return self.task.sample(num_examples, generator)


def _random_draws(task: HMCTask, num_examples: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Every random number a data set of ``num_examples`` sequences uses, in the order drawn: the coins of the
    hidden chains ``[P, T_seq]`` (uniform) and the feature noise ``eta`` ``[P, N_f, T_seq]`` (standard normal)."""
    # One float64 uniform per decision, example by example (s_1 first, then the T_seq - 1 transitions):
    # the authors' order of torch.rand(1) calls. torch's CPU uniform kernel fills a tensor sequentially, so
    # one [P, T_seq] draw is the same stream (checked in tests/library/test_hmc_data.py).
    coins = torch.rand(num_examples, task.seq_len, generator=generator, dtype=torch.float64)
    eta = torch.randn(num_examples, task.feature_width, task.seq_len, generator=generator, dtype=torch.float64)
    return coins, eta


def _hidden_states(task: HMCTask, coins: torch.Tensor) -> torch.Tensor:
    """The hidden chains ``s_t in {+1, -1}`` ``[P, T_seq]`` from their coins ``[P, T_seq]``."""
    num_examples = coins.shape[0]
    half = num_examples // 2
    stay_plus = torch.tensor([task.p_a_plus] * half + [task.p_b_plus] * half, dtype=torch.float64)
    stay_minus = torch.tensor([task.p_a_minus] * half + [task.p_b_minus] * half, dtype=torch.float64)
    states = torch.empty(num_examples, task.seq_len, dtype=torch.int64)
    states[:, 0] = torch.where(coins[:, 0] >= 0.5, 1, -1)
    for t in range(1, task.seq_len):
        previous = states[:, t - 1]
        stay = coins[:, t] < torch.where(previous == 1, stay_plus, stay_minus)
        states[:, t] = torch.where(stay, previous, -previous)
    return states


_BLOCK = 16
"""Examples per block of the element-wise work of :func:`_inputs` (about 0.8 MB of noise at the paper's size):
its temporaries stay in the cache instead of a dozen passes over the whole ``[P, N_f, T_seq]`` arrays."""


def _inputs(
    task: HMCTask, coins: torch.Tensor, eta: torch.Tensor, keep_noise: bool = True
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """``(x [P, N0, T_seq + 1], hidden states [P, T_seq], noise [P, N_f, T_seq] or None)`` from the random draws.

    Every element gets the same floating-point operations, in the same order, as the whole-array expressions
    ``clean + (sigma_A a + sigma_B b + sigma_perp ((eta - a) - b))`` with ``a = e_A e_A^T eta`` and
    ``b = e_B e_B^T eta`` (:func:`_project`; the authors' grouping), so ``x`` and ``noise`` are the same bits; only
    the work is done a block of examples at a time, written straight into ``x``.
    """
    num_examples, n_f, n_tok = coins.shape[0], task.feature_width, task.num_tokens
    states = _hidden_states(task, coins)
    coefficient_a, coefficient_b = _coefficients(task.e_A, eta), _coefficients(task.e_B, eta)
    e_a, e_b = task.e_A[None, :, None], task.e_B[None, :, None]
    v_plus, v_minus = task.v_plus[None, :, None], task.v_minus[None, :, None]
    plus = (states == 1).unsqueeze(1)
    x = torch.empty(num_examples, task.input_width, n_tok, dtype=torch.float64)
    x[:, :n_f, 0] = 0.0  # BOS: all-zero features
    x[:, n_f:, :] = torch.eye(n_tok, dtype=torch.float64)
    noise = torch.empty_like(eta) if keep_noise else None
    # block buffers, reused: along e_A, along e_B, out of the plane, the clean features
    buffers = [torch.empty(min(_BLOCK, num_examples), n_f, task.seq_len, dtype=torch.float64) for _ in range(4)]
    for start in range(0, num_examples, _BLOCK):
        rows = slice(start, min(start + _BLOCK, num_examples))
        along_a, along_b, out_of_plane, clean = (b[: rows.stop - start] for b in buffers)
        torch.mul(e_a, coefficient_a[rows, None, :], out=along_a)
        torch.mul(e_b, coefficient_b[rows, None, :], out=along_b)
        torch.sub(eta[rows], along_a, out=out_of_plane).sub_(along_b).mul_(task.sigma_perp)
        block_noise = along_a.mul_(task.sigma_A).add_(along_b.mul_(task.sigma_B)).add_(out_of_plane)
        torch.where(plus[rows], v_plus, v_minus, out=clean)
        torch.add(clean, block_noise, out=x[rows, :n_f, 1:])
        if noise is not None:
            noise[rows] = block_noise
    return x, states, noise


def _labels(num_examples: int) -> torch.Tensor:
    """``[P]`` float64: ``+1`` for the first half (class a), ``-1`` for the rest."""
    y = torch.ones(num_examples, dtype=torch.float64)
    y[num_examples // 2 :] = -1.0
    return y


def _sample(task: HMCTask, num_examples: int, generator: torch.Generator, seed: int | None = None) -> HMCDataset:
    even_int(num_examples, "num_examples (P, half per class)")
    torch_generator(generator, cpu=True)
    num_examples = int(num_examples)
    x, states, noise = _inputs(task, *_random_draws(task, num_examples, generator))
    return HMCDataset(x=x, y=_labels(num_examples), hidden_states=states, noise=noise, task=task, seed=seed)


def sample_inputs(task: HMCTask, num_examples: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """``(x [P, N0, T_seq + 1], y [P])`` of :meth:`HMCTask.sample` (the same random draws, the same bits) without
    the rest of the :class:`HMCDataset` (its noise and hidden states are not kept): for streams of chunks.

    Args:
        task: the task.
        num_examples: ``P``, even.
        generator: CPU ``torch.Generator``, advanced exactly as by :meth:`HMCTask.sample`.
    """
    even_int(num_examples, "num_examples (P, half per class)")
    torch_generator(generator, cpu=True)
    num_examples = int(num_examples)
    x, _, _ = _inputs(task, *_random_draws(task, num_examples, generator), keep_noise=False)
    return x, _labels(num_examples)


def markov_optionE(
    num_examples: int,
    generator: torch.Generator,
    *,
    p_a_plus: float = 0.7,
    p_a_minus: float = 0.7,
    p_b_plus: float = 0.3,
    p_b_minus: float = 0.3,
    seq_len: int = 30,
    feature_width: int = 200,
    sigma_perp: float = 1.0,
    sigma_A: float = 1.0,
    sigma_B: float = 1.0,
) -> HMCDataset:
    """Draw the HMC data set ``markov_optionE`` (sec-hmc-task).

    Args:
        num_examples: ``P``, even; the first ``P/2`` examples are class a (``y = +1``), the rest class b.
        generator: CPU ``torch.Generator``; ``torch.Generator().manual_seed(s)`` reproduces the authors'
            ``seed_everything(s)`` draws (see the module docstring).
        p_a_plus, p_a_minus, p_b_plus, p_b_minus: stay probabilities (paper: 0.7, 0.7, 0.3, 0.3).
        seq_len: ``T_seq`` (paper: 30).
        feature_width: ``N_f``, even (paper: 200).
        sigma_perp: paper's perpendicular noise, code ``out_of_plane_noise_strength`` (1 in Fig. 2c,d; 5 in 2e).
        sigma_A: in-plane noise along ``v_+ + v_-``, code ``parallel_noise_strength`` (paper runs: 1).
        sigma_B: in-plane noise along ``v_+ - v_-``, code ``perpendicular_noise_strength`` (paper runs: 1).

    Returns:
        :class:`HMCDataset` with ``x`` of shape ``[P, N_f + T_seq + 1, T_seq + 1]``.
    """
    task = HMCTask(
        p_a_plus=p_a_plus,
        p_a_minus=p_a_minus,
        p_b_plus=p_b_plus,
        p_b_minus=p_b_minus,
        seq_len=seq_len,
        feature_width=feature_width,
        sigma_perp=sigma_perp,
        sigma_A=sigma_A,
        sigma_B=sigma_B,
    )
    return task.sample(num_examples, generator)


def _paper_set(seed: int, num_examples: int, parameters: dict) -> HMCDataset:
    task = HMCTask(**parameters)
    return _sample(task, num_examples, torch.Generator().manual_seed(seed), seed=seed)


def paper_train_set(num_examples: int = 100, **parameters) -> HMCDataset:
    """The authors' training set: seed 27, ``P = 100`` (sec-hmc-task).

    ``parameters`` are :class:`HMCTask` fields overriding the paper's defaults, e.g. ``sigma_perp=5.0`` for
    the noisier data of Fig. 2e.
    """
    return _paper_set(TRAIN_SEED, num_examples, parameters)


def paper_test_set(num_examples: int = 1000, **parameters) -> HMCDataset:
    """The authors' test set: seed 59, 1000 examples (500 per class), same ``v_+``, ``v_-`` as the
    training set (sec-hmc-task). ``parameters`` as in :func:`paper_train_set`."""
    return _paper_set(TEST_SEED, num_examples, parameters)
