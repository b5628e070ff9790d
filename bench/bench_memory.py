"""Where the insights job's memory goes, stage by stage, at sizes where embedding would take an hour.

    .venv/bin/python bench/bench_memory.py --sizes 100000 1000000
    .venv/bin/python bench/bench_memory.py --sizes 1000000 --no_trim     # without beam_jobs/freed_memory.py

**Memory only: the vectors are not embeddings.** The job runs in this process on the DirectRunner's
in-process engine with `backends.embedding.embed_texts` replaced by a unit vector drawn from a hash of
each text (same shape and dtype as the model's, 384 float32), so a 1M-conversation run takes minutes;
everything else (reading, bounding, blocks, DP k-means, assignment, keywords, report) is the real job.
The clusters are meaningless; time and quality come from bench/bench_pipeline.py.

Every `--interval` seconds a thread records this process's RSS, the stage the progress reporter last
named, and the engine's live buffers: each stage output (ListBuffer, encoded bytes) and shuffle table
(GroupingBuffer, its values held decoded) that the FnApiRunner keeps in memory between stages.
Printed per stage: the peak RSS while it ran and the largest buffers seen then.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import os
import re
import subprocess
import sys
import tempfile
import time
import weakref

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.bench_pipeline import USERS_PER_CONVERSATION, generate  # noqa: E402
from bench.sampling import PeriodicSampler  # noqa: E402
from synthetic.sample import LENGTHS  # noqa: E402


def hash_vectors(name, texts, batch_size=64, backend="torch", device="cpu") -> np.ndarray:
    """A unit vector per text from a hash of the text: the embedding's shape, none of its meaning."""
    out = np.empty((len(texts), 384), dtype=np.float32)
    for i, text in enumerate(texts):
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        vector = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
        out[i] = vector / np.linalg.norm(vector)
    return out


class _StderrStages(io.TextIOBase):
    """Passes stderr through and remembers the stage of the progress reporter's last line."""

    def __init__(self, stream):
        self._stream, self.stage = stream, "starting"

    def write(self, text):
        match = re.search(r"\[progress [^\]]*\] ([^:(]+)", text)
        if match:
            self.stage = match.group(1).strip()
        return self._stream.write(text)

    def flush(self):
        self._stream.flush()


class BufferWatch(PeriodicSampler):
    """Samples RSS, the current stage and the FnApiRunner's live buffers until stopped."""

    def __init__(self, stages: _StderrStages, interval: float):
        super().__init__(interval)
        from apache_beam.runners.portability.fn_api_runner import execution
        self._execution, self._stages = execution, stages
        self._live = weakref.WeakSet()
        for cls in (execution.ListBuffer, execution.GroupingBuffer):
            original = cls.__init__

            def init(buffer, *args, _original=original, **kwargs):
                _original(buffer, *args, **kwargs)
                self._live.add(buffer)
            cls.__init__ = init
        self.per_stage: dict[str, dict] = {}

    def _buffers(self) -> list[str]:
        sizes = []
        for buffer in list(self._live):
            if isinstance(buffer, self._execution.ListBuffer):
                size = sum(len(chunk) for chunk in buffer._inputs)
                if size > 1e6:
                    sizes.append((size, f"stage output {size / 2**20:,.0f} MiB"))
            else:
                values = sum(len(v) for v in list(buffer._table.values()))
                grouped = sum(len(chunk) for part in (buffer._grouped_output or []) for chunk in part)
                if values > 1000 or grouped > 1e6:
                    sizes.append((max(grouped, values), f"shuffle table {values:,} values decoded"
                                  if values else f"shuffle output {grouped / 2**20:,.0f} MiB"))
        return [label for _, label in sorted(sizes, reverse=True)[:3]]

    def sample(self):
        rss = int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) / 1024
        stage = self._stages.stage
        seen = self.per_stage.setdefault(stage, {"peak_rss": 0.0, "buffers": []})
        buffers = self._buffers()
        if rss >= seen["peak_rss"]:
            seen["peak_rss"], seen["buffers"] = rss, buffers


def run_job(data: str, output: str, interval: float, trim: bool, job_args: list[str]) -> dict:
    from backends import embedding
    from beam_jobs import insights
    embedding.embed_texts = hash_vectors
    if not trim:
        insights._freed_memory_returned = lambda options: contextlib.nullcontext()
    stages = _StderrStages(sys.stderr)
    started = time.time()
    with contextlib.redirect_stderr(stages), BufferWatch(stages, interval) as watch:
        code = insights.run(["--input", data, "--output", output, "--seed", "1", "--progress", "on", *job_args])
    if code != 0:
        raise SystemExit(f"the job exited {code}")
    return {"wall": time.time() - started, "per_stage": watch.per_stage}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100000, 1000000])
    parser.add_argument("--users_per_conversation", type=float, default=USERS_PER_CONVERSATION)
    parser.add_argument("--lengths", choices=LENGTHS, default="planted", help="generate_sample --lengths")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between samples")
    parser.add_argument("--no_trim", action="store_true", help="without beam_jobs/freed_memory.py's trimming")
    parser.add_argument("--workdir", default=None, help="where the generated data and outputs go (reused)")
    parser.add_argument("--child", nargs=2, metavar=("DATA", "OUTPUT"), help=argparse.SUPPRESS)
    parser.add_argument("job_args", nargs="*", help="extra flags for the job, after --")
    args = parser.parse_args(argv)
    if args.child:  # one size, in a fresh process, so one run's heap does not carry into the next
        result = run_job(*args.child, args.interval, not args.no_trim, args.job_args)
        print(f"wall {result['wall']:.0f} s; peak RSS {max(s['peak_rss'] for s in result['per_stage'].values()):,.0f} "
              f"MiB")
        print(f"{'stage (progress line)':<28} {'peak RSS MiB':>12}  largest engine buffers at that moment")
        for stage, seen in result["per_stage"].items():
            print(f"{stage:<28} {seen['peak_rss']:>12,.0f}  {'; '.join(seen['buffers'])}")
        return
    workdir = args.workdir or tempfile.mkdtemp(prefix="urania-bench-memory-")
    print(f"memory only (hash vectors, not embeddings); trimming {'off' if args.no_trim else 'on'}; "
          f"{args.lengths} lengths, {args.users_per_conversation} users per conversation; workdir {workdir}",
          flush=True)
    for size in args.sizes:
        data = os.path.join(workdir, f"conversations-{size}-{args.lengths}.jsonl")
        generate(data, size, args.users_per_conversation, args.lengths, seed=1)
        print(f"\n== {size:,} conversations", flush=True)
        child = [sys.executable, os.path.abspath(__file__), "--child", data, os.path.join(workdir, f"out-{size}"),
                 "--interval", str(args.interval), *(["--no_trim"] if args.no_trim else []), "--", *args.job_args]
        subprocess.run(child, check=True, cwd=ROOT, stderr=subprocess.DEVNULL,
                       env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})


if __name__ == "__main__":
    main()
