"""How well the synthetic exemplars (issue 17, backends/exemplars.py) fit their topics: the figures of
docs/evaluation.md, "Synthetic exemplars (issue 17)".

    python -m eval.utility.exemplar_quality --data gen5k=/work/evaldata/gen5k.jsonl \
        --data arena=/work/shared/data/arena_hard_v2_prompts.jsonl:15 --seeds 0 1 2 \
        [--writer offline|local] [--reader none|local] [--llm_model qwen2.5-coder-0.5b] [--json OUT]

For each data set (NAME=PATH[:K], K the number of clusters, default the job's) and seed it runs the
in-process URANIA (eval.urania_inprocess.run_urania) with exemplars on (--exemplars_per_topic, job
defaults otherwise), written by the template writer (--writer offline) or the local model
(--writer local), and scores every released topic that got exemplars; figures are means over those
topics, then over the seeds. Similarities are in the full embedding space of all-MiniLM-L6-v2 (not
the projected clustering space the evolution ranks in), and "similarity to the members" of a text is
the mean over the topic's private members (the conversations DP k-means assigned to it) of the
cosine between the text and the member:
  evolved      the released exemplars
  first draft  the best of the writer's first draft alone (no evolution), as many as released
  other topic  the released exemplars of another topic (a fixed-seed derangement of the topics)
  keywords     the topic's released keywords joined as one text
  members      the members' own mean pairwise cosine: what a typical real member scores
  best         the most any text can score: the norm of the members' mean (a text along it)
  centre       (second line) the evolution's own objective, the mean cosine with the DP centre in the
               clustering space, evolved and first draft; and the share of topics whose released
               exemplars are exactly the first draft's best
  > first, > other   share of topics whose evolved exemplars score above the first draft's / the
                     other topic's
  planted      generated data only: share of exemplars whose nearest planted topic (cosine to each
               planted topic's member mean) is the topic's majority planted topic; evolved / first draft
  name (emb)   share of exemplars whose nearest released topic name (cosine of the name's embedding)
               is their own topic's; chance is 1 / released topics
  reader       --reader local only: the local model, shown one exemplar and every released topic name
               of the run (shuffled, numbered), picks the topic; accuracy over answered exemplars
Private members' texts are never printed or saved: only figures, and with --json the released names
and exemplars.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import statistics
import sys
import time

import numpy as np

from backends.interfaces import ExemplarWriter
from backends.llm import parsing, prompts
from backends.llm.config import make_caller
from backends.llm.fanout import CallSpec
from backends.llm.metrics import StepCounters
from config.clustering import ClusteringParams
from eval.config_flags import add_config_flags, config_overrides
from eval.data import TextEmbedder, embed_cached, load_dataset, planted_topics
from eval.tables import cell, mean
from eval.urania_inprocess import UraniaConfig, Writers, run_urania

DEFAULT_LOCAL_MODEL = "qwen2.5-coder-0.5b"

READER_INSTRUCTIONS = """Below is a numbered list of topics found in chatbot conversations, and one \
request that a user sent to an AI assistant. Which topic is the request about? Answer with one JSON \
object and nothing else: {{"topic": <the topic's number>}}

<topics>
{topics}
</topics>

<request>
{request}
</request>"""


def reader_messages(request: str, names: list[str]) -> list[dict]:
    topics = "\n".join(f"{i}. {name}" for i, name in enumerate(names, start=1))
    return [{"role": "system", "content": prompts.SYSTEM},
            {"role": "user", "content": READER_INSTRUCTIONS.format(topics=topics, request=request)}]


def reader_schema(count: int) -> dict:
    return {"type": "object", "properties": {"topic": {"type": "integer", "minimum": 1, "maximum": count}},
            "required": ["topic"], "additionalProperties": False}


def parse_choice(text: str, count: int) -> tuple[int, bool]:
    """(0-based index of the chosen topic, repaired?) from {"topic": 1..count}."""
    data, repaired = parsing._payload(text, "{", "}")
    if not isinstance(data, dict):
        raise parsing.MalformedOutput("choice is not a JSON object")
    fields = {str(k).strip().lower(): v for k, v in data.items()}
    choice = fields.get("topic")
    if isinstance(choice, str) and choice.strip().isdigit():
        choice, repaired = int(choice.strip()), True
    if isinstance(choice, bool) or not isinstance(choice, int) or not 1 <= choice <= count:
        raise parsing.MalformedOutput("topic is not a listed number")
    return choice - 1, repaired


class TopicReader:
    """The blind reader: an LLM picks which of the run's released topic names an exemplar is about."""

