"""Readable names (issue 59, item 3): the share of released topic names that a person can read as names.

Runs the job in-process (eval.urania_inprocess.run_urania) with --centre_decoder on a data set (default: the
shared real mix at k = 20), once per seed and per writer of the decoder's candidates (the offline
templates; with --decoder_llm MODEL also the local model), and reads every released topic name with the
readability gate (backends/readable_names.NameGate, the run's encoder and keyword set). Per run:

  topics       released topics
  readable     names the gate reads (the share of topics)
  approx       names still "(approximate)"; mixed: names still "Mixed: ..."
  weak         topics that are "(approximate)", "Mixed: ..." or not readable (issue 59's "Done when" counts these)
  decoded      topics named by their decoded name (the decoded name is nearer the DP centre than the labels')
  kept         topics whose labels' name was nearer the centre than the decoded one, and stayed
  refused      the decoder's candidates the gate refused before scoring them, of those written, by problem
  decode s     seconds in the decoder stage

`--without_gate` runs the same with the gate switched off (every name read as readable while the job runs),
then reads the released names with the gate: what the writers release without it. `--drafts N` (with
--decoder_llm) reads N of the model's first drafts for each topic a templates run released, as written:
the share of the model's own names that read, which a full decoding run with the model takes too long to
give here. `--show N` prints N names of each run, each with its evidence and the gate's verdict. `--floors`
prints the gate's floors for the joined parts of a name, measured on the keyword set under the run's encoder,
and the cosines and categories of the example pairs they were chosen on (docs/report.md, "Readable names").

    python -m eval.utility.name_readability --seeds 0 1 --show 20
    python -m eval.utility.name_readability --seeds 0 --decoder_llm qwen2.5-coder-0.5b --without_templates --show 20
    python -m eval.utility.name_readability --seeds 0 --decoder_llm qwen2.5-coder-0.5b --drafts 4 --show 40
    python -m eval.utility.name_readability --seeds 0 --without_gate --show 20
    python -m eval.utility.name_readability --floors
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import statistics
import time
from unittest import mock

from backends import embedding
from backends.centre_decoder import NAME_EVIDENCE, UNREADABLE_PREFIX
from backends.label_evidence import APPROXIMATE_SUFFIX, MIXED_PREFIX
from backends.readable_names import NameGate
from eval.config_flags import config_overrides
from eval.data import embed_cached, load_dataset
from eval.urania_inprocess import UraniaConfig, Writers, _categories, run_encoder, run_urania
from transforms.decode_centres import DecodeCentres

REAL_MIX = "real=../shared/data/arena_hard_v2_prompts.jsonl,../shared/data/hh_rlhf_harmless_test.jsonl:20"
# The pairs the floors of joined parts were chosen on: (a, b, whether a name may join them).
FLOOR_EXAMPLES = (
    ("sugar cravings", "bread", False), ("joint pain", "bread", False),
    ("React Native Dividends", "cholesterol", False), ("Docker Compose", "cholesterol", False),
    ("React Native Dividends", "Docker Compose", False),
    ("Python", "SQL", True), ("anxiety", "sleep", True), ("resume", "job interview", True),
    ("recipes", "nutrition", True), ("travel", "visa", True), ("math homework", "physics", True),
    ("literary analysis", "poetry", True), ("Business", "Marketing", True), ("Machine learning", "statistics", True),
    ("Logging", "Monitoring", True), ("weight loss", "meal planning", True), ("Recetas", "cocina", True),
    ("数据库", "查询优化", True), ("Рецепты", "выпечка", True),
)


def name_figures(topics: list[dict], gate: NameGate) -> dict:
    """The run's names read by the gate (the module docstring's columns), and each topic's verdict."""
    verdicts = [gate.problem(t["name"].removesuffix(APPROXIMATE_SUFFIX)) for t in topics]
    approximate = [t["name"].endswith(APPROXIMATE_SUFFIX) for t in topics]
    mixed = [t["name"].startswith(MIXED_PREFIX) for t in topics]
    return {"topics": len(topics), "readable": sum(v is None for v in verdicts),
            "approximate": sum(approximate), "mixed": sum(mixed),
            "weak": sum(a or m or v is not None for a, m, v in zip(approximate, mixed, verdicts)),
            "decoded": sum(t.get("name_evidence") == NAME_EVIDENCE for t in topics), "verdicts": verdicts}


