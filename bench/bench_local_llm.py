"""The `local` backend on its real models (xllamacpp + a packaged Qwen2.5-Coder GGUF).

keywords: the keyword step on conversations of a generated sample, a few per planted topic, as
`--llm_steps keywords,names` runs it (facets = the user turns): speed by llama.cpp slots (calls/s,
prompt and generated tokens/s, prompt-cache hit rate from the server's /metrics), and how often the
selected keywords hit the planted topic's expected keywords, against the offline embedding selector.
Rows run as the job runs them (transforms/record_isolation.run_isolated): a conversation whose call
fails for good is dead-lettered (no keyword, counted) and the others go on.

prefix_cache: the keyword step's prompt with the public-prefix cache (local_client.PublicPrefixCache) and
without, interleaved call by call on two servers: seconds, prompt tokens computed and reused per call.
Measured (20 calls, 1 thread, load ~4-5; docs/llm_backends.md): 0.5B 2.93 vs 4.91 s a call, 1.5B 6.89
vs 13.29 s; 56 of 161 prompt tokens computed with the cache (the 110-token head reused), all without.

names: the in-process URANIA run (eval/urania_inprocess.py, offline steps, cached embeddings) on a
data set, then each released topic's keywords named by the offline namer and by the model, side by side.

    PYTHONPATH=. .venv/bin/python bench/bench_local_llm.py keywords --model qwen2.5-coder-0.5b --calls 40 --slots 1,2
    PYTHONPATH=. .venv/bin/python bench/bench_local_llm.py prefix_cache --model qwen2.5-coder-1.5b --calls 20 --per_topic 1
    PYTHONPATH=. .venv/bin/python bench/bench_local_llm.py names --model qwen2.5-coder-1.5b \\
        --input /work/evaldata/gen5k.jsonl --topics 12
    PYTHONPATH=. .venv/bin/python bench/bench_local_llm.py cost --prompt_tps 55 --generate_tps 22

cost: model time per step of a 10M-conversation night on CPU from tokens per call and tokens/s.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from backends.keyword_set import load_keyword_set
from backends.llm import local_client, prompts
from backends.llm.keyword_mapping import EmbeddingKeywordMapper
from backends.llm.steps import LLMClusterNamer, LLMKeywordSelector
from backends.offline import EmbeddingKeywordSelector, KeywordClusterNamer
from config.embedding import Encoder
from config.llm import LLMParams
from eval.config_flags import JOB_DEFAULT, add_config_flags, config_from
from eval.data import embed_cached, load_dataset, planted_topics
from synthetic.topics import PLANTED_TOPICS
from transforms.record_isolation import run_isolated


def _config(model: str, slots: int, threads: int) -> LLMParams:
    return LLMParams(llm_backend="local", llm_model=model, pseudonymize="off", llm_max_retries=1, llm_timeout_s=600,
                     llm_max_concurrency=slots, llm_threads=threads, prefix_cache=slots == 1)


def planted_sample(path: str, per_topic: int, calls: int):
    """(facets, embeddings, planted topic names) of up to `calls` conversations, round robin over topics."""
    facets, topics = planted_facets(path, per_topic, calls)
    return facets, embed_cached(facets), topics


def planted_facets(path: str, per_topic: int, calls: int) -> tuple[list[str], list[str]]:
    """(facets, planted topic names) of up to `calls` conversations, round robin over topics."""
    dataset = load_dataset(path)
    planted = planted_topics(path)
    by_topic: dict[str, list[int]] = {}
    for i, conversation in enumerate(dataset.conversations):
        topic = planted.get(conversation.conversation_id)
        if topic is not None and len(by_topic.setdefault(topic, [])) < per_topic:
            by_topic[topic].append(i)
    rounds = [by_topic[t][r] for r in range(per_topic) for t in sorted(by_topic) if r < len(by_topic[t])][:calls]
    return [dataset.facets[i] for i in rounds], [planted[dataset.conversations[i].conversation_id] for i in rounds]


def agreement(picks: list[list[str]], topics: list[str]) -> dict:
    expected = {t.name: set(t.expected_keywords) for t in PLANTED_TOPICS}
    hits = sum(1 for p, t in zip(picks, topics) if set(p) & expected[t])
    chosen = sum(len(p) for p in picks)
    right = sum(len(set(p) & expected[t]) for p, t in zip(picks, topics))
    return {"conversations": len(picks), "hit": hits / len(picks), "precision": right / chosen if chosen else 0.0,
            "empty": sum(1 for p in picks if not p) / len(picks), "keywords_per_conversation": chosen / len(picks)}


class _RecordingMapper(EmbeddingKeywordMapper):
    """Keeps the model's own words, so other similarity floors can be scored without new calls."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.words: list[list[str]] = []

    def map(self, words_per_row, max_keywords):
        self.words.extend(words_per_row)
        return super().map(words_per_row, max_keywords)


