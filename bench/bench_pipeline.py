"""End-to-end and per-stage throughput of the insights job on generated data (offline backends).

    .venv/bin/python bench/bench_pipeline.py --conversations 5000
    .venv/bin/python bench/bench_pipeline.py --conversations 5000 -- --direct_running_mode=multi_processing

Generates N conversations, runs `python -m beam_jobs.insights` in a child process (so its peak
memory can be read), and prints conversations/s per stage (from the job's stage_micros metrics,
i.e. processing time summed over workers) and end to end (wall clock), plus the child's peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=5000)
    parser.add_argument("--users", type=int, default=None, help="default: 36%% of conversations")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("job_args", nargs="*", help="extra flags for the job, after --")
    args = parser.parse_args(argv)
    workdir = args.workdir or tempfile.mkdtemp(prefix="urania-bench-")
    data = os.path.join(workdir, "conversations.jsonl")
    output = os.path.join(workdir, "out")
    users = args.users or max(1, int(args.conversations * 0.36))
    subprocess.run([sys.executable, "-m", "beam_jobs.generate_sample", "--output", data, "--conversations",
                    str(args.conversations), "--users", str(users), "--seed", str(args.seed)], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL)
    command = [sys.executable, "-m", "beam_jobs.insights", "--input", data, "--output", output,
               "--seed", str(args.seed), *args.job_args]
    started = time.perf_counter()
    subprocess.run(command, check=True, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    stats = json.load(open(os.path.join(output, "private", "run_stats.json")))
    kept = stats["conversations_after_bounding"]

    print(f"machine: {os.cpu_count()} cores, {cpu_model()}, python {platform.python_version()}")
    print(f"command: {' '.join(command[1:])}")
    print(f"input: {stats['read']} conversations read, {kept} after bounding (C=5), {stats['users']} users")
    print(f"{'stage':<22}{'seconds':>10}{'share':>8}{'conv/s':>12}")
    stage_total = sum(stats["stage_seconds"].values()) or 1.0
    for stage, seconds in sorted(stats["stage_seconds"].items(), key=lambda kv: -kv[1]):
        rate = f"{kept / seconds:,.0f}" if seconds > 0 else "-"
        print(f"{stage:<22}{seconds:>10.2f}{seconds / stage_total:>8.0%}{rate:>12}")
    print(f"{'end to end (wall)':<22}{wall:>10.2f}{'':>8}{stats['read'] / wall:>12,.1f}  (read conversations/s)")
    print(f"job wall inside run(): {stats['wall_seconds']:.2f} s; peak RSS of the job process: {peak_mib:,.0f} MiB")


if __name__ == "__main__":
    main()
