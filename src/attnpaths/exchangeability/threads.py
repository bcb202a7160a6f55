"""How the experiments of the subpackage use threads."""

from __future__ import annotations

import contextlib


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
