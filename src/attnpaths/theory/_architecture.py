"""The theory's architecture from its arguments: heads, widths, prior variances (eq-action)."""

from __future__ import annotations

import math
import numbers

from .._validation import heads_tuple, positive_real, real_scalar
from ..action import Architecture


def parse_widths(width, num_layers: int) -> tuple[float, ...]:
    """``width``: one number for every layer, or ``(N_1, ..., N_L, N_a)``; ``inf`` gives the GP limit."""
    width = real_scalar(width)
    if isinstance(width, numbers.Real) and not isinstance(width, bool):
        width = (width,) * (num_layers + 1)
    expected = "a number >= 1 or a tuple (N_1, ..., N_L, N_a) of them"
    if isinstance(width, (str, bytes)):  # iterable, but its characters are not widths
        raise ValueError(f"width must be {expected}, got {width!r} (a string)")
    try:
        width = tuple(width)
    except TypeError as err:
        raise ValueError(f"width must be {expected}, got {width!r}") from err
    if len(width) != num_layers + 1:
        raise ValueError(f"width must hold L + 1 = {num_layers + 1} values (N_1, ..., N_L, N_a), got {len(width)}")
    out = []
    for w in width:
        if isinstance(w, bool) or not isinstance(w, numbers.Real) or math.isnan(w) or w < 1:
            raise ValueError(f"width must be numbers >= 1 (or inf for the GP limit), got {width!r}")
        out.append(float(w))
    if any(math.isinf(w) for w in out) and not all(math.isinf(w) for w in out):
        raise ValueError(f"width must be all finite or all inf (GP limit), got {width!r}")
    return tuple(out)


def parse_variances(variances, num_layers: int) -> tuple[float, ...]:
    """``variances``: one number, or ``(s0, s1, ..., sL, sa)``, all > 0 (prior variances, not std)."""
    if isinstance(variances, numbers.Real) and not isinstance(variances, bool):
        variances = (variances,) * (num_layers + 2)
    try:
        variances = tuple(variances)
    except TypeError as err:
        raise ValueError(f"variances must be a number > 0 or a tuple (s0, ..., sL, sa), got {variances!r}") from err
    if len(variances) != num_layers + 2:
        raise ValueError(
            f"variances must hold L + 2 = {num_layers + 2} values (s0, s1, ..., sL, sa), got {len(variances)}"
        )
    return tuple(positive_real(v, "variances") for v in variances)


def architecture(heads, width, variances=1.0) -> Architecture:
    """Validate and bundle ``heads``, ``width`` (the per-layer widths) and ``variances`` (see :func:`solve`)."""
    heads = heads_tuple(heads)
    return Architecture(heads, parse_widths(width, len(heads)), parse_variances(variances, len(heads)))


def _layer_sizes(arch: Architecture) -> list[int]:
    return [arch.layer_size(layer) for layer in range(1, arch.num_layers + 1)]