def keywords(args) -> None:
    facets, embeddings, topics = planted_sample(args.input, args.per_topic, args.calls)
    keyword_set = load_keyword_set(args.keyword_set).keywords
    offline = EmbeddingKeywordSelector(keyword_set, Encoder("all-MiniLM-L6-v2"))
    offline_picks = offline.select(facets, embeddings, 5)
    rows = [("offline embedding selector", None, agreement(offline_picks, topics), None)]
    examples = []
    for slots in [int(s) for s in args.slots.split(",")]:
        config = _config(args.model, slots, args.threads)
        # the prefix cache restores one slot: more slots are measured without it
        server = local_client.acquire_server(local_client.resolve_local_model(args.model), args.threads, slots,
                                             prefix_cache=slots == 1)
        try:
            mapper = _RecordingMapper(keyword_set, Encoder("all-MiniLM-L6-v2"))
            selector = LLMKeywordSelector(config, keyword_set, mapper=mapper)
            selector.setup()
            words_by_row: dict[int, list[str]] = {}

            def select_rows(rows: list[int]) -> list[list[str]]:
                mapped = len(mapper.words)
                chosen = selector.select([facets[i] for i in rows], embeddings[rows], 5)
                words_by_row.update(zip(rows, mapper.words[mapped:]))
                return chosen

            before, started = server.metrics(), time.monotonic()
            outcomes = run_isolated(select_rows, list(range(len(facets))))
            seconds, after = time.monotonic() - started, server.metrics()
            selector.teardown()
        finally:
            local_client.release_server(server)
        totals = selector.counters.totals
        # a dead-lettered conversation votes for nothing in the job: no keyword here
        picks = [chosen if error is None else [] for chosen, error in outcomes]
        dead_lettered = sum(error is not None for _, error in outcomes)
        processed = after.get("prompt_tokens_total", 0) - before.get("prompt_tokens_total", 0)
        speed = {"seconds": seconds, "calls_per_s": len(facets) / seconds,
                 "prompt_tokens": totals["prompt_tokens"], "completion_tokens": totals["completion_tokens"],
                 "prompt_tokens_per_s": processed / max(1e-9, after.get("prompt_seconds_total", 0)
                                                        - before.get("prompt_seconds_total", 0)),
                 "generated_tokens_per_s": (after.get("tokens_predicted_total", 0) - before.get("tokens_predicted_total", 0))
                 / max(1e-9, after.get("tokens_predicted_seconds_total", 0) - before.get("tokens_predicted_seconds_total", 0)),
                 "prompt_cache_hit_rate": 1 - processed / max(1, totals["prompt_tokens"]),
                 "failures": totals["failures"], "dead_lettered": dead_lettered, "repaired": totals["repaired"]}
        rows.append((f"{args.model}, {slots} slot(s), {args.threads} thread(s)", slots, agreement(picks, topics), speed))
        words = [words_by_row.get(i, []) for i in range(len(facets))]
        examples = list(zip(topics, facets, offline_picks, picks, words))
        if totals["failures"] == 0:
            for floor in (0.4, 0.5, 0.6, 0.7, 1.01):
                floored = EmbeddingKeywordMapper(keyword_set, Encoder("all-MiniLM-L6-v2"), min_similarity=floor)
                label = "exact only" if floor > 1 else f"floor {floor}"
                rows.append((f"{args.model}, same answers, {label}", None,
                             agreement(floored.map(words, 5), topics), None))
    print(f"{len(facets)} conversations of {len(set(topics))} planted topics ({args.input})\n")
    print("| selector | hit (>=1 expected keyword) | precision | no keyword | calls/s | prompt tok/s | generated tok/s "
          "| prompt-cache hits | failures | dead-lettered |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, _, agree, speed in rows:
        s = speed or {}
        print(f"| {name} | {agree['hit']:.0%} | {agree['precision']:.0%} | {agree['empty']:.0%} | "
              + (f"{s['calls_per_s']:.2f} | {s['prompt_tokens_per_s']:.1f} | {s['generated_tokens_per_s']:.1f} | "
                 f"{s['prompt_cache_hit_rate']:.0%} | {s['failures']} | {s['dead_lettered']} |" if s
                 else "- | - | - | - | - | - |"))
    print("\n| planted topic | offline | model's words | mapped onto K |\n|---|---|---|---|")
    for topic, _, off, llm, words in examples[:args.examples]:
        print(f"| {topic} | {', '.join(off)} | {', '.join(words)} | {', '.join(llm)} |")
    print(json.dumps({"rows": [{"selector": r[0], "agreement": r[2], "speed": r[3]} for r in rows]}))


def prefix_cache(args) -> None:
    """The keyword step's calls with the public-prefix cache (local_client.PublicPrefixCache) and
    without, on two servers of the model, the calls interleaved (cache first on even calls, second on
    odd ones) so that the machine's speed swings hit both alike. Computed prompt tokens are the
    server's own count (/metrics prompt_tokens_total), so "reused" = prompt tokens - computed."""
    facets, _ = planted_facets(args.input, args.per_topic, args.calls)
    clients = {on: local_client.LocalChatClient(args.model, threads=args.threads, prefix_cache=on) for on in (True, False)}
    schema = prompts.keywords_schema(5)
    calls: dict[bool, list[dict]] = {True: [], False: []}
    try:
        for i, facet in enumerate(facets):
            for on in ((True, False) if i % 2 == 0 else (False, True)):
                server = clients[on].server
                before, started = server.metrics(), time.monotonic()
                answer = clients[on].complete(prompts.select_messages(facet, 5), json_output=schema, max_tokens=96,
                                              timeout_s=600)
                seconds, after = time.monotonic() - started, server.metrics()
                calls[on].append({"seconds": seconds, "prompt_tokens": answer.prompt_tokens,
                                  "computed": after["prompt_tokens_total"] - before["prompt_tokens_total"],
                                  "prompt_seconds": after["prompt_seconds_total"] - before["prompt_seconds_total"],
                                  "generated": answer.completion_tokens, "text": answer.text})
        heads = clients[True].server.prefix_cache.counts["heads_computed"]
    finally:
        for client in clients.values():
            client.close()
    print(f"{args.model}, {args.threads} thread(s): {len(facets)} keyword calls of {args.input} each with and "
          f"without the prefix cache, interleaved; the cached server computed {heads} head(s) once (in its "
          f"first call)\n")
    print("| prefix cache | s per call (mean) | s per call (median) | prompt tokens per call | computed | reused "
          "| prompt s per call | generated tokens per call |\n|---|---|---|---|---|---|---|---|")
    for on in (True, False):
        rows = calls[on]
        mean = {key: float(np.mean([r[key] for r in rows])) for key in ("seconds", "prompt_tokens", "computed",
                                                                        "prompt_seconds", "generated")}
        print(f"| {'on' if on else 'off'} | {mean['seconds']:.2f} | {np.median([r['seconds'] for r in rows]):.2f} | "
              f"{mean['prompt_tokens']:.1f} | {mean['computed']:.1f} | {mean['prompt_tokens'] - mean['computed']:.1f} "
              f"| {mean['prompt_seconds']:.2f} | {mean['generated']:.1f} |")
    # every call after the first (which computes the head): the steady state
    ratios = [off["seconds"] / on["seconds"] for on, off in zip(calls[True][1:], calls[False][1:])]
    same = sum(on["text"] == off["text"] for on, off in zip(calls[True], calls[False]))
    print(f"\nwithout / with the cache, per call after the first: median {np.median(ratios):.2f}x "
          f"(min {min(ratios):.2f}, max {max(ratios):.2f}); the same answer text in {same} of {len(facets)} calls")
    print(json.dumps({"model": args.model, "threads": args.threads, "heads_computed": heads,
                      "calls": {"on" if on else "off": [{k: v for k, v in r.items() if k != "text"} for r in calls[on]]
                                for on in calls}}))


def names(args) -> None:
    from eval.urania_inprocess import run_urania
    dataset = load_dataset(args.input)
    embeddings = embed_cached(dataset.facets)
    report = run_urania(dataset.conversation_ids, dataset.user_ids, dataset.facets, embeddings,
                        config_from(args), seed=args.seed)
    topics = sorted((t for t in report["topics"] if t["keywords"]), key=lambda t: -t["size"])[:args.topics]
    namer = LLMClusterNamer(_config(args.model, 1, args.threads))
    offline = KeywordClusterNamer()
    started = time.monotonic()
    rows = [(t["keywords"], offline.name(t["keywords"]), namer.name(t["keywords"])) for t in topics]
    seconds = time.monotonic() - started
    totals = namer.counters.totals
    print(f"{args.input} (epsilon {args.epsilon}): {len(report['topics'])} topics released, "
          f"{len(topics)} largest with keywords named; "
          f"{args.model}: {seconds / max(1, len(rows)):.1f} s a name, {totals['failures']} failures, "
          f"{totals['repaired']} repaired, {totals['prompt_tokens']} prompt + {totals['completion_tokens']} "
          f"generated tokens\n")
    print("| released keywords | offline name | model name | model description |\n|---|---|---|---|")
    for words, (off_name, _), (name, description) in rows:
        print(f"| {', '.join(words)} | {off_name} | {name} | {description} |")


# Tokens per call measured on the local model (tests/backends/test_local_backend.py's job run and the names bench):
# (new prompt tokens after the cached prefix, generated tokens); facets: a conversation of ~6,000 chars.
TOKENS_PER_CALL = {"facets": (1500, 40), "keywords": (60, 23), "names": (40, 60)}
# Calls per night (docs/performance.md: 10M read, kept fraction 0.50, k = 50, m = 200).
CALLS_PER_NIGHT = {"facets": 4_971_400, "keywords": 10_000, "names": 50}


def cost(args) -> None:
    print(f"one thread per call, {args.prompt_tps} prompt tok/s, {args.generate_tps} generated tok/s, "
          f"{args.usd_per_vcpu_hour} USD per vCPU-hour\n")
    print("| step | calls per night | s per call | vCPU-hours | USD |\n|---|---|---|---|---|")
    for step, calls in CALLS_PER_NIGHT.items():
        prompt, generated = TOKENS_PER_CALL[step]
        seconds = prompt / args.prompt_tps + generated / args.generate_tps
        hours = calls * seconds / 3600
        print(f"| {step} | {calls:,} | {seconds:.1f} | {hours:,.1f} | {hours * args.usd_per_vcpu_hour:,.2f} |")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=("keywords", "prefix_cache", "names", "cost"))
    parser.add_argument("--prompt_tps", type=float, default=55.0, help="cost: prompt tokens/s of one thread")
    parser.add_argument("--generate_tps", type=float, default=22.0, help="cost: generated tokens/s of one thread")
    parser.add_argument("--usd_per_vcpu_hour", type=float, default=0.056)
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--input", default="/work/evaldata/gen5k.jsonl")
    parser.add_argument("--keyword_set", default=None)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--slots", default="1", help="keywords: comma-separated slot counts to compare")
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--per_topic", type=int, default=4)
    parser.add_argument("--examples", type=int, default=10)
    parser.add_argument("--topics", type=int, default=12, help="names: how many of the largest topics")
    # names: the in-process run's k and epsilon (inf: no noise)
    add_config_flags(parser, overridable=False, num_clusters=JOB_DEFAULT, epsilon=JOB_DEFAULT)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    np.seterr(all="ignore")
    {"keywords": keywords, "prefix_cache": prefix_cache, "names": names, "cost": cost}[args.command](args)


if __name__ == "__main__":
    main()
