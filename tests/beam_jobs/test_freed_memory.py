"""beam_jobs/freed_memory.py: local runs hand freed heap pages back while they go, and only they."""

import threading
import time

from apache_beam.options.pipeline_options import PipelineOptions

from beam_jobs import freed_memory
from beam_jobs.insights import _freed_memory_returned


def test_trims_on_its_interval_while_the_block_runs_and_stops_after():
    calls = []
    with freed_memory.freed_memory_returned(interval=0.01, trim=calls.append):
        deadline = time.time() + 5
        while len(calls) < 3 and time.time() < deadline:
            time.sleep(0.01)
    assert len(calls) >= 3 and set(calls) == {0}  # malloc_trim(0): every free page, not only the top
    after = len(calls)
    time.sleep(0.05)
    assert len(calls) == after  # the thread is gone
    assert not any(t.name == "freed-memory" for t in threading.enumerate())


def test_the_real_malloc_trim_runs_here():
    trim = freed_memory._malloc_trim()
    assert trim is not None, "this machine's C library (glibc) has malloc_trim"
    with freed_memory.freed_memory_returned(interval=0.01):
        time.sleep(0.05)


def test_only_runs_in_this_process_get_it():
    def returns(*flags):
        return not isinstance(_freed_memory_returned(PipelineOptions(list(flags))),
                              type(freed_memory.contextlib.nullcontext()))

    assert returns() and returns("--runner", "DirectRunner") and returns("--runner", "FnApiRunner")
    assert not returns("--runner", "DirectRunner", "--direct_running_mode", "multi_processing")
    assert not returns("--runner", "DataflowRunner") and not returns("--runner", "DaskRunner")
