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

Large sets. A set whose inputs ``x`` would take more than 512 MiB (about 9,000 sequences of the paper's task; or
any set drawn with ``dense=False``) keeps its hidden states and the generator state at the start of every block of
``eta`` instead of ``x`` and the noise: those are :class:`HMCBlocks`, made block by block on demand from ``eta``
drawn again, the same numbers bit for bit (torch's CPU ``randn`` gives the same float64 numbers in consecutive draws
of whole blocks of 16 as in one draw of the whole) in a few tens of MB per block.
:func:`attnpaths.paths.path_features` reads them block by block.
"""

from __future__ import annotations

import bisect
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

    def sample(self, num_examples: int, generator: torch.Generator, *, dense: bool | None = None) -> HMCDataset:
        """Draw ``num_examples`` class-sorted examples; see :func:`markov_optionE` (``dense`` too)."""
        return _sample(self, num_examples, generator, dense=dense)

    def skip(self, num_examples: int, generator: torch.Generator) -> None:
        """Advance ``generator`` past the data set that :meth:`sample` would draw (the same random numbers, drawn
        and dropped, without building the set): what comes next is what would follow that set."""
        even_int(num_examples, "num_examples (P, half per class)")
        torch_generator(generator, cpu=True)
        _saved_draws(self, int(num_examples), generator, advance=True)  # block by block: little memory


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
            rows ``N_f..N0-1`` the one-hot position of each token. A tensor, or for a large set (see
            :func:`markov_optionE`'s ``dense``) an :class:`HMCBlocks` that makes the same numbers on demand.
        y: ``[P]`` float64 labels, ``+1`` for the first ``P/2`` examples (class a), ``-1`` for the rest.
        hidden_states: ``[P, T_seq]`` int64 hidden states ``s_t in {+1, -1}``.
        noise: ``[P, N_f, T_seq]`` float64 noise added to the clean features (see :meth:`noise_components`); a
            tensor, or an :class:`HMCBlocks` where ``x`` is one.
        task: the generation parameters.
        seed: the generator seed when the set was drawn by :func:`paper_train_set` / :func:`paper_test_set`,
            else ``None``.
    """

    x: torch.Tensor | HMCBlocks
    y: torch.Tensor
    hidden_states: torch.Tensor
    noise: torch.Tensor | HMCBlocks
    task: HMCTask
    seed: int | None = None

    @property
    def num_examples(self) -> int:
        """Number of sequences ``P``."""
        return self.y.shape[0]

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
        noise = _whole(self.noise)
        along_a, along_b = _project(self.task.e_A, noise), _project(self.task.e_B, noise)
        return {"A": along_a, "B": along_b, "perp": noise - along_a - along_b}

    def resample(self, num_examples: int, generator: torch.Generator, *, dense: bool | None = None) -> HMCDataset:
        """A new data set with the same task parameters (hence the same ``v_+``, ``v_-``), e.g. a test set."""
        return self.task.sample(num_examples, generator, dense=dense)


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
    task: HMCTask, states: torch.Tensor, eta: torch.Tensor, keep_noise: bool = True
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``(x [P, N0, T_seq + 1], noise [P, N_f, T_seq] or None)`` from the hidden states ``[P, T_seq]`` and ``eta``.

    Every element gets the same floating-point operations, in the same order, as the whole-array expressions
    ``clean + (sigma_A a + sigma_B b + sigma_perp ((eta - a) - b))`` with ``a = e_A e_A^T eta`` and
    ``b = e_B e_B^T eta`` (:func:`_project`; the authors' grouping), so ``x`` and ``noise`` are the same bits; only
    the work is done a block of examples at a time, written straight into ``x``.
    """
    num_examples, n_f, n_tok = states.shape[0], task.feature_width, task.num_tokens
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
    return x, noise


def _labels(num_examples: int) -> torch.Tensor:
    """``[P]`` float64: ``+1`` for the first half (class a), ``-1`` for the rest."""
    y = torch.ones(num_examples, dtype=torch.float64)
    y[num_examples // 2 :] = -1.0
    return y


_DENSE_BYTES = 2**29
"""Largest ``x`` (in bytes) that a data set holds as a tensor when ``dense`` is ``None``: about 9,000 sequences of
the paper's task (``x``, ``noise`` and ``eta`` then take some 1.3 GB while they are made)."""

_DRAW_BLOCK = 512
"""Examples per block of ``eta`` drawn at once for an :class:`HMCBlocks` set (about 25 MB at the paper's size),
rounded up to whole groups of 16 numbers."""


def _draw_bounds(task: HMCTask, num_examples: int) -> tuple[int, ...]:
    """The first example of every block of ``eta`` drawn at once, then ``P``."""
    # torch's CPU randn (float64, contiguous, >= 16 numbers) draws one uniform per number, turns them into normals
    # 16 at a time and redraws the last 16 of a draw whose size is not a multiple of 16. Consecutive draws of
    # multiples of 16 numbers, the last one of at least 16, thus give the bits of one draw of the whole and leave
    # the generator in the same state (checked in tests/library/test_hmc_blocks.py).
    alignment = 16 // math.gcd(task.feature_width * task.seq_len, 16)  # examples per whole group of 16 numbers
    size = -(-_DRAW_BLOCK // alignment) * alignment
    starts = list(range(0, num_examples, size))
    if len(starts) > 1 and num_examples - starts[-1] < size:
        starts.pop()  # the last block takes the rest: at least `size` examples, hence at least 16 numbers
    return (*starts, num_examples)


@dataclass(frozen=True, eq=False)
class _SavedDraws:
    """The random draws of a data set kept compactly: the hidden states and, per block of ``eta`` (the blocks of
    :func:`_draw_bounds`) and after the last, the generator state before it is drawn (row ``k`` of
    ``checkpoints``, valid where ``known[k]``: filled as blocks are drawn, that of block 0 from the start)."""

    task: HMCTask
    hidden_states: torch.Tensor
    bounds: tuple[int, ...]
    checkpoints: torch.Tensor
    known: torch.Tensor

    @property
    def num_blocks(self) -> int:
        return len(self.bounds) - 1

    def eta(self, block: int) -> torch.Tensor:
        """``eta`` of the examples of ``block``, ``[rows, N_f, T_seq]``, drawn again from its checkpoint (the blocks
        before it drawn and dropped from the nearest checkpoint when it has none yet)."""
        known = int(self.known[: block + 1].nonzero().max())
        generator = torch.Generator()
        generator.set_state(self.checkpoints[known].clone())  # a row of its own: set_state reads a whole storage
        for k in range(known, block + 1):
            rows = self.bounds[k + 1] - self.bounds[k]
            shape = (rows, self.task.feature_width, self.task.seq_len)
            eta = torch.randn(shape, generator=generator, dtype=torch.float64)
            # copied into the rows made at the start: a new small tensor per block, kept between the large blocks
            # freed and made again, would split the heap and hold on to several GB over a pass at P = 100,000
            self.checkpoints[k + 1] = generator.get_state()
            self.known[k + 1] = True
        return eta


def _saved_draws(task: HMCTask, num_examples: int, generator: torch.Generator, advance: bool) -> _SavedDraws:
    """The draws of a data set of ``num_examples`` sequences, ``eta`` left undrawn unless ``advance``: then drawn
    block by block and dropped, leaving ``generator`` where one draw of the whole set leaves it."""
    coins = torch.rand(num_examples, task.seq_len, generator=generator, dtype=torch.float64)
    bounds, state = _draw_bounds(task, num_examples), generator.get_state()
    checkpoints = state.new_empty((len(bounds), state.numel()))
    checkpoints[0] = state
    known = torch.zeros(len(bounds), dtype=torch.bool)
    known[0] = True
    draws = _SavedDraws(task, _hidden_states(task, coins), bounds, checkpoints, known)
    if advance:
        for block in range(draws.num_blocks):
            draws.eta(block)
        generator.set_state(draws.checkpoints[draws.num_blocks].clone())
    return draws


class HMCBlocks:
    """The inputs ``x`` ``[P, N0, T_seq + 1]`` or the noise ``[P, N_f, T_seq]`` of a large HMC data set, made on
    demand block by block from its saved random draws: the very numbers (bit for bit) that a set drawn with
    ``dense=True`` holds, with a few tens of MB per block in memory instead of the whole.

    Indexing the examples (``x[i]``, ``x[a:b]``, ``x[a:b, :N_f]``, with a positive step) makes the blocks that hold
    them only and returns a tensor; :meth:`batches` goes through every example in order (what
    :func:`attnpaths.paths.path_features` reads); :meth:`dense`, ``numpy.asarray`` and torch functions of it
    (``torch.equal(x, ...)``) make the whole tensor.
    """

    dtype = torch.float64
    ndim = 3

    def __init__(self, draws, part: str):  # draws: the _SavedDraws of a data set
        if part not in ("x", "noise"):
            raise ValueError(f"part must be 'x' or 'noise', got {part!r}")
        self._draws, self._part = draws, part
        self._last: tuple[int, torch.Tensor] | None = None  # (block, its rows): the last block made

    @property
    def shape(self) -> torch.Size:
        """``[P, N0, T_seq + 1]`` (``x``) or ``[P, N_f, T_seq]`` (noise)."""
        task, rows = self._draws.task, self._draws.bounds[-1]
        if self._part == "x":
            return torch.Size((rows, task.input_width, task.num_tokens))
        return torch.Size((rows, task.feature_width, task.seq_len))

    def __len__(self) -> int:
        return self.shape[0]

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_last": None}  # pickled without the last block made (tens of MB)

    def __repr__(self) -> str:
        return f"HMCBlocks({self._part}, shape={tuple(self.shape)}, {self._draws.num_blocks} blocks)"

    def _block(self, block: int) -> torch.Tensor:
        """The rows of ``block`` (the last one made is kept: consecutive batches mostly share a block)."""
        if self._last is None or self._last[0] != block:
            draws = self._draws
            states = draws.hidden_states[draws.bounds[block] : draws.bounds[block + 1]]
            x, noise = _inputs(draws.task, states, draws.eta(block), keep_noise=self._part == "noise")
            self._last = (block, noise if self._part == "noise" else x)
        return self._last[1]

    def rows(self, start: int, stop: int) -> torch.Tensor:
        """Examples ``start, ..., stop - 1`` (``0 <= start <= stop <= P``) as a tensor, from their blocks only.

        The tensor starts where row ``start`` of the whole tensor would, modulo 64 bytes: MKL's batched matrix
        products (e.g. in :func:`attnpaths.paths.path_features`) can round differently with the alignment of
        their operands, and so give the numbers they give on the slices of the whole tensor."""
        if not 0 <= start <= stop <= len(self):
            raise ValueError(f"start, stop must satisfy 0 <= start <= stop <= {len(self)}, got {start}, {stop}")
        shape = (stop - start, *self.shape[1:])
        size, row = math.prod(shape), math.prod(shape[1:])
        buffer = torch.empty(size + 8, dtype=torch.float64)  # 8 float64s: 64 bytes of room to shift by
        shift = (start * row - buffer.data_ptr() // 8) % 8
        values = buffer[shift : shift + size].view(shape)
        bounds = self._draws.bounds
        for block in range(bisect.bisect_right(bounds, start) - 1, bisect.bisect_left(bounds, stop)):
            first, last = max(start, bounds[block]), min(stop, bounds[block + 1])
            values[first - start : last - start] = self._block(block)[first - bounds[block] : last - bounds[block]]
        return values

    def batches(self, batch_size: int):
        """Every example in order, as the slices ``[start : start + batch_size]`` (``batch_size`` >= 1) of the whole
        tensor (:meth:`rows`); each block is made once."""
        for start in range(0, len(self), batch_size):
            yield self.rows(start, min(start + batch_size, len(self)))

    def dense(self) -> torch.Tensor:
        """The whole tensor, ``shape``, float64."""
        whole = torch.empty(self.shape, dtype=torch.float64)
        bounds = self._draws.bounds
        for block in range(self._draws.num_blocks):
            whole[bounds[block] : bounds[block + 1]] = self._block(block)
        return whole

    def __getitem__(self, index):
        first, rest = (index[0], index[1:]) if isinstance(index, tuple) and index else (index, ())
        if isinstance(first, slice) and (first.step is None or first.step > 0):
            start, stop, step = first.indices(len(self))
            return self.rows(start, max(start, stop))[(slice(None, None, step), *rest)]
        if isinstance(first, int) and not isinstance(first, bool) and -len(self) <= first < len(self):
            row = first % len(self)
            return self.rows(row, row + 1)[(0, *rest)]
        return self.dense()[index]

    def __array__(self, dtype=None, copy=None):
        values = self.dense().numpy()
        return values if dtype is None else values.astype(dtype)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        # a torch function gets the whole tensor in place of the blocks
        def whole(value):
            if isinstance(value, (list, tuple)):
                return type(value)(whole(item) for item in value)
            return value.dense() if isinstance(value, HMCBlocks) else value

        return func(*whole(tuple(args)), **{key: whole(value) for key, value in (kwargs or {}).items()})


def _whole(values: torch.Tensor | HMCBlocks) -> torch.Tensor:
    """``values`` as a tensor (an :class:`HMCBlocks` made whole)."""
    return values.dense() if isinstance(values, HMCBlocks) else values


def _sample(
    task: HMCTask,
    num_examples: int,
    generator: torch.Generator,
    seed: int | None = None,
    dense: bool | None = None,
    private_generator: bool = False,
) -> HMCDataset:
    """The data set of :meth:`HMCTask.sample`; ``private_generator``: nothing draws from ``generator`` afterwards,
    so a set made of :class:`HMCBlocks` need not draw ``eta`` now to leave it past the set."""
    even_int(num_examples, "num_examples (P, half per class)")
    torch_generator(generator, cpu=True)
    if dense is not None and not isinstance(dense, bool):
        raise ValueError(f"dense must be True, False or None (by size), got {dense!r}")
    num_examples, y = int(num_examples), _labels(int(num_examples))
    if dense is None:
        dense = num_examples * task.input_width * task.num_tokens * 8 <= _DENSE_BYTES
    if dense:
        coins, eta = _random_draws(task, num_examples, generator)
        states = _hidden_states(task, coins)
        x, noise = _inputs(task, states, eta)
        return HMCDataset(x=x, y=y, hidden_states=states, noise=noise, task=task, seed=seed)
    draws = _saved_draws(task, num_examples, generator, advance=not private_generator)
    x, noise = HMCBlocks(draws, "x"), HMCBlocks(draws, "noise")
    return HMCDataset(x=x, y=y, hidden_states=draws.hidden_states, noise=noise, task=task, seed=seed)


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
    coins, eta = _random_draws(task, num_examples, generator)
    x, _ = _inputs(task, _hidden_states(task, coins), eta, keep_noise=False)
    return x, _labels(num_examples)


def markov_optionE(
    num_examples: int, generator: torch.Generator, *, dense: bool | None = None, **parameters
) -> HMCDataset:
    """Draw the HMC data set ``markov_optionE`` (sec-hmc-task).

    Args:
        num_examples: ``P``, even; the first ``P/2`` examples are class a (``y = +1``), the rest class b.
        generator: CPU ``torch.Generator``; ``torch.Generator().manual_seed(s)`` reproduces the authors'
            ``seed_everything(s)`` draws (see the module docstring).
        dense: ``True``: ``x`` and the noise are tensors; ``False``: :class:`HMCBlocks`, the same numbers made block
            by block on demand (``eta`` is drawn once now to leave ``generator`` past the set, and again when
            they are made); ``None`` (default): tensors while ``x`` takes at most 512 MiB (about 9,000 sequences
            of the paper's task), else blocks.
        parameters: :class:`HMCTask` fields overriding the paper's defaults (the stay probabilities ``p_a_plus``,
            ``p_a_minus``, ``p_b_plus``, ``p_b_minus``, ``seq_len``, ``feature_width`` and the noise strengths
            ``sigma_perp``, ``sigma_A``, ``sigma_B``).

    Returns:
        :class:`HMCDataset` with ``x`` of shape ``[P, N_f + T_seq + 1, T_seq + 1]``.
    """
    return HMCTask(**parameters).sample(num_examples, generator, dense=dense)


def _paper_set(seed: int, num_examples: int, dense: bool | None, parameters: dict) -> HMCDataset:
    task = HMCTask(**parameters)
    generator = torch.Generator().manual_seed(seed)
    return _sample(task, num_examples, generator, seed=seed, dense=dense, private_generator=True)


def paper_train_set(num_examples: int = 100, *, dense: bool | None = None, **parameters) -> HMCDataset:
    """The authors' training set: seed 27, ``P = 100`` (sec-hmc-task).

    ``parameters`` are :class:`HMCTask` fields overriding the paper's defaults, e.g. ``sigma_perp=5.0`` for
    the noisier data of Fig. 2e. ``dense`` as in :func:`markov_optionE` (a large set draws ``eta`` only when
    its inputs are made: e.g. ``P = 100,000`` takes some 25 MB until then).
    """
    return _paper_set(TRAIN_SEED, num_examples, dense, parameters)


def paper_test_set(num_examples: int = 1000, *, dense: bool | None = None, **parameters) -> HMCDataset:
    """The authors' test set: seed 59, 1000 examples (500 per class), same ``v_+``, ``v_-`` as the
    training set (sec-hmc-task). ``parameters`` and ``dense`` as in :func:`paper_train_set`."""
    return _paper_set(TEST_SEED, num_examples, dense, parameters)
