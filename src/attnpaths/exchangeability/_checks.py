"""Argument checks used across the subpackage (each failure is a ``ValueError`` naming the argument)."""

from __future__ import annotations

import contextlib
import numbers

import numpy as np
import torch

from .._validation import as_float64_tensor


def check_rng(rng) -> np.random.Generator:
    """``rng`` must be a ``numpy.random.Generator`` (no global seeding anywhere in the package)."""
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng


def positive_int(value, name: str) -> int:
    """An integer >= 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def nonnegative(value, name: str) -> float:
    """A finite real number >= 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite real number >= 0, got {value!r}")
    return float(value)


def finite_real(value, name: str) -> float:
    """A finite real number."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value):
        raise ValueError(f"{name} must be a finite real number, got {value!r}")
    return float(value)


def int_grid(values, name: str, minimum: int = 1) -> np.ndarray:
    """A non-empty, strictly increasing sequence of integers >= ``minimum``."""
    try:
        arr = np.asarray(list(values))
    except TypeError as err:
        raise ValueError(f"{name} must be a sequence of integers >= {minimum}, got {values!r}") from err
    if (arr.ndim != 1 or arr.size == 0 or not np.issubdtype(arr.dtype, np.integer) or np.any(arr < minimum)
            or np.any(np.diff(arr) <= 0)):
        raise ValueError(f"{name} must be a strictly increasing sequence of integers >= {minimum}, got {values!r}")
    return arr.astype(np.int64)


def real_grid(values, name: str, *, positive: bool = True) -> np.ndarray:
    """A non-empty, strictly increasing sequence of finite reals (> 0 when ``positive``)."""
    try:
        arr = np.asarray(list(values), dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a sequence of real numbers, got {values!r}") from err
    if arr.ndim != 1 or arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(np.diff(arr) <= 0) or (
            positive and np.any(arr <= 0)):
        kind = "positive " if positive else ""
        raise ValueError(f"{name} must be a strictly increasing sequence of finite {kind}reals, got {values!r}")
    return arr


def as_tensor(value, name: str):
    """:func:`attnpaths._validation.as_float64_tensor` that also accepts numpy views with negative strides."""
    if isinstance(value, np.ndarray):
        value = np.ascontiguousarray(value)
    elif not isinstance(value, torch.Tensor):
        try:
            value = np.ascontiguousarray(np.asarray(value))
        except (TypeError, ValueError):
            pass
    return as_float64_tensor(value, name)


@contextlib.contextmanager
def serial_blas():
    """Run the enclosed BLAS and LAPACK calls on one thread, then restore the previous setting.

    The experiments factorise or multiply many independent small matrices; splitting each of them over threads
    costs more than it gains, and with ``OMP_NUM_THREADS=2`` on a loaded 2-core machine OpenBLAS's threaded
    ``potrf``/``gesv`` were measured 20-60 times slower than on one thread.
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield
