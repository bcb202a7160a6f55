"""The data's sufficient statistics for the theory when there are more examples than features (eq-action,
eq-predictor, eq-kernel).

With the scaled path features flattened, ``F[mu, (i, a)] = X^mu_{i a}`` (``[P, D]``, ``D = N0 n_paths``, the path
index ``a`` fastest; :func:`attnpaths.kernels.scaled_features`), the kernel of (eq-kernel) is
``K(U) = F (I_N0 (x) U) F^T``: its rank is at most ``D``. Everything the action (eq-action) and the predictor
(eq-predictor) need of the data is then in the Gram matrix ``Gram = F^T F`` (``[D, D]``), the vector
``b = F^T y`` (``[D]``), ``y^T y`` and ``P``:

* by the matrix determinant lemma, ``log det(K + T I_P) = (P - D) log T + log det(R A R^T + T I_D)`` for any
  ``R`` with ``R^T R = Gram`` (``A = I_N0 (x) U``);
* by Woodbury, ``y^T (K + T I_P)^{-1} y = (y^T y - b^T (T A^{-1} + Gram)^{-1} b) / T``, and for any ``y~`` with
  ``R^T y~ = b`` the same holds with ``R``, ``y~`` in place of ``F``, ``y``; so
  ``S_en(F, y) = S_en(R, y~) + (P - r) log T + (y^T y - |y~|^2) / T`` (``r`` the rows of ``R``), the derivatives
  in ``U`` are those of the small problem, and so are the predictor's mean and variance
  (``F^T (K + T I)^{-1} F`` and ``F^T (K + T I)^{-1} y`` are functions of ``Gram`` and ``b`` only).

:class:`GramStatistics` accumulates ``Gram``, ``b``, ``y^T y`` and ``P`` over chunks of examples;
:func:`equivalent_problem` turns them into the ``r <= D`` rows ``R`` (from the eigendecomposition of ``Gram``,
which needs no inverse of ``U`` and no Cholesky factor of a singular ``Gram``) with their targets ``y~`` and the
constant. Exact, not an approximation: the results agree with the ``P x P`` computation up to rounding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from scipy.linalg.blas import dsyrk as symmetric_rank_k

from ._validation import heads_tuple, labelled_examples, positive_int
from .attention import READOUTS

DEFAULT_BLOCK_SIZE = 2048
"""Examples per block of :class:`GramStatistics` (a ``[block, D]`` float64 buffer: 15 MB at ``D = 924``)."""


class GramStatistics:
    """``Gram = sum_mu f_mu f_mu^T``, ``b = sum_mu y_mu f_mu``, ``y^T y`` and ``P`` of path features, accumulated
    over chunks of examples (``f_mu = xi(x^mu)`` flattened to ``D = N0 n_paths`` numbers, path index fastest; the
    *raw* features, not scaled: :meth:`scaled` applies the ``s0 / (N0 n_paths)`` of
    :func:`attnpaths.kernels.scaled_features`): all that the action (eq-action) and the predictor (eq-predictor)
    need of the data when the kernel ``K(U) = F (I_N0 (x) U) F^T`` (eq-kernel) has more rows than rank.

    Memory is ``D^2`` numbers and one block of ``block_size`` examples whatever ``P`` (twice that while a chunk
    that completes a block is added), so ``P`` is limited by time, not memory. The sums are float64 and in a fixed
    order: the examples are copied, in the order given, into blocks of ``block_size`` rows (a buffer), and each
    full block is added to the sums (BLAS ``dsyrk`` for the lower triangle of ``Gram``) before the next; the last,
    partial block is added when the statistics are read. So the statistics do not depend on how the examples were
    cut into chunks: chunks of any sizes give the same numbers as one call with every example (the same block
    sums in the same order). :meth:`update` adds a chunk all or nothing, so an interrupted loop over chunks can
    be resumed at the chunk it stopped in.

    The statistics also record what the features were made from, where the caller says so (the doors of a model's
    own attention do, :mod:`attnpaths.attention_batches`): ``heads`` ``(H_1, ..., H_L)``, checked against
    ``n_paths`` and by :func:`attnpaths.theory.solve_from_statistics`, and the ``readout`` of the last layer; and
    which values the labels took while there were at most two (:attr:`label_values`), so that 0/1 labels can be
    refused as the in-memory doors refuse them.

    Args:
        block_size: examples per block, an integer >= 1 (the same for two sets of statistics to be equal bit for
            bit).
        heads: ``(H_1, ..., H_L)`` of the features' paths, or None (not recorded).
        readout: the last layer's readout of the features (one of :data:`attnpaths.attention.READOUTS`), or None.

    Example::

        stats = GramStatistics()
        for features, y in chunks:            # features [B, N0, n_paths], y [B]
            stats.update(features, y)
        sol = solve_from_statistics(stats, heads=(2, 2), width=10, temperature=0.01)
    """

    def __init__(self, block_size: int = DEFAULT_BLOCK_SIZE, *, heads=None, readout: str | None = None):
        self.block_size = positive_int(block_size, "block_size")
        self.heads: tuple[int, ...] | None = None if heads is None else heads_tuple(heads)
        if readout is not None and readout not in READOUTS:
            raise ValueError(f"readout must be None or one of {READOUTS}, got {readout!r}")
        self.readout = readout
        self._label_values: frozenset | None = frozenset()  # None once the labels took more than two values
        self._shape: tuple[int, int] | None = None
        self._count = 0
        self._gram: np.ndarray | None = None  # Fortran-ordered [D, D]: the lower triangle holds the full blocks' sum
        self._b: np.ndarray | None = None
        self._yy = 0.0
        self._buffer: np.ndarray | None = None  # [block_size, D] C-ordered
        self._buffer_y: np.ndarray | None = None
        self._filled = 0  # rows of the buffer not yet added

    # ------------------------------------------------------------------ sizes

    @property
    def num_examples(self) -> int:
        """``P``, the examples seen so far."""
        return self._count

    @property
    def input_width(self) -> int | None:
        """``N0`` (None before the first chunk)."""
        return None if self._shape is None else self._shape[0]

    @property
    def num_paths(self) -> int | None:
        """``n_paths`` (None before the first chunk)."""
        return None if self._shape is None else self._shape[1]

    @property
    def label_values(self) -> tuple[float, ...] | None:
        """The distinct values the labels took, ascending, while there are at most two (``(-1.0, 1.0)`` for
        ``+-1`` labels, ``(0.0, 1.0)`` for 0/1 ones); None once they took more."""
        return None if self._label_values is None else tuple(sorted(self._label_values))

    @property
    def dimension(self) -> int | None:
        """``D = N0 n_paths``, the linear size of :attr:`gram` (None before the first chunk)."""
        return None if self._shape is None else self._shape[0] * self._shape[1]

    # ------------------------------------------------------------------ accumulation

    def update(self, features, targets) -> GramStatistics:
        """Add a chunk of examples, all or nothing: where the update is interrupted (an exception, ``KeyboardInterrupt``
        included), the statistics are those before the chunk, and giving the chunk again continues the stream.

        Args:
            features: ``[B, N0, n_paths]`` path features ``xi`` (numpy or torch, real, finite), the same ``N0`` and
                ``n_paths`` as the earlier chunks.
            targets: ``[B]`` their targets, e.g. ``+-1`` labels (real, finite; booleans are refused).

        Returns:
            this object (updated in place).

        Raises:
            ValueError: NaN or inf in ``features`` or ``targets``, ``targets`` of another length than ``features``, or
                ``features`` of a shape other than ``[B, N0, n_paths]`` of the earlier chunks.
            TypeError: complex, boolean or object ``features`` or ``targets``.
        """
        xi, labels = labelled_examples(features, targets)
        if self.heads is not None and math.prod(self.heads) != xi.shape[2]:
            raise ValueError(
                f"features must hold the {math.prod(self.heads)} paths of the recorded heads {self.heads} in their "
                f"last axis, got {tuple(xi.shape)}"
            )
        if self._shape is not None and tuple(xi.shape[1:]) != self._shape:
            raise ValueError(
                f"features must have shape [B, N0, n_paths] = [B, {self._shape[0]}, {self._shape[1]}] "
                f"like the earlier chunks, got {tuple(xi.shape)}"
            )
        self._accumulate(xi, labels)
        return self

    @classmethod
    def of_checked(cls, features: torch.Tensor, y: torch.Tensor) -> GramStatistics:
        """The statistics of one set of examples that the caller has checked already, as :meth:`update` checks
        them (``features`` ``[P, N0, n_paths]`` and ``y`` ``[P]``, finite float64 CPU tensors): the solver's own
        route from features (:func:`attnpaths.theory.solve`), which checks its data once at its door."""
        statistics = cls()
        statistics._accumulate(features, y)
        return statistics

    def _accumulate(self, xi: torch.Tensor, labels: torch.Tensor) -> None:
        """:meth:`update` without the checks (``xi`` ``[B, N0, n]`` float64, ``labels`` ``[B]``, both finite)."""
        started = self._shape is None
        if started:
            self._start(tuple(xi.shape[1:]))
        try:
            self._add_rows(xi.reshape(xi.shape[0], self.dimension).numpy(), labels.numpy())
        except BaseException:
            if started:  # as before the chunk: no shape fixed yet
                self._shape = None
            raise
        self._label_values = _union(self._label_values, frozenset(torch.unique(labels).tolist()))

    def _add_rows(self, rows: np.ndarray, targets: np.ndarray) -> None:
        """Add ``rows`` ``[B, D]`` with their ``targets`` ``[B]``; the state (sums, buffer, fill, count) changes in one
        assignment at the end, so an exception part-way leaves it as it was (a chunk counted in part would be added
        again in part where it is given again: the sums would hold some examples twice)."""
        end = self._filled + rows.shape[0]
        if end < self.block_size:  # no block completes: the rows go where nothing reads them before the fill moves
            self._buffer[self._filled : end] = rows
            self._buffer_y[self._filled : end] = targets
            self._filled, self._count = end, self._count + rows.shape[0]
            return
        # blocks complete: they are added to copies of the sums (one [D, D] copy per chunk, against the
        # 2 block_size D^2 operations of at least one block). The first block is made in the buffer, whose rows
        # past the fill are free; the later ones in a new buffer, as the first one holds the partial block of the
        # state until the end. The same blocks in the same order as without copies: the same bits
        gram, b, yy = self._gram.copy(order="F"), self._b.copy(), self._yy
        buffer, buffer_y, filled, done = self._buffer, self._buffer_y, self._filled, 0
        while done < rows.shape[0]:
            take = min(self.block_size - filled, rows.shape[0] - done)
            buffer[filled : filled + take] = rows[done : done + take]
            buffer_y[filled : filled + take] = targets[done : done + take]
            filled, done = filled + take, done + take
            if filled == self.block_size:
                yy += self._add_block(gram, b, buffer, buffer_y)
                filled = 0
                if buffer is self._buffer and done < rows.shape[0]:
                    buffer, buffer_y = np.empty_like(self._buffer), np.empty_like(self._buffer_y)
        state = (gram, b, yy, buffer, buffer_y, filled, self._count + rows.shape[0])
        self._gram, self._b, self._yy, self._buffer, self._buffer_y, self._filled, self._count = state

    def _start(self, shape: tuple[int, int]) -> None:
        D = shape[0] * shape[1]
        self._gram = np.zeros((D, D), order="F")
        self._b = np.zeros(D)
        self._buffer = np.zeros((self.block_size, D))
        self._buffer_y = np.zeros(self.block_size)
        self._shape = shape

    def _add_block(self, gram: np.ndarray, b: np.ndarray, block: np.ndarray, targets: np.ndarray) -> float:
        """Add ``block`` ``[rows, D]`` (C-ordered) to ``gram`` (lower triangle, in place) and ``targets @ block`` to
        ``b`` (in place); return ``targets^T targets``."""
        # block^T block: dsyrk on the Fortran-ordered [D, rows] view, into the Fortran-ordered sum (in place)
        out = symmetric_rank_k(1.0, block.T, beta=1.0, c=gram, trans=0, lower=1, overwrite_c=1)
        if not np.shares_memory(out, gram):  # pragma: no cover (dsyrk writes into a Fortran-ordered float64 c)
            gram[...] = out
        b += targets @ block
        return float(targets @ targets)

    def _lower_totals(self) -> tuple[np.ndarray, np.ndarray, float]:
        """``(Gram [D, D] lower triangle, zeros above, b [D], y^T y)`` with the partial block added; the state's own
        arrays where no block is partial (read them only), else copies (the state is unchanged)."""
        if self._shape is None:
            raise ValueError("statistics must hold P >= 1 examples, got 0 (call update with a chunk first)")
        gram, b, yy = self._gram, self._b, self._yy
        if self._filled:
            gram, b = gram.copy(order="F"), b.copy()
            yy = yy + self._add_block(gram, b, self._buffer[: self._filled], self._buffer_y[: self._filled])
        return gram, b, yy

    def _totals(self) -> tuple[np.ndarray, np.ndarray, float]:
        """``(Gram [D, D] full, b [D], y^T y)`` with the partial block added (fresh arrays: the state is unchanged)."""
        lower, b, yy = self._lower_totals()
        return lower + np.tril(lower, -1).T, b.copy(), yy

    def merge(self, other: GramStatistics) -> GramStatistics:
        """The statistics of both sets of examples, this one's first: ``Gram = Gram_self + Gram_other`` and so on
        (a new object; these two are unchanged). Equal to the statistics of one stream of both sets up to
        rounding only (the blocks are summed in another grouping), in a fixed order.

        Raises:
            ValueError: ``other`` is not a :class:`GramStatistics`, holds features of another shape, or records
                other heads or another readout (statistics without examples record nothing to compare).
        """
        if not isinstance(other, GramStatistics):
            raise ValueError(f"other must be a GramStatistics, got {type(other).__name__}")
        parts = [s for s in (self, other) if s._shape is not None]
        source = parts[0] if parts else self
        for part in parts[1:]:
            if (part.heads, part.readout) != (source.heads, source.readout):
                raise ValueError(
                    f"other must record the heads and readout of this one, heads={source.heads}, "
                    f"readout={source.readout!r}; got heads={part.heads}, readout={part.readout!r}"
                )
        merged = GramStatistics(self.block_size, heads=source.heads, readout=source.readout)
        if not parts:
            return merged
        if len(parts) == 2 and self._shape != other._shape:
            raise ValueError(
                f"other must hold features [P, N0, n_paths] of the same N0 and n_paths as this one: "
                f"[P, {self._shape[0]}, {self._shape[1]}], got [P, {other._shape[0]}, {other._shape[1]}]"
            )
        merged._start(parts[0]._shape)
        for part in parts:
            # the sums' upper triangles are zeros (dsyrk writes the lower one only): adding whole arrays adds the
            # lower triangles, the same bits as adding np.tril of the symmetric totals, in fewer passes
            gram, b, yy = part._lower_totals()
            merged._gram += gram
            merged._b += b
            merged._yy += yy
            merged._count += part._count
            merged._label_values = _union(merged._label_values, part._label_values)
        return merged

    # ------------------------------------------------------------------ the statistics

    @property
    def gram(self) -> np.ndarray:
        """``[D, D]`` ``sum_mu f_mu f_mu^T`` of the raw features (a fresh symmetric float64 array)."""
        return self._totals()[0]

    @property
    def features_targets(self) -> np.ndarray:
        """``[D]`` ``b = sum_mu y_mu f_mu`` (a fresh float64 array)."""
        return self._totals()[1]

    @property
    def targets_norm2(self) -> float:
        """``y^T y = sum_mu y_mu^2``."""
        return self._totals()[2]

    def scaled(self, s0: float = 1.0) -> tuple[np.ndarray, np.ndarray, float]:
        """``(Gram, b, y^T y)`` of the scaled features ``X = sqrt(s0 / (N0 n_paths)) xi``
        (:func:`attnpaths.kernels.scaled_features`): ``Gram`` times ``s0 / (N0 n_paths)``, ``b`` times its square
        root."""
        gram, b, yy = self._totals()
        scale = s0 / self.dimension
        return gram * scale, b * math.sqrt(scale), yy


def _union(values: frozenset | None, more: frozenset | None) -> frozenset | None:
    """The label values of two sets of examples, None (more than two) once they exceed two."""
    if values is None or more is None or len(values | more) > 2:
        return None
    return values | more


@dataclass(frozen=True)
class EquivalentProblem:
    """``r <= D`` rows with the action and the predictor of a ``P``-example problem (module docstring): features
    ``[r, N0, n_paths]`` (scaled) with ``R^T R = Gram``, targets ``[r]`` with ``R^T targets = b``, and
    ``offset = (P - r) log T + (y^T y - |targets|^2) / T``, so ``S_en = S_en(rows, targets) + offset``
    (eq-action) at every ``U``."""

    features: torch.Tensor
    targets: torch.Tensor
    offset: float


def equivalent_problem(
    gram: np.ndarray,
    b: np.ndarray,
    targets_norm2: float,
    num_examples: int,
    input_width: int,
    num_paths: int,
    temperature: float,
) -> EquivalentProblem | None:
    """The :class:`EquivalentProblem` of scaled statistics (:meth:`GramStatistics.scaled`), or None where they
    are not finite (features that overflow): the energy of (eq-action) is that of ``r`` rows plus a constant.

    From ``Gram = V diag(g) V^T``: ``R = diag(sqrt g) V^T`` and ``targets = diag(g)^{-1/2} V^T b`` over the
    eigenvalues ``g > D eps max(g)``; the others are rounding of a singular ``Gram`` (its sums carry at least that
    much) and their directions are dropped, so ``r`` is the numerical rank (at least 1: a zero row where every
    feature vanishes). No inverse of ``U`` or of ``Gram`` is formed.

    Args:
        gram: ``[D, D]`` symmetric; b: ``[D]``; targets_norm2: ``y^T y``; num_examples: ``P``.
        input_width, num_paths: ``N0`` and ``n_paths`` (``D = N0 n_paths``, path index fastest).
        temperature: ``T > 0``.
    """
    D = input_width * num_paths
    if not (np.isfinite(gram).all() and np.isfinite(b).all() and math.isfinite(targets_norm2)):
        return None
    values, vectors = np.linalg.eigh((gram + gram.T) / 2)
    values, vectors = values[::-1], vectors[:, ::-1]  # largest first
    top = max(float(values[0]), 0.0)
    keep = values > D * np.finfo(np.float64).eps * top
    if top == 0.0 or not keep.any():
        rows, targets = np.zeros((1, D)), np.zeros(1)
    else:
        roots = np.sqrt(values[keep])
        rows = np.ascontiguousarray((vectors[:, keep] * roots).T)  # [r, D]
        targets = (b @ vectors[:, keep]) / roots
    r = rows.shape[0]
    offset = (num_examples - r) * math.log(temperature) + (targets_norm2 - float(targets @ targets)) / temperature
    if not math.isfinite(offset):
        return None
    return EquivalentProblem(
        torch.from_numpy(rows).reshape(r, input_width, num_paths), torch.from_numpy(targets), offset
    )


@dataclass(frozen=True)
class FactoredSolve:
    """The energy and the predictor of a batch of order parameters ``U_1 = L L^T`` from scaled statistics
    (:func:`factored_solve`): ``energy`` ``[B]`` is ``S_en`` of (eq-action), ``log det(K + T I_P) +
    y^T (K + T I_P)^{-1} y``; ``mean_weights`` ``[B, N0, n_paths]`` the predictor's mean in feature space,
    ``<f(x)> = sum_{i,a} X_ia(x) v_ia`` (eq-predictor, ``X`` the scaled features)."""

    energy: torch.Tensor
    mean_weights: torch.Tensor


def factored_solve(
    gram: torch.Tensor,
    b: torch.Tensor,
    targets_norm2: float,
    num_examples: int,
    factors: torch.Tensor,
    temperature: float,
) -> FactoredSolve:
    """``S_en`` (eq-action) and the predictor's mean weights (eq-predictor) of ``B`` order parameters at once,
    from the scaled statistics (:meth:`GramStatistics.scaled`), at any ``P`` (above or below ``D``).

    With ``Z = F L~``, ``L~ = I_N0 (x) L`` (so ``K = Z Z^T``) and ``M = T I_D + L~^T Gram L~`` (``[D, D]``), the
    determinant lemma and Woodbury's identity give ``log det(K + T I_P) = (P - D) log T + log det M`` and
    ``y^T (K + T I_P)^{-1} y = (y^T y - c^T M^{-1} c) / T`` with ``c = L~^T b``, and the mean weights are
    ``v = L~ M^{-1} c``. One Cholesky factor of ``M`` serves all three: ``O(D^3)`` per order parameter whatever
    ``P``, without inverting ``U`` (a Cholesky factor of ``U_1`` is enough).

    Args:
        gram: ``[D, D]`` scaled Gram matrix; b: ``[D]`` scaled ``F^T y``; targets_norm2: ``y^T y``;
            num_examples: ``P``.
        factors: ``[B, n, n]`` lower Cholesky factors ``L`` of ``U_1`` (``D = N0 n``, path index fastest).
        temperature: ``T > 0``.
    """
    B, n = factors.shape[0], factors.shape[-1]
    D = gram.shape[0]
    n0 = D // n
    # M[(i,c),(j,d)] = sum_ab L[a,c] Gram[(i,a),(j,b)] L[b,d]: two contractions of D^2 n each, not D^3
    left = torch.einsum("zac,iajb->zicjb", factors, gram.reshape(n0, n, n0, n))
    M = torch.einsum("zicjb,zbd->zicjd", left, factors).reshape(B, D, D)
    del left
    M.diagonal(dim1=-2, dim2=-1).add_(temperature)
    chol = torch.linalg.cholesky(M)
    c = torch.einsum("zac,ia->zic", factors, b.reshape(n0, n)).reshape(B, D, 1)
    whitened = torch.linalg.solve_triangular(chol, c, upper=False)
    log_det = 2.0 * torch.log(torch.diagonal(chol, dim1=-2, dim2=-1)).sum(-1) + (num_examples - D) * math.log(
        temperature
    )
    energy = log_det + (targets_norm2 - whitened.square().sum(dim=(-2, -1))) / temperature
    solved = torch.linalg.solve_triangular(chol.transpose(-1, -2), whitened, upper=True).reshape(B, n0, n)
    return FactoredSolve(energy, torch.einsum("zac,zic->zia", factors, solved))
