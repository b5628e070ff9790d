"""Writes the centre decoder's public bank of candidate names (backends/centre_decoder.py), once, offline.

    OMP_NUM_THREADS=1 .venv/bin/python scripts/build_name_bank.py [--model qwen2.5-coder-0.5b] \
        [--keywords_per_call 6] [--output beam_jobs/resources/centre_name_bank.json]

Public input only: the bundled keyword set's categories and keywords. For each category, its keywords in
the set's order are taken a few at a time, and the local model (backends/llm/steps.LLMLabelWriter, the
decoder's own prompts) writes up to four labels, "name" and one-sentence "description", about each
group. Each label keeps the category it was written for: the decoder offers a sensitive category's
labels only to a topic whose own votes support that category. No conversation, and no data set, is
read; the model runs on this machine (llama.cpp, loopback). Rerun it when the keyword set or the
prompts change; it took 18 minutes (165 calls) on a loaded 2-core machine with the 0.5B model.
"""

from __future__ import annotations

import argparse
import collections
import json
import time

from backends.centre_decoder import DEFAULT_BANK, split_label
from backends.exemplars import candidate_problem
from backends.keyword_set import load_keyword_set
from backends.llm import local_client
from backends.llm.steps import MAX_LABELS_PER_CALL, LLMLabelWriter
from config.llm import LLMParams


def build(model: str, keywords_per_call: int, threads: int) -> dict:
    keyword_set = load_keyword_set()
    by_category: dict[str, list[str]] = collections.defaultdict(list)
    for keyword, category in keyword_set.category_of().items():
        if category is not None:
            by_category[category].append(keyword)
    config = LLMParams(llm_backend="local", llm_model=model, pseudonymize="off", llm_max_retries=1,
                       llm_timeout_s=300, llm_max_concurrency=1, llm_threads=threads)
    held = local_client.acquire_server(local_client.local_model_path(model), threads=threads, slots=1)
    writer = LLMLabelWriter(config)
    labels, seen = [], set()
    try:
        for category in sorted(by_category):
            keywords = by_category[category]
            for start in range(0, len(keywords), keywords_per_call):
                group = keywords[start:start + keywords_per_call]
                topic = {"name": category, "voted_category": category, "keywords": group}
                for text in writer.write_about(topic, ", ".join(group), MAX_LABELS_PER_CALL):
                    parts = split_label(text)
                    if parts is None or candidate_problem(text) is not None or text.casefold() in seen:
                        continue
                    seen.add(text.casefold())
                    labels.append({"category": category, "name": parts[0], "description": parts[1]})
            print(f"{category}: {sum(1 for label in labels if label['category'] == category)} labels", flush=True)
    finally:
        writer.teardown()
        local_client.release_server(held)
    return {"format": "urania-centre-name-bank", "version": 1,
            "written_by": f"scripts/build_name_bank.py, local {model}, {keywords_per_call} keywords per call",
            "source": "the bundled keyword set's categories and keywords (public); no conversation was read",
            "calls": dict(writer.counters.totals), "labels": labels}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--keywords_per_call", type=int, default=6)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output", default=DEFAULT_BANK)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    bank = build(args.model, args.keywords_per_call, args.threads)
    with open(args.output, "w", encoding="utf-8") as handle:
        json.dump(bank, handle, indent=1, ensure_ascii=False)
        handle.write("\n")
    print(f"{len(bank['labels'])} labels -> {args.output} ({time.perf_counter() - started:.0f} s; calls {bank['calls']})")


if __name__ == "__main__":
    main()
