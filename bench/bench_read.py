"""Reading one large JSON Lines file with 1 and with N workers: does the split reader spread it?

    .venv/bin/python bench/bench_read.py --conversations 200000 --workers 2 --rounds 2

Generates one uncompressed file, then runs ReadConversations (reading, parsing, validation and a
count: no model) on the DirectRunner in multi_processing mode with 1 worker and with N, interleaved,
and prints wall time, records/s, the number of byte ranges and which worker processes read them.
Before the range split a file was read by the one worker that opened it, whatever N.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import apache_beam as beam  # noqa: E402
from apache_beam.options.pipeline_options import PipelineOptions  # noqa: E402

from bench.bench_pipeline import cpu_model  # noqa: E402
from synthetic.sample import generate_records  # noqa: E402
from transforms.read_conversations import DEFAULT_SPLIT_BYTES, InputRange, ReadConversations, split_file  # noqa: E402


def _read_once(path: str, workers: int, split_bytes: int) -> tuple[float, int]:
    options = PipelineOptions(["--runner=FnApiRunner", "--direct_running_mode=multi_processing",
                               f"--direct_num_workers={workers}"])
    out = os.path.join(tempfile.gettempdir(), f"urania_bench_read_{os.getpid()}.json")
    started = time.perf_counter()
    with beam.Pipeline(options=options) as pipeline:
        result = pipeline | ReadConversations(path, split_bytes=split_bytes)
        _ = (result.valid
             | "count" >> beam.combiners.Count.Globally()
             | "save" >> beam.Map(lambda n: open(out, "w").write(json.dumps(n))))
    seconds = time.perf_counter() - started
    count = json.load(open(out))
    os.remove(out)
    return seconds, count


def _range_readers(path: str, workers: int, split_bytes: int) -> int:
    """How many distinct worker processes read the file's ranges (each range records its reader's pid)."""
    folder = tempfile.mkdtemp(prefix="urania_bench_read_pids_")
    options = PipelineOptions(["--runner=FnApiRunner", "--direct_running_mode=multi_processing",
                               f"--direct_num_workers={workers}"])

    def note_pid(part: InputRange) -> None:
        with open(os.path.join(folder, f"{os.getpid()}-{part.start}"), "w"):
            pass

    size = os.path.getsize(path)
    with beam.Pipeline(options=options) as pipeline:
        _ = (pipeline
             | beam.Create([path])
             | beam.FlatMap(lambda p: split_file(p, size, split_bytes))
             | beam.Reshuffle()
             | beam.Map(note_pid))
    return len({name.split("-")[0] for name in os.listdir(folder)})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=200_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--split_mb", type=float, default=DEFAULT_SPLIT_BYTES / 2**20)
    args = parser.parse_args(argv)
    split_bytes = int(args.split_mb * 2**20)

    path = os.path.join(tempfile.mkdtemp(prefix="urania_bench_read_"), "input.jsonl")
    with open(path, "w", encoding="utf-8") as handle:
        for record in generate_records(args.conversations, max(1, args.conversations // 3), seed=1):
            handle.write(json.dumps(record) + "\n")
    size = os.path.getsize(path)
    ranges = len(split_file(path, size, split_bytes))
    print(f"machine: {cpu_model()}, {os.cpu_count()} cores; file {size / 2**20:.0f} MiB, "
          f"{args.conversations} lines, {ranges} ranges of {args.split_mb:g} MiB")
    print(f"worker processes that read ranges with {args.workers} workers: "
          f"{_range_readers(path, args.workers, split_bytes)}")
    times: dict[int, list[float]] = {1: [], args.workers: []}
    for round_ in range(args.rounds):
        for workers in (1, args.workers):
            seconds, count = _read_once(path, workers, split_bytes)
            assert count == args.conversations, (count, args.conversations)
            times[workers].append(seconds)
            print(f"round {round_ + 1}, {workers} worker(s): {seconds:.1f} s, {count / seconds:,.0f} records/s")
    best = {w: min(t) for w, t in times.items()}
    print(f"best of {args.rounds}: 1 worker {best[1]:.1f} s, {args.workers} workers {best[args.workers]:.1f} s "
          f"= {best[1] / best[args.workers]:.2f}x")
    os.remove(path)


if __name__ == "__main__":
    main()
