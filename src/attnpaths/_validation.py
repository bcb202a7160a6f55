"""Argument checks shared by the public functions: every failure is a ``ValueError`` that names the
argument and says what was expected."""

from __future__ import annotations

import numbers

import numpy as np
import torch


def as_float64_tensor(value, name: str) -> torch.Tensor:
    """Return ``value`` (numpy array, torch tensor or nested sequence) as a finite float64 CPU tensor."""
    try:
        tensor = torch.as_tensor(np.ascontiguousarray(value) if not isinstance(value, torch.Tensor) else value)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a numeric array, got {type(value).__name__}") from err
    tensor = tensor.detach().to(device="cpu", dtype=torch.float64)
    if not torch.isfinite(tensor).all():
        raise ValueError(f"{name} must contain only finite values (found NaN or inf)")
    return tensor


def as_float64_array(value, name: str) -> np.ndarray:
    """Return ``value`` as a finite float64 numpy array (torch tensors are detached and moved to CPU)."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a numeric array, got {type(value).__name__}") from err
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must contain only finite values (found NaN or inf)")
    return array


def positive_real(value, name: str, *, allow_inf: bool = False) -> float:
    """Check that ``value`` is a real number > 0 (``inf`` allowed only when ``allow_inf``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number > 0, got {value!r}")
    value = float(value)
    if np.isnan(value) or value <= 0 or (np.isinf(value) and not allow_inf):
        allowed = "a real number > 0 or inf" if allow_inf else "a finite real number > 0"
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    return value


def heads_tuple(heads, name: str = "heads") -> tuple[int, ...]:
    """Check a heads specification ``(H_1, ..., H_L)`` of positive integers."""
    if isinstance(heads, numbers.Integral) and not isinstance(heads, bool):
        heads = (heads,)
    try:
        heads = tuple(heads)
    except TypeError as err:
        raise ValueError(f"{name} must be a tuple of positive integers (H_1, ..., H_L), got {heads!r}") from err
    if not heads or any(isinstance(h, bool) or not isinstance(h, numbers.Integral) or h < 1 for h in heads):
        raise ValueError(f"{name} must be a non-empty tuple of positive integers (H_1, ..., H_L), got {heads!r}")
    return tuple(int(h) for h in heads)


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
        raise ValueError(f"{name}={device!r} asks for a CUDA GPU, but torch.cuda.is_available() is False on this "
                         f"machine; {name} must be one of {DEVICES} with 'cuda' only where a GPU is available")
    if resolved.type == "cuda" and resolved.index is not None and resolved.index >= torch.cuda.device_count():
        raise ValueError(f"{name}={device!r} names a GPU that does not exist ({torch.cuda.device_count()} visible)")
    return resolved
