"""Seconds per call of each LLM step on the local model, as the job runs it: one server, one slot, the
default --llm_threads (half the cores), the public-prefix cache, no pseudonymization. These are the
per-call costs that beam_jobs/llm_estimate.py declares (LOCAL_SECONDS_PER_CALL) for the estimate a
run logs before it reads data; the same run measures the input bytes per conversation and the gzip
ratio that the estimate turns an input's size into conversations with.

    PYTHONPATH=. .venv/bin/python bench/bench_llm_call_cost.py --model qwen2.5-coder-0.5b
    PYTHONPATH=. .venv/bin/python bench/bench_llm_call_cost.py --model qwen2.5-coder-0.5b \\
        --steps exemplars,centre_names,names,keywords,facets

Steps, on the shared real mix (../shared/data: hh-rlhf harmless and arena-hard prompts, conversations
drawn at random with --seed; no text is printed):
  facets        one call per conversation (the conversation, cut to 6,000 characters)
  keywords      one call per conversation (its user turns: the offline facet, as `--llm_steps keywords`
                without facets gives the selector)
  names         one call per topic: --topics keyword lists of the bundled keyword set's categories
  centre_names  the centre decoder's label writer (--centre_decoder): its draft of DRAFTS candidates
                and one round of variations of the first three, per topic
  exemplars     the exemplar writer's draft (20 candidates) per topic (--exemplars_per_topic)
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import sys
import time

from backends.centre_decoder import DRAFTS, ROUNDS
from backends.exemplars import variations_per_round
from backends.keyword_set import load_keyword_set
from backends.llm.config import start_local_server
from backends.llm.keyword_mapping import ExactKeywordMapper
from backends.llm.local_client import default_threads
from backends.llm.steps import (
    LLMClusterNamer,
    LLMExemplarWriter,
    LLMFacetExtractor,
    LLMKeywordSelector,
    LLMLabelWriter,
)
from backends.offline import KeywordClusterNamer
from config.llm import STEPS, LLMParams
from eval.data import load_dataset

SHARED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "shared", "data")
REAL_MIX = ("hh_rlhf_harmless_test.jsonl", "arena_hard_v2_prompts.jsonl")
EXEMPLAR_CANDIDATES = 20  # --exemplar_candidates' default


def input_sizes(paths: list[str]) -> dict:
    """Bytes per conversation of each file and of all together, and how much gzip shrinks them."""
    sizes = {}
    total_bytes = total_conversations = total_gzipped = 0
    for path in paths:
        raw = open(path, "rb").read()
        conversations = raw.count(b"\n")
        gzipped = len(gzip.compress(raw, compresslevel=6))
        sizes[os.path.basename(path)] = {"conversations": conversations, "bytes": len(raw),
                                         "bytes_per_conversation": round(len(raw) / conversations),
                                         "gzip_ratio": round(len(raw) / gzipped, 2)}
        total_bytes, total_conversations, total_gzipped = (total_bytes + len(raw), total_conversations + conversations,
                                                           total_gzipped + gzipped)
    sizes["mix"] = {"conversations": total_conversations, "bytes": total_bytes,
                    "bytes_per_conversation": round(total_bytes / total_conversations),
                    "gzip_ratio": round(total_bytes / total_gzipped, 2)}
    return sizes


def timed(step, work) -> dict:
    """Runs work() with the step's client up; its calls, seconds and tokens per call."""
    step.setup()
    started = time.perf_counter()
    work()
    seconds = time.perf_counter() - started
    totals = step.counters.totals
    calls = totals["calls"]
    return {"calls": calls, "failures": totals["failures"], "seconds": round(seconds, 1),
            "seconds_per_call": round(seconds / calls, 2) if calls else None,
            "prompt_tokens_per_call": round(totals["prompt_tokens"] / calls) if calls else None,
            "completion_tokens_per_call": round(totals["completion_tokens"] / calls) if calls else None}


