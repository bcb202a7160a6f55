"""Argument checks shared by the public functions: every failure is a ``ValueError`` that names the
argument and says what was expected (a ``TypeError`` for an array of the wrong kind: complex, boolean or
object entries; a ``MemoryError`` for a computation that cannot fit, :func:`check_memory`)."""

from __future__ import annotations

import numbers
from pathlib import Path

import numpy as np
import torch

try:
    import resource  # Unix only: the address-space limit of available_memory
except ImportError:  # pragma: no cover
    resource = None


def check_real_dtype(dtype, name: str, labels: bool = False) -> None:
    """Refuse the dtypes that a conversion to float64 would silently misread: complex (the imaginary part is
    dropped), boolean (``True``/``False`` become 1/0, not the theory's ``+-1`` labels) and object (anything).
    ``dtype`` is a numpy or torch dtype; ``labels`` words the boolean case for labels / targets."""
    if isinstance(dtype, torch.dtype):
        kind = "c" if dtype.is_complex else "b" if dtype == torch.bool else "f"
    else:
        kind = np.dtype(dtype).kind
    if kind == "c":
        raise TypeError(
            f"{name} must hold real numbers, got the complex dtype {dtype}: a conversion to float64 "
            f"would drop the imaginary part (pass the real part explicitly if that is what is meant)"
        )
    if kind == "b":
        if labels:
            raise TypeError(
                f"{name} must hold real targets, got the boolean dtype {dtype}: labels are +-1 floats, "
                f"pass 2.0 * {name} - 1.0 (True -> +1, False -> -1)"
            )
        raise TypeError(f"{name} must hold real numbers, got the boolean dtype {dtype}")
    if kind == "O":
        raise TypeError(
            f"{name} must be a numeric array, got the object dtype {dtype} (entries that are not numbers, "
            f"or numbers of mixed kinds)"
        )


def as_float64_tensor(value, name: str, *, labels: bool = False) -> torch.Tensor:
    """Return ``value`` (numpy array, torch tensor or nested sequence) as a finite float64 CPU tensor.

    Complex, boolean and object inputs are refused (``TypeError``), never converted; ``labels`` says that
    ``value`` holds labels or targets (``+-1`` floats), for the wording of the boolean case."""
    given = type(value).__name__
    try:
        array = value if isinstance(value, torch.Tensor) else np.ascontiguousarray(value)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a numeric array, got {given}") from err
    check_real_dtype(array.dtype, name, labels)
    try:
        tensor = torch.as_tensor(array)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a numeric array, got {given}") from err
    tensor = tensor.detach().to(device="cpu", dtype=torch.float64)
    if not np.isfinite(tensor.numpy()).all():  # numpy's check: several times faster than torch's on one thread
        raise ValueError(f"{name} must contain only finite values (found NaN or inf)")
    return tensor


def as_float64_array(
    value, name: str, *, ndim: int | None = None, nonempty: bool = False, labels: bool = False
) -> np.ndarray:
    """Return ``value`` as a finite float64 numpy array (torch tensors are detached and moved to CPU), with
    ``ndim`` dimensions when given and at least one entry when ``nonempty``; complex, boolean and object inputs
    are refused as by :func:`as_float64_tensor`."""
    if isinstance(value, torch.Tensor):
        check_real_dtype(value.dtype, name, labels)
        value = value.detach().to(device="cpu", dtype=torch.float64).numpy()  # (numpy has no bfloat16)
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a numeric array, got {type(value).__name__}") from err
    check_real_dtype(array.dtype, name, labels)
    try:
        array = array.astype(np.float64, copy=False)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a numeric array, got {type(value).__name__}") from err
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must contain only finite values (found NaN or inf)")
    if ndim is not None and array.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {array.shape}")
    if nonempty and array.size == 0:
        raise ValueError(f"{name} must hold at least one value, got shape {array.shape}")
    return array


