"""Print the environment of a second CPU dispatch for this machine, as shell `export` lines.

The regression tests run a second time with PyTorch's kernels, MKL, OpenBLAS and NumPy's SIMD loops held one
instruction-set level below what this machine offers (AVX-512 -> AVX2, AVX2 -> SSE), so that a number that
depends on the instruction set fails in CI rather than on a reader's machine. Each switch changes the bits of
float64 results on an AVX-512 machine (measured: torch's softmax/exp/sums, MKL and OpenBLAS products, NumPy's
exp/log), and float32 training ends at another model.
"""

import shlex

import torch
from numpy._core._multiarray_umath import __cpu_features__ as numpy_features

capability = torch.backends.cpu.get_cpu_capability()  # what torch dispatches to here: AVX512, AVX2 or DEFAULT
if capability == "AVX512":
    settings = {
        "ATEN_CPU_CAPABILITY": "avx2",
        "MKL_ENABLE_INSTRUCTIONS": "AVX2",
        "OPENBLAS_CORETYPE": "Haswell",
        "NPY_DISABLE_CPU_FEATURES": " ".join(
            f for f in ("X86_V4", "AVX512_ICL", "AVX512_SPR") if numpy_features.get(f)
        ),
    }
else:
    settings = {
        "ATEN_CPU_CAPABILITY": "default",
        "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
        "OPENBLAS_CORETYPE": "Nehalem",
        "NPY_DISABLE_CPU_FEATURES": " ".join(
            f for f in ("X86_V3", "X86_V4", "AVX512_ICL", "AVX512_SPR") if numpy_features.get(f)
        ),
    }
for name, value in settings.items():
    if value:
        print(f"export {name}={shlex.quote(value)}")
