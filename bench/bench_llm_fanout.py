"""Throughput of the LLM fan-out (backends/llm/fanout.py) against a loopback OpenAI-compatible server
that takes --latency_ms per answer, as a real model does: calls/s by --llm_max_concurrency, with 30%
injected faults, and a re-run answered by the cache. Batches run as the job runs them
(transforms/record_isolation.run_isolated): a conversation whose call fails for good is dead-lettered
alone and the others go on.

    PYTHONPATH=. .venv/bin/python bench/bench_llm_fanout.py --calls 400 --latency_ms 100
"""

from __future__ import annotations

import argparse
import tempfile
import time

from backends.llm.steps import LLMFacetExtractor
from config.llm import LLMParams
from core.records import Conversation, Message
from tests.support.llm_server import FakeChatServer
from transforms.record_isolation import run_isolated


def conversations(n: int) -> list[Conversation]:
    return [Conversation(f"c{i}", f"u{i}", None, (Message("user", f"question number {i} about rust lifetimes"),
                                                  Message("assistant", "an answer")))
            for i in range(n)]


def run(server, convs, concurrency: int, cache: str | None = None, timeout_s: float = 2.0) -> tuple[float, dict]:
    """(seconds, the step's call counts and "dead_lettered": conversations whose call failed for good)."""
    config = LLMParams(llm_backend="openai", llm_model="m", llm_base_url=server.base_url,
                       llm_max_concurrency=concurrency, llm_timeout_s=timeout_s, llm_max_retries=3, llm_cache=cache,
                       pseudonymize="off", backoff_base_s=0.2)
    extractor = LLMFacetExtractor(config)
    extractor.setup()
    started = time.perf_counter()
    dead_lettered = 0
    for i in range(0, len(convs), extractor.batch_size):
        outcomes = run_isolated(extractor.extract_batch, convs[i:i + extractor.batch_size])
        dead_lettered += sum(error is not None for _, error in outcomes)
    seconds = time.perf_counter() - started
    extractor.teardown()
    return seconds, dict(extractor.counters.totals, dead_lettered=dead_lettered)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--latency_ms", type=float, default=100)
    args = parser.parse_args(argv)
    convs = conversations(args.calls)
    print(f"{args.calls} facet calls, server latency {args.latency_ms:.0f} ms, batches of "
          f"{LLMFacetExtractor.batch_size}")
    with FakeChatServer(latency_s=args.latency_ms / 1000) as server:
        for concurrency in (1, 8, 32):
            seconds, counts = run(server, convs[: max(32, args.calls // (4 if concurrency == 1 else 1))], concurrency)
            print(f"  concurrency {concurrency:>2}: {counts['calls'] / seconds:7.1f} calls/s "
                  f"({counts['calls']} calls in {seconds:.1f} s)")
    with FakeChatServer(latency_s=args.latency_ms / 1000, fault_rate=0.3, seed=2, hang_s=1.5) as server:
        seconds, counts = run(server, convs, 8, timeout_s=1.0)
        print(f"  concurrency  8, 30% faults: {counts['calls'] / seconds:7.1f} calls/s; retries {counts['retries']}, "
              f"failed calls {counts['failures']} of {counts['calls']}, dead-lettered {counts['dead_lettered']} of "
              f"{len(convs)} conversations")
    with tempfile.TemporaryDirectory() as cache, FakeChatServer(latency_s=args.latency_ms / 1000) as server:
        first, _ = run(server, convs, 8, cache=cache)
        second, counts = run(server, convs, 8, cache=cache)
        print(f"  with --llm_cache: first run {first:.1f} s, re-run {second:.2f} s "
              f"({counts['cache_hits']} cache hits, {counts['requests']} requests)")


if __name__ == "__main__":
    main()