def labelled_examples(features, targets) -> tuple[torch.Tensor, torch.Tensor]:
    """``(features [B, N0, n_paths], y [B])`` as finite float64 CPU tensors: the checks of every door that takes a
    batch of path features with their labels (:meth:`attnpaths.gram.GramStatistics.update`, the chunks of
    :mod:`attnpaths.streaming`), those of :func:`attnpaths.theory.solve`'s data: no NaN or inf, no
    complex, boolean or object values (``TypeError``; booleans are not the theory's ``+-1`` labels), ``features``
    of three dimensions and one label per example (``ValueError``)."""
    xi = as_float64_tensor(features, "features")
    if xi.ndim != 3:
        raise ValueError(f"features must have shape [B, N0, n_paths], got {tuple(xi.shape)}")
    labels = as_float64_tensor(targets, "targets", labels=True)
    if labels.shape != (xi.shape[0],):
        raise ValueError(
            f"targets must have shape [B] = [{xi.shape[0]}] (one label per example of features), got {tuple(labels.shape)}"
        )
    return xi, labels


def real_scalar(value):
    """The number held by a 0-d numpy array or torch tensor (``np.array(0.01)``, ``torch.tensor(0.01)``: what
    indexing or reducing an array gives), as the Python number of its kind; any other ``value`` as it is, for the
    checks below to accept (numbers, numpy scalars) or refuse (strings, booleans, arrays of one element or more)."""
    if isinstance(value, (np.ndarray, torch.Tensor)) and value.ndim == 0:
        return value.item()
    return value


