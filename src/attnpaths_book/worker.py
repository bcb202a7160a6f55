"""Worker process that executes one notebook with papermill: ``python -m attnpaths_book.worker SPEC.json``.

The executor starts one worker per chapter, so that the operating system reports the peak memory of the
chapter (worker and kernel) when it ends. SPEC holds ``input``, ``output`` (notebook paths), ``parameters``,
``cwd``, ``progress_bar``, ``error_file``, ``usage_file`` (where a successful run writes its peak memory,
:func:`peak_rss_kib`) and ``parent_pid`` (the executor's process; when it is missing, the
worker's parent at its start). Exit status: 0 success; 3 a cell raised (``error_file`` holds the cell index
and the error); 4 anything else failed (``error_file`` holds the traceback); 5 the executor's process died
(killed): the worker ends at once, and the kernel, which watches the worker, ends within a second, so a
killed run leaves no chapter running.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import threading
import time
import traceback
from pathlib import Path

from attnpaths.json_files import read_json

CELL_FAILED = 3
WORKER_FAILED = 4
ORPHANED = 5
PARENT_POLL_S = 0.2


def _end_with_parent(parent_pid: int) -> None:
    """Exit (status :data:`ORPHANED`) as soon as the process ``parent_pid`` is no longer this one's parent."""

    def watch():
        while os.getppid() == parent_pid:
            time.sleep(PARENT_POLL_S)
        os._exit(ORPHANED)

    threading.Thread(target=watch, name="end-with-parent", daemon=True).start()


def _kernel_manager_class():
    """The kernel manager: jupyter_client's, without the interrupt it sends before its shutdown request (the
    kernel, idle after the last cell, answers it with the log line ``ERROR | KeyboardInterrupt caught in
    kernel`` although nothing was interrupted), and with CurveZMQ transport encryption when the kernel supports
    it (ipykernel warns on every start otherwise)."""
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import default

    class QuietShutdownKernelManager(AsyncKernelManager):
        async def _async_interrupt_kernel(self):
            if self.shutting_down:  # the shutdown request alone ends an idle kernel
                return
            await super()._async_interrupt_kernel()

    if not AsyncKernelManager.class_traits().get("transport_encryption"):
        return QuietShutdownKernelManager

    class EncryptedKernelManager(QuietShutdownKernelManager):
        @default("transport_encryption")
        def _encryption_default(self):
            return "auto"

    return EncryptedKernelManager


def main(argv=None) -> int:
    """Execute the notebook described by the spec file ``argv[0]``; returns the exit status."""
    argv = sys.argv[1:] if argv is None else argv
    spec = read_json(argv[0], "execution spec")
    # a spec without parent_pid comes from an executor started before this checkout was updated
    _end_with_parent(spec.get("parent_pid", os.getppid()))
    error_file = Path(spec["error_file"])
    try:
        import papermill

        papermill.execute_notebook(
            spec["input"],
            spec["output"],
            parameters=spec["parameters"],
            cwd=spec["cwd"],
            progress_bar=spec["progress_bar"],
            kernel_manager_class=_kernel_manager_class(),
        )
    except KeyboardInterrupt:
        raise
    except Exception as err:  # reported to the executor, which names the chapter
        if type(err).__name__ == "PapermillExecutionError":
            record = {
                "kind": "cell",
                "cell_index": err.cell_index,
                "ename": err.ename,
                "evalue": err.evalue,
                "traceback": list(err.traceback),
            }
            status = CELL_FAILED
        else:
            record = {"kind": "worker", "traceback": traceback.format_exc().splitlines()}
            status = WORKER_FAILED
        error_file.write_text(json.dumps(record))
        return status
    Path(spec["usage_file"]).write_text(json.dumps({"peak_rss_kib": peak_rss_kib()}))
    return 0


def peak_rss_kib() -> int:
    """Peak resident memory, in KiB, of this worker's own program and of the children it reaped (the kernel).

    ``ru_maxrss`` of a process started from a large parent also holds the parent's resident memory at the
    fork (Linux carries the old address space's high-water mark across ``exec``), so the executor's view of
    the worker would report the executor's size; ``VmHWM`` is the high-water mark of this program's own
    address space. The kernel, started from this small worker, is measured by ``RUSAGE_CHILDREN``."""
    own = 0
    status = Path("/proc/self/status")
    if status.is_file():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                own = int(line.split()[1])
    else:  # no procfs (e.g. macOS): the process's own maximum, which there does not carry a parent's size
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // (1024 if sys.platform == "darwin" else 1)
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // (1024 if sys.platform == "darwin" else 1)
    return int(max(own, children))


if __name__ == "__main__":
    sys.exit(main())