def candidate_figures(decodings: dict) -> dict:
    """The decoder's candidates: written (scored + refused), and refused as unreadable, by the gate's problem."""
    refused: collections.Counter = collections.Counter()
    scored = kept = 0
    for decoded in decodings.values():
        if decoded is None:
            continue
        scored += decoded.candidates_scored
        kept += not decoded.replaces_labels
        for reason, count in decoded.dropped.items():
            if reason.startswith(UNREADABLE_PREFIX):
                refused[reason.removeprefix(UNREADABLE_PREFIX)] += count
    return {"written": scored + sum(refused.values()), "refused": dict(refused), "kept": kept}


@contextlib.contextmanager
def decoding_timer(seconds: list[float]):
    """Adds the seconds DecodeCentres.local takes (the decoder stage in-process) to `seconds`."""
    local = DecodeCentres.local

    def timed(self, named):
        started = time.perf_counter()
        try:
            return local(self, named)
        finally:
            seconds.append(time.perf_counter() - started)

    with mock.patch.object(DecodeCentres, "local", timed):
        yield


@contextlib.contextmanager
def gate_off(off: bool):
    """With `off`, every name is read as readable while the job runs (the releases as they were without the gate)."""
    if not off:
        yield
        return
    with mock.patch.object(NameGate, "problem", lambda self, name: None):
        yield


def run_once(dataset, embeddings, config: UraniaConfig, seed: int, writer, without_gate: bool) -> dict:
    seconds: list[float] = []
    started = time.perf_counter()
    with decoding_timer(seconds), gate_off(without_gate):
        report = run_urania(dataset.conversation_ids, dataset.user_ids, dataset.facets, embeddings,
                            dataclasses.replace(config, centre_decoder=True), seed=seed, noise_seed=seed,
                            writers=Writers(label_writer=writer))
    encoder = run_encoder(config)
    gate = NameGate(encoder, _categories(config.keyword_set, encoder))
    row = name_figures(report["topics"], gate)
    row.update(candidate_figures(report["_private"].get("centre_decodings", {})))
    row.update(decode_s=sum(seconds), run_s=time.perf_counter() - started, topics_list=report["topics"])
    return row


HEADER = (f"{'writer':10} {'seed':>4} {'topics':>6} {'readable':>9} {'approx':>6} {'mixed':>5} {'weak':>5} "
          f"{'decoded':>7} {'kept':>4} {'decode s':>8}  refused (of written)")


def format_row(writer: str, seed: str, row: dict) -> str:
    refused = ", ".join(f"{k} {v}" for k, v in sorted(row["refused"].items())) or "none"
    share = row["readable"] / row["topics"] if row["topics"] else float("nan")
    return (f"{writer:10} {seed:>4} {row['topics']:>6.1f} {row['readable']:>4.1f} {share:>4.0%} {row['approximate']:>6.1f} "
            f"{row['mixed']:>5.1f} {row['weak']:>5.1f} {row['decoded']:>7.1f} {row['kept']:>4.1f} {row['decode_s']:>8.0f}  "
            f"{refused} (of {row['written']:.0f})")


def show_names(row: dict, count: int) -> None:
    for topic, verdict in list(zip(row["topics_list"], row["verdicts"]))[:count]:
        evidence = "decoded" if topic.get("name_evidence") == NAME_EVIDENCE else topic.get("label_evidence")
        labels = f" (labels: {topic['name_from_labels']})" if "name_from_labels" in topic else ""
        print(f"    [{verdict or 'readable'}] {topic['name']}  <{evidence}, {topic['size']:.0f}>{labels}")


def print_floors(config: UraniaConfig) -> None:
    encoder = run_encoder(config)
    gate = NameGate(encoder, _categories(config.keyword_set, encoder))
    gate.setup()
    floors = gate.floors
    print(f"{encoder.model}: unrelated floor {floors.unrelated:.3f}, typical (one category in context) "
          f"{floors.typical:.3f}, related (two categories) {floors.related:.3f}")
    for a, b, joinable in FLOOR_EXAMPLES:
        pairs = gate.part_pairs(f"{a} and {b}")
        if not pairs:
            print(f"  {a} | {b}: a term of the keyword set, one part (expected: {'near' if joinable else 'far apart'})")
            continue
        pair = pairs[0]
        print(f"  {a} | {b}: cosine {pair.cosine:.3f}, {pair.first_category} / {pair.second_category} "
              f"(one in context: {pair.share_in_context}): "
              f"{'far apart' if pair.far_apart else 'near'} (expected: {'near' if joinable else 'far apart'})")