def positive_real(value, name: str, *, allow_inf: bool = False) -> float:
    """Check that ``value`` is a real number > 0 (``inf`` allowed only when ``allow_inf``; a 0-d array or tensor
    counts as its number, :func:`real_scalar`)."""
    given, value = value, real_scalar(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number > 0, got {given!r}")
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


# --------------------------------------------------------------------------------------------------------
# numbers


def int_at_least(value, name: str, least: int = 1) -> int:
    """Check that ``value`` is an integer (not a bool) ``>= least``; numpy integers are accepted."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")
    return int(value)


def positive_int(value, name: str) -> int:
    """Check that ``value`` is an integer ``>= 1``."""
    return int_at_least(value, name, 1)


def positive_ints(**values) -> dict[str, int]:
    """Check that every keyword argument is an integer ``>= 1``; returns them as ``{name: int}``, in their order
    (e.g. a model's sizes, its ``hyperparameters``)."""
    return {name: positive_int(value, name) for name, value in values.items()}


def even_int(value, name: str, least: int = 2) -> int:
    """Check that ``value`` is an even integer ``>= least``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least or value % 2:
        raise ValueError(f"{name} must be an even integer >= {least}, got {value!r}")
    return int(value)


def finite_real(value, name: str) -> float:
    """Check that ``value`` is a finite real number (a 0-d array or tensor counts as its number)."""
    given, value = value, real_scalar(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value):
        raise ValueError(f"{name} must be a finite real number, got {given!r}")
    return float(value)


def nonnegative_real(value, name: str) -> float:
    """Check that ``value`` is a finite real number ``>= 0`` (a 0-d array or tensor counts as its number)."""
    given, value = value, real_scalar(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite real number >= 0, got {given!r}")
    return float(value)


def probability(value, name: str, *, open_interval: bool = False) -> float:
    """Check that ``value`` is a probability in ``[0, 1]`` (in ``(0, 1)`` when ``open_interval``, e.g. a test's
    level; a 0-d array or tensor counts as its number)."""
    given, value = value, real_scalar(value)
    ok = (
        isinstance(value, numbers.Real)
        and not isinstance(value, bool)
        and (0.0 < float(value) < 1.0 if open_interval else 0.0 <= float(value) <= 1.0)
    )
    if not ok:
        raise ValueError(f"{name} must be a probability in {'(0, 1)' if open_interval else '[0, 1]'}, got {given!r}")
    return float(value)


# --------------------------------------------------------------------------------------------------------
# grids


def increasing_ints(values, name: str, least: int = 1) -> np.ndarray:
    """Check a non-empty, strictly increasing sequence of integers ``>= least``; returns int64 ``[n]``."""
    try:
        items = list(values)
    except TypeError as err:
        raise ValueError(f"{name} must be a sequence of integers >= {least}, got {values!r}") from err
    arr = np.asarray(items)
    if (
        arr.ndim != 1
        or arr.size == 0
        or any(isinstance(v, (bool, np.bool_)) for v in items)
        or not np.issubdtype(arr.dtype, np.integer)
        or np.any(arr < least)
        or np.any(np.diff(arr) <= 0)
    ):
        raise ValueError(
            f"{name} must be a non-empty, strictly increasing sequence of integers >= {least}, got {values!r}"
        )
    return arr.astype(np.int64)


def increasing_reals(values, name: str, *, positive: bool = True) -> np.ndarray:
    """Check a non-empty, strictly increasing sequence of finite reals (``> 0`` when ``positive``); returns
    float64 ``[n]``."""
    try:
        items = list(values)
        arr = np.asarray(items, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a sequence of real numbers, got {values!r}") from err
    if (
        arr.ndim != 1
        or arr.size == 0
        or any(isinstance(v, (bool, np.bool_)) for v in items)
        or not np.all(np.isfinite(arr))
        or np.any(np.diff(arr) <= 0)
        or (positive and np.any(arr <= 0))
    ):
        kind = "positive " if positive else ""
        raise ValueError(
            f"{name} must be a non-empty, strictly increasing sequence of finite {kind}reals, got {values!r}"
        )
    return arr


# --------------------------------------------------------------------------------------------------------
# arrays and generators


def square_matrix(value, name: str) -> np.ndarray:
    """Check a finite square matrix; returns it as float64 ``[n, n]``."""
    array = as_float64_array(value, name)
    if array.ndim != 2 or array.shape[0] != array.shape[1]:
        raise ValueError(f"{name} must be a square [n, n] matrix, got shape {array.shape}")
    return array


def numpy_generator(rng, name: str = "rng") -> np.random.Generator:
    """Check that ``rng`` is a ``numpy.random.Generator`` (randomness is always passed in, never global)."""
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"{name} must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng


def torch_generator(generator, name: str = "generator", *, cpu: bool = False) -> torch.Generator:
    """Check that ``generator`` is a ``torch.Generator`` (on the CPU when ``cpu``)."""
    if cpu:
        if not isinstance(generator, torch.Generator) or generator.device.type != "cpu":
            raise ValueError(
                f"{name} must be a CPU torch.Generator, e.g. torch.Generator().manual_seed(27), got {generator!r}"
            )
    elif not isinstance(generator, torch.Generator):
        raise ValueError(f"{name} must be a torch.Generator, got {type(generator).__name__}")
    return generator


def float_eps(value) -> float | None:
    """Machine epsilon of the floating dtype of ``value`` (numpy array or torch tensor) as it was given, before
    any conversion to float64; None for other inputs (nested sequences, integers)."""
    dtype = getattr(value, "dtype", None)
    if isinstance(dtype, torch.dtype):
        return float(torch.finfo(dtype).eps) if dtype.is_floating_point else None
    if isinstance(dtype, np.dtype) and dtype.kind == "f":
        return float(np.finfo(dtype).eps)
    return None


# --------------------------------------------------------------------------------------------------------
# memory


GIB = 2.0**30
"""Bytes per GiB."""


def _proc_bytes(path, key: str) -> int | None:
    """The bytes of the ``key: value kB`` line of a ``/proc`` file; None where it is missing or unreadable."""
    try:
        with open(path) as file:
            for line in file:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _address_space_in_use() -> int | None:
    """This process's mapped virtual memory (``VmSize`` of ``/proc/self/status``), in bytes."""
    return _proc_bytes("/proc/self/status", "VmSize:")


PROC_MEMINFO = "/proc/meminfo"
PROC_SELF_CGROUP = "/proc/self/cgroup"
CGROUP_ROOT = "/sys/fs/cgroup"
"""Where :func:`available_memory` reads the system's free memory and this process's cgroups."""

_CGROUP_FILES = {
    2: ("memory.max", "memory.current", "inactive_file"),
    1: ("memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"),
}
"""Per cgroup version: the limit's file, the usage's file and the key of ``memory.stat`` for the inactive page
cache."""


def _read_int(path) -> int | None:
    """The integer a one-line file holds; None where it is missing, unreadable or not an integer (``max``: no
    limit)."""
    try:
        with open(path) as file:
            return int(file.read().strip())
    except (OSError, ValueError):
        return None


def _stat_value(path, key: str) -> int:
    """The value of ``key`` in a ``memory.stat`` file (``key value`` lines); 0 where it is not there."""
    try:
        with open(path) as file:
            for line in file:
                name, _, value = line.partition(" ")
                if name == key:
                    return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _cgroup_memory_left() -> int | None:
    """Bytes left under the memory limits of this process's cgroup and of the cgroups above it, the tightest, or
    None where no limit is set or readable (cgroup v2 ``memory.max``, v1 ``memory.limit_in_bytes``). At each level:
    the limit less the usage, with the inactive page cache counted as free (the kernel reclaims it before it fails
    an allocation, so a full cache is not a lack of memory)."""
    try:
        with open(PROC_SELF_CGROUP) as file:
            lines = file.read().splitlines()
    except OSError:
        return None
    left = []
    for line in lines:
        fields = line.split(":", 2)
        if len(fields) != 3 or not (fields[1] == "" or "memory" in fields[1].split(",")):
            continue
        version = 2 if fields[1] == "" else 1
        base = Path(CGROUP_ROOT) if version == 2 else Path(CGROUP_ROOT) / "memory"
        limit_file, usage_file, inactive = _CGROUP_FILES[version]
        directory = base / fields[2].lstrip("/")
        while True:
            limit, usage = _read_int(directory / limit_file), _read_int(directory / usage_file)
            if limit is not None and usage is not None:
                left.append(max(0, limit - usage + _stat_value(directory / "memory.stat", inactive)))
            if directory == base or base not in directory.parents:
                break
            directory = directory.parent
    return min(left) if left else None


def available_memory() -> int | None:
    """Bytes this process can still allocate, or None where the system does not say: the smallest of the
    system's ``MemAvailable`` (``/proc/meminfo``), when a soft ``RLIMIT_AS`` is set that limit less the address
    space already mapped (``VmSize``), and when a cgroup memory limit is set what is left under it
    (:func:`_cgroup_memory_left`)."""
    candidates = [_proc_bytes(PROC_MEMINFO, "MemAvailable:"), _cgroup_memory_left()]
    if resource is not None:
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            candidates.append(max(0, soft - (_address_space_in_use() or 0)))
    candidates = [c for c in candidates if c is not None]
    return min(candidates) if candidates else None


def check_memory(bytes_needed: float, what: str) -> None:
    """Raise ``MemoryError`` before a computation whose arrays need about ``bytes_needed`` bytes when that is
    more than :func:`available_memory` (nothing is checked where the system does not say). ``what`` names the
    computation and its sizes, e.g. ``"solve with P = 12000 examples (feature-space route: ...)"``."""
    available = available_memory()
    if available is not None and bytes_needed > available:
        raise MemoryError(
            f"{what} needs about {bytes_needed / GIB:.3g} GiB, but only {available / GIB:.3g} GiB "
            f"of memory is available (the smallest of MemAvailable, the RLIMIT_AS address-space limit and "
            f"the cgroup memory limit): use fewer examples or a machine with more memory"
        )


def check_chunked_stream(stream) -> None:
    """Normalise and check the chunking fields that the chunk generators of the tasks share (a frozen dataclass with
    ``seed``, ``stream``, ``num_examples``, ``chunk_size`` and ``factored_features``): integers ``seed, stream >= 0``,
    even ``num_examples`` and ``chunk_size`` (pairs of the two labels), ``factored_features`` a bool."""
    object.__setattr__(stream, "seed", int_at_least(stream.seed, "seed", 0))
    object.__setattr__(stream, "stream", int_at_least(stream.stream, "stream", 0))
    object.__setattr__(stream, "num_examples", even_int(stream.num_examples, "num_examples (P, even)"))
    object.__setattr__(stream, "chunk_size", even_int(stream.chunk_size, "chunk_size (even)"))
    if not isinstance(stream.factored_features, bool):
        raise ValueError(f"factored_features must be True or False, got {stream.factored_features!r}")