    step = "exemplar_reader"

    def __init__(self, config, caller=None):
        self.config = config
        self._caller = caller
        self.counters = StepCounters(self.step)

    def pick_many(self, requests: list[tuple[str, list[str]]]) -> list[int | None]:
        """For each (exemplar, topic names in the order shown): the index of the name picked, None if
        the answer could not be read."""
        if not requests:
            return []
        if self._caller is None:
            self._caller = make_caller(self.config)
        specs = [CallSpec(reader_messages(text, names), lambda answer, n=len(names): parse_choice(answer, n),
                          json_output=reader_schema(len(names)), max_tokens=16) for text, names in requests]
        results = self._caller.call_many(specs)
        self.counters.record(results)
        return [r.value if r.ok else None for r in results]

    def close(self) -> None:
        caller, self._caller = self._caller, None
        if caller is not None:
            caller.client.close()


class ProgressWriter(ExemplarWriter):
    """Another writer, with a line on stderr per call: a local model's run takes tens of minutes."""

    def __init__(self, writer: ExemplarWriter):
        self.writer = writer
        self.started = time.perf_counter()
        self.calls = 0

    def setup(self) -> None:
        self.writer.setup()

    def teardown(self) -> None:
        self.writer.teardown()

    def _note(self, what: str, count: int) -> None:
        self.calls += 1
        print(f"[{time.perf_counter() - self.started:7.0f} s] writer call {self.calls}: {what} {count}",
              file=sys.stderr, flush=True)

    def write(self, topic: dict, count: int) -> list[str]:
        written = self.writer.write(topic, count)
        self._note("draft", len(written))
        return written