def drafts_figures(topics: list[dict], writer, gate: NameGate, count: int, show: bool = False) -> dict:
    """The writer's first drafts for each released topic (`count` a topic), read by the gate as they are written:
    the share of a writer's own names that read, before any search or fallback. `show`: print each as it comes
    (a slow model's partial figures survive a time limit)."""
    from backends.centre_decoder import split_label
    verdicts: collections.Counter = collections.Counter()
    examples: list[tuple[str, str | None]] = []
    for topic in topics:
        for text in writer.write(topic, count):
            parts = split_label(text)
            name = parts[0] if parts is not None else text
            verdict = gate.problem(name)
            verdicts[verdict or "readable"] += 1
            examples.append((name, verdict))
            if show:
                print(f"    [{verdict or 'readable'}] {name}  (topic: {topic['name']})", flush=True)
    return {"verdicts": dict(verdicts), "examples": examples}


def print_drafts(dataset, embeddings, config: UraniaConfig, args, writer) -> None:
    label, model_writer = writer
    encoder = run_encoder(config)
    gate = NameGate(encoder, _categories(config.keyword_set, encoder))
    for seed in args.seeds:
        started = time.perf_counter()
        report = run_urania(dataset.conversation_ids, dataset.user_ids, dataset.facets, embeddings,
                            dataclasses.replace(config, centre_decoder=False), seed=seed, noise_seed=seed)
        # Each topic's released labels, as the decoder's writer is shown them (its labels' name, no description).
        topics = [{k: t[k] for k in ("name", "keywords", "voted_category", "label_evidence") if k in t}
                  for t in report["topics"]]
        print(f"seed {seed}: {len(topics)} topics released; the model's drafts as they come:", flush=True)
        figures = drafts_figures(topics, model_writer, gate, args.drafts, show=bool(args.show))
        total = sum(figures["verdicts"].values())
        print(f"{label} drafts, seed {seed}: {len(topics)} topics, {total} names, readable "
              f"{figures['verdicts'].get('readable', 0)} ({figures['verdicts'].get('readable', 0) / max(total, 1):.0%}); "
              f"{figures['verdicts']}  ({time.perf_counter() - started:.0f} s)", flush=True)
    print(f"    {label} calls: {dict(model_writer.counters.totals)}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=REAL_MIX, help="NAME=PATH[,PATH...]:K (default: the shared real mix)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--decoder_llm", default=None, help="also the local model as the decoder's writer")
    parser.add_argument("--without_templates", action="store_true", help="with --decoder_llm: the model's runs only")
    parser.add_argument("--without_gate", action="store_true", help="the job without the gate (read after it)")
    parser.add_argument("--drafts", type=int, default=0,
                        help="with --decoder_llm: instead of decoding with the model, read N of its first drafts for "
                             "each topic a templates run released (the model's own names, before search or fallback)")
    parser.add_argument("--show", type=int, default=0, help="names printed per run")
    parser.add_argument("--floors", action="store_true", help="print the floors of joined parts and their examples")
    parser.add_argument("--set", action="append", default=[], help="FIELD=VALUE, a UraniaConfig override")
    args = parser.parse_args(argv)
    embedding.set_threads(1)
    name, _, rest = args.data.partition("=")
    paths, _, k = rest.rpartition(":")
    config = dataclasses.replace(UraniaConfig(num_clusters=int(k)), **config_overrides(args.set))
    if args.floors:
        return print_floors(config)
    dataset = load_dataset(paths)
    embeddings = embed_cached(dataset.facets, config.embedding_model)
    writers = [] if args.without_templates else [("templates", None)]
    if args.decoder_llm:
        from eval.utility.label_fit import local_label_writer
        writers.append((args.decoder_llm, local_label_writer(args.decoder_llm)))
    if args.drafts and args.decoder_llm:
        return print_drafts(dataset, embeddings, config, args, writers[-1])
    print(f"{name}: {len(dataset)} conversations, k = {k}; gate {'OFF while running' if args.without_gate else 'on'}")
    print(HEADER, flush=True)
    for label, writer in writers:
        rows = []
        for seed in args.seeds:
            rows.append(run_once(dataset, embeddings, config, seed, writer, args.without_gate))
            print(format_row(label, str(seed), rows[-1]) + f"   (run {rows[-1]['run_s']:.0f} s)", flush=True)
            show_names(rows[-1], args.show)
        numbers = [key for key, value in rows[0].items() if isinstance(value, (int, float))]
        mean = {key: statistics.fmean(r[key] for r in rows) for key in numbers}
        refused = collections.Counter()
        for r in rows:
            refused.update(r["refused"])
        mean["refused"] = {key: value / len(rows) for key, value in refused.items()}
        print(format_row(label, "mean", mean), flush=True)
        if writer is not None:
            print(f"    {label} calls: {dict(writer.counters.totals)}")


if __name__ == "__main__":
    main()
