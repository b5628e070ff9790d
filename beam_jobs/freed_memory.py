"""Hands the in-process engine's freed memory back to the OS while a local run goes on.

The DirectRunner's in-process engine (FnApiRunner) keeps each shuffle's table and each stage's
output in this process and frees them once they are read. glibc keeps most of those pages: the
freed objects are millions of small chunks scattered through the heap, so the process stays at its
high-water mark and the next stage's buffers come on top of it. `malloc_trim(0)` returns every
free page. Measured at 1M generated conversations (bench/bench_memory.py; docs/performance.md,
"Memory"): peak RSS 6,967 MiB without it, 5,484-6,294 MiB with it (two runs). Dataflow's workers are
separate processes with their own memory management, and get nothing from here.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import threading

INTERVAL_SECONDS = 5.0


def _malloc_trim():
    """glibc's malloc_trim, or None (another C library, or none found)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    return getattr(libc, "malloc_trim", None)


@contextlib.contextmanager
def freed_memory_returned(interval: float = INTERVAL_SECONDS, trim=None):
    """While the block runs, calls malloc_trim(0) every `interval` seconds from a daemon thread; a
    no-op where the C library has no malloc_trim. `trim`: the function to call (tests)."""
    trim = trim or _malloc_trim()
    if trim is None:
        yield
        return
    stop = threading.Event()

    def trim_until_stopped():
        while not stop.wait(interval):
            trim(0)

    thread = threading.Thread(target=trim_until_stopped, name="freed-memory", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