    def vary(self, topic: dict, winners: list[str], count: int) -> list[str]:
        varied = self.writer.vary(topic, winners, count)
        self._note("variations", len(varied))
        return varied


def mean_cosine_to_members(vectors: np.ndarray, members: np.ndarray) -> np.ndarray:
    """Per row of `vectors` (unit), its mean cosine with the unit rows of `members`."""
    return vectors @ members.mean(axis=0)


def member_cohesion(members: np.ndarray) -> float | None:
    """Mean cosine between two different members (unit rows); None with fewer than two."""
    n = len(members)
    if n < 2:
        return None
    total = members.sum(axis=0)
    return float((total @ total - n) / (n * (n - 1)))


def derangement(count: int, seed: int) -> list[int]:
    """other[i] != i for every i: one random cycle through all indices (count >= 2)."""
    order = np.random.default_rng(seed).permutation(count)
    other = [0] * count
    for position, index in enumerate(order):
        other[int(index)] = int(order[(position + 1) % count])
    return other


def nearest(vectors: np.ndarray, references: np.ndarray) -> np.ndarray:
    """Index of each row's most similar reference row (cosine; rows and references unit)."""
    return np.argmax(vectors @ references.T, axis=1)


def unit_means(groups: dict[str, np.ndarray]) -> tuple[list[str], np.ndarray]:
    names = sorted(groups)
    means = np.stack([groups[name].mean(axis=0) for name in names])
    return names, means / np.linalg.norm(means, axis=1, keepdims=True)


@dataclasses.dataclass
class TopicScore:
    evolved: float
    first_draft: float
    other_topic: float
    keywords: float | None
    members: float | None
    ceiling: float
    planted_evolved: float | None
    planted_first: float | None
    name_hits: list[bool]
    reader_hits: list[bool | None] = dataclasses.field(default_factory=list)


def score_topics(topics: list[dict], evolutions: dict, members: dict[int, np.ndarray], embed,
                 seed: int, planted_of_topic: dict[int, str] | None = None,
                 planted_means: tuple[list[str], np.ndarray] | None = None) -> dict[int, TopicScore]:
    """The embedding figures of each released topic with exemplars and members. `members[id]`: unit
    embeddings of the topic's members; `embed`: texts -> unit rows in the same space;
    `planted_of_topic`/`planted_means`: generated data's majority planted topic per released topic and
    (names, unit member means) of the planted topics."""
    scored = [t for t in topics if t.get("exemplars") and len(members.get(t["id"], ())) > 0]
    if not scored:
        return {}
    names = [t["name"] for t in topics]
    name_vectors = embed(names)
    position = {t["id"]: i for i, t in enumerate(topics)}
    released = {t["id"]: embed([e["text"] for e in t["exemplars"]]) for t in scored}
    other = derangement(len(scored), seed) if len(scored) > 1 else [0]
    scores = {}
    for i, topic in enumerate(scored):
        cluster, own = topic["id"], members[topic["id"]]
        draft = embed([e.text for e in evolutions[cluster].first_draft])
        keywords = (float(mean_cosine_to_members(embed([", ".join(topic["keywords"])]), own)[0])
                    if topic["keywords"] else None)
        other_cluster = scored[other[i]]["id"]
        planted_evolved = planted_first = None
        if planted_of_topic and planted_means and cluster in planted_of_topic:
            planted_names, means = planted_means
            target = planted_names.index(planted_of_topic[cluster])
            planted_evolved = float(np.mean(nearest(released[cluster], means) == target))
            planted_first = float(np.mean(nearest(draft, means) == target)) if len(draft) else None
        scores[cluster] = TopicScore(
            evolved=float(mean_cosine_to_members(released[cluster], own).mean()),
            first_draft=float(mean_cosine_to_members(draft, own).mean()) if len(draft) else float("nan"),
            other_topic=(float(mean_cosine_to_members(released[other_cluster], own).mean())
                         if other_cluster != cluster else float("nan")),
            keywords=keywords, members=member_cohesion(own), ceiling=float(np.linalg.norm(own.mean(axis=0))),
            planted_evolved=planted_evolved, planted_first=planted_first,
            name_hits=[bool(n == position[cluster]) for n in nearest(released[cluster], name_vectors)])
    return scores


def read_blind(reader: TopicReader, topics: list[dict], scores: dict[int, TopicScore], seed: int) -> dict[int, int]:
    """Fills each score's reader_hits: the reader sees one exemplar and every released name, shuffled.
    Returns how often each listed number (1-based) was picked: a reader stuck on one position shows."""
    rng = np.random.default_rng(seed)
    names = [t["name"] for t in topics]
    requests, truth = [], []
    for topic in topics:
        if topic["id"] not in scores:
            continue
        for exemplar in topic["exemplars"]:
            order = [int(i) for i in rng.permutation(len(names))]
            requests.append((exemplar["text"], [names[i] for i in order]))
            truth.append((topic["id"], order.index(names.index(topic["name"]))))
    picked_numbers: collections.Counter = collections.Counter()
    for (cluster, shown_at), picked in zip(truth, reader.pick_many(requests)):
        scores[cluster].reader_hits.append(None if picked is None else picked == shown_at)
        if picked is not None:
            picked_numbers[picked + 1] += 1
    return dict(sorted(picked_numbers.items()))


def run_figures(topics: list[dict], scores: dict[int, TopicScore], evolutions: dict) -> dict:
    """One run's figures: means over the scored topics."""
    values = list(scores.values())
    answered = [h for s in values for h in s.reader_hits if h is not None]
    dropped = collections.Counter()
    for evolution in evolutions.values():
        dropped.update(evolution.dropped)
    return {
        "released": len(topics),
        "scored": len(values),
        "exemplars": sum(len(t.get("exemplars", [])) for t in topics),
        "evolved": mean(s.evolved for s in values),
        "first_draft": mean(s.first_draft for s in values),
        "other_topic": mean(s.other_topic for s in values),
        "keywords": mean(s.keywords for s in values),
        "members": mean(s.members for s in values),
        "ceiling": mean(s.ceiling for s in values),
        "beats_first": mean(float(s.evolved > s.first_draft) for s in values if not np.isnan(s.first_draft)),
        "beats_other": mean(float(s.evolved > s.other_topic) for s in values if not np.isnan(s.other_topic)),
        "planted_evolved": mean(s.planted_evolved for s in values),
        "planted_first": mean(s.planted_first for s in values),
        "name_embedding": mean(float(h) for s in values for h in s.name_hits),
        "chance": 1 / len(topics) if topics else None,
        "reader": statistics.fmean(answered) if answered else None,
        "reader_asked": sum(len(s.reader_hits) for s in values),
        "reader_answered": len(answered),
        # the evolution's own objective: cosine with the DP centre in the clustering space
        "centre_evolved": mean(mean(x.similarity for x in e.exemplars) for e in evolutions.values()),
        "centre_first": mean(mean(x.similarity for x in e.first_draft) for e in evolutions.values()),
        "unchanged": mean(float([x.text for x in e.exemplars] == [x.text for x in e.first_draft])
                           for e in evolutions.values() if e.exemplars),
        "candidates_scored": sum(e.candidates_scored for e in evolutions.values()),
        "dropped": dict(dropped),
    }


def members_by_topic(assignments: dict[str, int], index_of: dict[str, int], embeddings: np.ndarray) -> dict:
    rows: dict[int, list[int]] = {}
    for conversation_id, cluster in assignments.items():
        rows.setdefault(cluster, []).append(index_of[conversation_id])
    return {cluster: embeddings[indices] for cluster, indices in rows.items()}


def majority_planted(assignments: dict[str, int], planted: dict[str, str]) -> dict[int, str]:
    by_topic: dict[int, collections.Counter] = {}
    for conversation_id, cluster in assignments.items():
        if conversation_id in planted:
            by_topic.setdefault(cluster, collections.Counter())[planted[conversation_id]] += 1
    # Ties: the alphabetically first planted topic, so a run's figure does not depend on dict order.
    return {cluster: min(counts, key=lambda p: (-counts[p], p)) for cluster, counts in by_topic.items()}


def local_config(model: str, threads: int):
    """The local backend for the exemplar writer and the reader, which are given it directly (its
    --llm_steps is then unused); exemplars and topic names are public, so nothing is pseudonymized."""
    from config.llm import LLMParams
    return LLMParams(llm_backend="local", llm_model=model, llm_threads=threads, pseudonymize="off").resolved()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", action="append", required=True, help="NAME=PATH[:K] (repeatable)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--exemplars_per_topic", type=int, default=3)
    parser.add_argument("--writer", choices=("offline", "local"), default="offline")
    parser.add_argument("--reader", choices=("none", "local"), default="none")
    parser.add_argument("--llm_model", default=DEFAULT_LOCAL_MODEL)
    parser.add_argument("--llm_threads", type=int, default=1)
    add_config_flags(parser)
    parser.add_argument("--json", help="write every run's figures (and the released names and exemplars) here")
    args = parser.parse_args(argv)
    overrides = config_overrides(args.set)
    writer = reader = None
    if args.writer == "local":
        from backends.llm.steps import LLMExemplarWriter
        writer = LLMExemplarWriter(local_config(args.llm_model, args.llm_threads))
    if args.reader == "local":
        reader = TopicReader(local_config(args.llm_model, args.llm_threads))
    embed = TextEmbedder()
    print(f"writer {args.writer}, reader {args.reader}"
          f"{f' ({args.llm_model}, {args.llm_threads} thread)' if 'local' in (args.writer, args.reader) else ''}; "
          f"{args.exemplars_per_topic} exemplars/topic; overrides: {overrides or 'none'}; seeds {args.seeds}")
    print(f"{'data':8} {'k':>3} {'topics':>9} {'evolved':>7} {'first':>6} {'other':>6} {'kw':>6} {'members':>7} {'best':>5} "
          f"{'>first':>6} {'>other':>6} {'planted e/f':>11} {'name(emb)':>9} {'reader':>11} {'chance':>6} "
          f"{'s/run':>6} {'reader s':>8}")
    output = []
    try:
        for spec in args.data:
            name, _, rest = spec.partition("=")
            path, _, k = rest.rpartition(":") if rest.rpartition(":")[2].isdigit() else (rest, "", "")
            k = int(k) if k else ClusteringParams.num_clusters
            dataset = load_dataset(path)
            embeddings = embed_cached(dataset.facets)
            index_of = {c: i for i, c in enumerate(dataset.conversation_ids)}
            planted = planted_topics(path)
            planted_means = None
            if planted:
                groups: dict[str, list[int]] = {}
                for conversation_id, topic in planted.items():
                    if conversation_id in index_of:
                        groups.setdefault(topic, []).append(index_of[conversation_id])
                planted_means = unit_means({p: embeddings[rows] for p, rows in groups.items()})
            config = dataclasses.replace(UraniaConfig(num_clusters=k, exemplars_per_topic=args.exemplars_per_topic),
                                         **overrides)
            rows, run_seconds, reader_seconds = [], [], []
            for seed in args.seeds:
                before = collections.Counter(writer.counters.totals) if writer is not None else None
                started = time.perf_counter()
                report = run_urania(dataset.conversation_ids, dataset.user_ids, dataset.facets, embeddings, config,
                                    seed=seed, noise_seed=seed,
                                    writers=Writers(exemplar_writer=ProgressWriter(writer) if writer else None))
                run_seconds.append(time.perf_counter() - started)
                private = report.pop("_private")
                assignments = private["assignments"]
                scores = score_topics(report["topics"], private["exemplar_evolutions"],
                                      members_by_topic(assignments, index_of, embeddings), embed, seed,
                                      majority_planted(assignments, planted) if planted else None, planted_means)
                picked_numbers = None
                if reader is not None:
                    started = time.perf_counter()
                    picked_numbers = read_blind(reader, report["topics"], scores, seed)
                    reader_seconds.append(time.perf_counter() - started)
                figures = run_figures(report["topics"], scores, private["exemplar_evolutions"])
                figures["reader_picked_numbers"] = picked_numbers
                if writer is not None:
                    figures["writer_llm"] = dict(collections.Counter(writer.counters.totals) - before)
                rows.append(figures)
                output.append({"data": name, "k": k, "seed": seed, "seconds": run_seconds[-1],
                               "reader_seconds": reader_seconds[-1] if reader_seconds else None, **figures,
                               "topics": [{"name": t["name"], "keywords": t["keywords"],
                                           "exemplars": t.get("exemplars", [])} for t in report["topics"]]})
            avg = lambda key: mean(r[key] for r in rows)  # noqa: E731
            planted_cell = (f"{cell(avg('planted_evolved'), '.2f')}/{cell(avg('planted_first'), '.2f')}"
                            if planted else "-")
            reader_cell = (f"{cell(avg('reader'), '.2f')} {sum(r['reader_answered'] for r in rows)}"
                           f"/{sum(r['reader_asked'] for r in rows)}" if reader else "-")
            print(f"{name:8} {k:>3} {avg('scored'):>4.1f}/{avg('released'):<4.1f} {cell(avg('evolved')):>7} "
                  f"{cell(avg('first_draft')):>6} {cell(avg('other_topic')):>6} {cell(avg('keywords')):>6} "
                  f"{cell(avg('members')):>7} {cell(avg('ceiling'), '.2f'):>5} {cell(avg('beats_first'), '.2f'):>6} "
                  f"{cell(avg('beats_other'), '.2f'):>6} {planted_cell:>11} {cell(avg('name_embedding'), '.2f'):>9} "
                  f"{reader_cell:>11} {cell(avg('chance'), '.3f'):>6} {statistics.fmean(run_seconds):>6.1f} "
                  f"{cell(statistics.fmean(reader_seconds) if reader_seconds else None, '.1f'):>8}")
            dropped = sum((collections.Counter(r["dropped"]) for r in rows), collections.Counter())
            llm = sum((collections.Counter(r.get("writer_llm", {})) for r in rows), collections.Counter())
            print(f"{'':8} centre cosine (clustering space) evolved {cell(avg('centre_evolved'))}, first draft "
                  f"{cell(avg('centre_first'))}; topics whose exemplars are the first draft's "
                  f"{cell(avg('unchanged'), '.2f')}")
            print(f"{'':8} candidates scored {statistics.fmean(r['candidates_scored'] for r in rows):.0f}/run, "
                  f"dropped {dict(dropped) or 'none'}"
                  + (f"; writer calls {llm['calls']}, failures {llm['failures']}, fallbacks {llm['fallbacks']}, "
                     f"repaired {llm['repaired']}" if writer is not None else ""), flush=True)
    finally:
        counters = {}
        if writer is not None:
            counters["writer"] = dict(writer.counters.totals)
            writer.teardown()
        if reader is not None:
            counters["reader"] = dict(reader.counters.totals)
            reader.close()
        if counters:
            print("llm counters:", json.dumps(counters))
        if args.json:
            with open(args.json, "w", encoding="utf-8") as handle:
                json.dump({"args": vars(args), "llm": counters, "runs": output}, handle, indent=1)


if __name__ == "__main__":
    main()
