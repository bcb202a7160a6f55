"""Where torch work runs: the CPU by default, a CUDA GPU when asked for and available, never a silent fallback.

:func:`torch_device` checks a device choice (the ``device`` argument of the training and sampling functions); the
results do not depend on it beyond float32 rounding of trained models (the theory runs in float64 on the CPU).
"""

from __future__ import annotations

import torch

DEVICES = ("cpu", "cuda")


def torch_device(device, name: str = "device") -> torch.device:
    """Check a compute device choice: ``"cpu"`` or ``"cuda"`` (also a ``torch.device`` of those types, e.g.
    ``cuda:1``). Asking for CUDA where ``torch.cuda.is_available()`` is false is an error, never a silent
    fallback to the CPU."""
    if not isinstance(device, (str, torch.device)):  # torch.device(3) would silently mean cuda:3
        raise ValueError(f"{name} must be one of {DEVICES}, got {device!r}")
    try:
        resolved = torch.device(device)
    except (TypeError, RuntimeError) as err:
        raise ValueError(f"{name} must be one of {DEVICES}, got {device!r}") from err
    if resolved.type not in DEVICES:
        raise ValueError(f"{name} must be one of {DEVICES}, got {device!r}")
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            f"{name}={device!r} asks for a CUDA GPU, but torch.cuda.is_available() is False on this "
            f"machine; {name} must be one of {DEVICES} with 'cuda' only where a GPU is available"
        )
    if resolved.type == "cuda" and resolved.index is not None and resolved.index >= torch.cuda.device_count():
        raise ValueError(f"{name}={device!r} names a GPU that does not exist ({torch.cuda.device_count()} visible)")
    return resolved
