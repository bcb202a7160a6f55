"""The blocks of :class:`attnpaths.sampler.PosteriorSampler` and the path-structured products through them."""

from __future__ import annotations

from dataclasses import dataclass

import torch

STRIDED_PRODUCT_WORK = 1_000_000
"""Multiply-adds per (chain, head, path group) above which routing the data through a block uses one matrix product
per group on strided views rather than one einsum (see :meth:`Block.route`)."""


@dataclass(frozen=True)
class Block:
    """One Gibbs block ``W [C, H, out, in]`` and where it sits on the paths.

    The path axis factorises as ``(A, H, B)``: ``H`` is this block's head index, ``A`` the heads of the
    layers below and ``B`` those above (paths are flattened with ``h_1`` slowest). ``V0`` and ``a`` have no
    head (``H = 1``). ``coef`` is the block's normalisation in (eq-forward), ``variance`` its prior variance.
    """

    name: str
    variance: float
    coef: float
    split: tuple[int, int, int]

    def route(self, W: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
        """``coef W[h(pi)] right_pi`` for every path: ``[C, H, out, in] x [C, P, n, in] -> [C, P, n, out]``.

        Large products (at least :data:`STRIDED_PRODUCT_WORK` multiply-adds each) run as one matrix product per
        chain, head and heads-above index ``beta``: the rows ``(mu, alpha)`` of one ``(h, beta)`` are equally
        spaced in ``right`` and in the output, so the products read and write strided views, where an einsum
        copies the data into a head-major order and back (twice the time at the one-shot sizes); small ones
        run as that einsum, whose one call costs less than many small products.
        """
        C, P = right.shape[:2]
        A, H, B = self.split
        rows = right.reshape(C, P, A, H, B, right.shape[-1])
        if P * A * W.shape[2] * W.shape[3] < STRIDED_PRODUCT_WORK:
            return torch.einsum("choi,cmahbi->cmahbo", W, rows).reshape(C, P, A * H * B, -1).mul_(self.coef)
        out = torch.empty((C, P, A, H, B, W.shape[2]), dtype=right.dtype, device=right.device)
        for c in range(C):
            for h in range(H):
                weights = W[c, h].T
                for b in range(B):
                    target = out[c, :, :, h, b].view(P * A, -1)
                    torch.addmm(
                        target, rows[c, :, :, h, b].view(P * A, -1), weights, beta=0, alpha=self.coef, out=target
                    )
        return out.view(C, P, A * H * B, -1)

    def route_back(self, W: torch.Tensor, left: torch.Tensor) -> torch.Tensor:
        """The left vectors of the block below from this block's: ``coef W[h(pi)]^T left_pi`` for every path,
        ``[C, H, out, in] x [C, n, out] -> [C, n, in]``."""
        C, out, inp = left.shape[0], W.shape[2], W.shape[3]
        A, H, B = self.split
        # one batched product per (chain, head) on W as it lies (an einsum would copy W, which can be large)
        rows = left.reshape(C, A, H, B, out).transpose(1, 2).reshape(C * H, A * B, out)
        products = torch.bmm(rows, W.reshape(C * H, out, inp))  # [(c, h), (alpha, beta), in]
        return products.reshape(C, H, A, B, inp).transpose(1, 2).reshape(C, -1, inp).mul_(self.coef)

    def group(self, left: torch.Tensor, right: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The block's left vectors and data grouped by what the paths share.

        A path ``pi = (alpha, h, beta)`` (heads below, this block's head, heads above) has the left vector of its
        heads above only (the blocks above act on it), so the paths that differ only in ``alpha`` enter the block's
        design matrix with the same left vector: their routed data add up, ``R_{h beta} = sum_alpha right_pi``.
        Every sum over paths of the draw then runs over the ``H B`` groups (the readout: one group).

        Returns:
            ``(left_above [C, B, out], grouped [C, P, H B, in])``.
        """
        A, H, B = self.split
        C, P = right.shape[:2]
        left_above = left.reshape(C, A, H, B, -1)[:, 0, 0]
        paths = right.reshape(C, P, A, H * B, -1)
        return left_above, (paths[:, :, 0] if A == 1 else paths.sum(dim=2))