def topics(count: int) -> list[dict]:
    """`count` topics, as a release shows them to the writers: the first five keywords of every n-th
    category of the bundled keyword set (public), its offline name and the category."""
    keyword_set = load_keyword_set()
    by_category: dict[str, list[str]] = {}
    for keyword, category in zip(keyword_set.keywords, keyword_set.categories):
        if category and category not in keyword_set.sensitive_categories:
            by_category.setdefault(category, []).append(keyword)
    categories = sorted(by_category)
    chosen = categories[:: max(1, len(categories) // count)][:count]
    namer = KeywordClusterNamer()
    labelled = [(c, by_category[c][:5], namer.name(by_category[c][:5])) for c in chosen]
    return [{"name": name, "description": description, "keywords": keywords, "voted_category": c}
            for c, keywords, (name, description) in labelled]


def step_work(name: str, config: LLMParams, conversations, facets: list[str], shown: list[dict], args):
    """(the step, what its timed calls are) for one measured step."""
    if name == "facets":
        step = LLMFacetExtractor(config)
        return step, lambda: [step.extract(c) for c in conversations]
    if name == "keywords":
        keywords = load_keyword_set().keywords
        step = LLMKeywordSelector(config, keywords, mapper=ExactKeywordMapper(keywords))
        return step, lambda: [step.select([f], None, 5) for f in facets]
    if name == "names":
        step = LLMClusterNamer(config)
        return step, lambda: [step.name(t["keywords"]) for t in shown]
    if name == "centre_names":
        step = LLMLabelWriter(config)

        def decode():
            for topic in shown[:args.decoded]:
                drafted = step.write(topic, DRAFTS)
                for _ in range(ROUNDS):
                    step.vary(topic, drafted[:3], variations_per_round(DRAFTS, 1))
        return step, decode
    if name == "exemplars":
        step = LLMExemplarWriter(config)
        return step, lambda: [step.write(t, EXEMPLAR_CANDIDATES) for t in shown[:args.exemplar_topics]]
    raise ValueError(f"no step {name!r}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--data", default=",".join(os.path.join(SHARED, f) for f in REAL_MIX))
    parser.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: the job's)")
    parser.add_argument("--conversations", type=int, default=12, help="facet and keyword calls")
    parser.add_argument("--topics", type=int, default=12, help="naming calls")
    parser.add_argument("--decoded", type=int, default=4, help="topics whose centre names are written")
    parser.add_argument("--exemplar_topics", type=int, default=2, help="topics whose exemplars are drafted")
    parser.add_argument("--steps", default=",".join((*STEPS, "centre_names")))
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    steps = args.steps.split(",")  # measured in this order: the machine's load drifts, so compare orders
    paths = args.data.split(",")
    threads = args.threads or default_threads()
    config = LLMParams(llm_backend="local", llm_model=args.model, llm_steps=",".join(STEPS), pseudonymize="off",
                       llm_max_retries=1, llm_timeout_s=600, llm_threads=threads).resolved()
    start_local_server(config)  # as the job's preflight does: kept for the process, outside the timings
    dataset = load_dataset(",".join(paths))
    rows = random.Random(args.seed).sample(range(len(dataset)), args.conversations)
    conversations = [dataset.conversations[i] for i in rows]
    facets = [dataset.facets[i] for i in rows]
    shown = topics(args.topics)
    result = {"model": args.model, "threads": threads, "cpus": os.cpu_count(), "load_before": os.getloadavg()[0],
              "input": input_sizes(paths), "steps": {}}
    for name in steps:
        step, work = step_work(name, config, conversations, facets, shown, args)
        result["steps"][name] = {**timed(step, work), "load_before": round(os.getloadavg()[0], 1)}
        step.teardown()
        print(name, json.dumps(result["steps"][name]), file=sys.stderr, flush=True)
    if "facets" in steps:
        result["steps"]["facets"]["conversation_chars"] = round(
            sum(len(m.content) for c in conversations for m in c.messages) / len(conversations))
    if "centre_names" in steps:
        result["steps"]["centre_names"]["calls_per_topic"] = round(
            result["steps"]["centre_names"]["calls"] / max(1, min(args.decoded, len(shown))), 1)
    result["load_after"] = os.getloadavg()[0]
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
