"""SIMPLE-CLIO: the NON-PRIVATE baseline URANIA is compared with (for evaluation only).

Same input reading and validation, facets and embedding model as the job (eval/data.py); ordinary
k-means (scikit-learn) on all valid conversations, no contribution bounding, no noise. Each cluster is
summarised from ~10 randomly sampled members plus a few contrastive members of the nearest clusters,
through a ClusterSummariser (the CLIO-style counterpart of backends.interfaces.ClusterNamer, which may
see member text). Offline, ExtractiveSummariser builds the summary from member facets: distinctive
words as keywords and quoted member openings as the description. That is exactly the leaky case the
privacy audits measure, so this output must never be published.

The optional defence (`--k_min`, `--redact`): drop clusters with fewer than k_min distinct users and
replace PII-regex matches (the release gate's patterns) in every summary.

    python -m eval.utility.simple_clio --input sample/conversations.jsonl --output out/clio --num_clusters 50

writes OUTPUT/non_private_baseline/release/report.json (the job's report format, "privacy":
{"differentially_private": false, ...}) and OUTPUT/non_private_baseline/private/assignments.jsonl.
"""

from __future__ import annotations

import abc
import argparse
import collections
import dataclasses
import json
import os
import re

import numpy as np

from core.pii_patterns import PII_PATTERNS
from eval.config_flags import JOB_DEFAULT, add_config_flags
from eval.data import embed_cached, load_dataset

BASELINE_FOLDER = "non_private_baseline"
_WORD = re.compile(r"[a-z][a-z'+#-]{2,}")
_STOPWORDS = frozenset("""a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further had has have having he her
here hers him his how i if in into is it its itself just me more most my no nor not now of off on once only or other our
ours out over own same she should so some such than that the their them then there these they this those through to too
under until up very was we were what when where which while who whom why will with would you your yours also get got
like want need know make help please thanks thank one two use using way much many tell give can't don't i'm it's
what's there's ticket""".split())


class ClusterSummariser(abc.ABC):
    """Names a cluster from member texts (the CLIO design; not DP). LLM backends plug in here."""

    def setup(self) -> None:
        """Loads models or clients."""

    @abc.abstractmethod
    def summarise(self, members: list[str], contrastive: list[str]) -> dict:
        """{"name", "description", "keywords"} for a cluster, given sampled member texts and
        members of nearby clusters to contrast with."""


def _words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS]


def _opening(text: str, max_chars: int) -> str:
    first = " ".join(text.split("\n", 1)[0].split())
    return first if len(first) <= max_chars else first[: max_chars - 1].rsplit(" ", 1)[0] + "…"


class ExtractiveSummariser(ClusterSummariser):
    """Offline: keywords are the members' most distinctive words (frequent in the members, rare in the
    contrastive ones); the description quotes the openings of `quotes` members. Deliberately leaky."""

    def __init__(self, keywords: int = 5, quotes: int = 3, quote_chars: int = 160):
        self.keywords = keywords
        self.quotes = quotes
        self.quote_chars = quote_chars

    def summarise(self, members: list[str], contrastive: list[str]) -> dict:
        inside = collections.Counter(w for text in members for w in set(_words(text)))
        outside = collections.Counter(w for text in contrastive for w in set(_words(text)))
        scored = sorted(inside, key=lambda w: (-(inside[w] / max(1, len(members))
                                                 - outside[w] / max(1, len(contrastive))), w))
        keywords = scored[: self.keywords]
        name = ", ".join(keywords[:3]).capitalize() if keywords else "Miscellaneous"
        quotes = [f'"{_opening(text, self.quote_chars)}"' for text in members[: self.quotes] if text.strip()]
        description = f"Conversations about {', '.join(keywords) or 'various things'}."
        if quotes:
            description += f" Typical requests: {'; '.join(quotes)}."
        return {"name": name, "description": description, "keywords": keywords}


class NamerSummariser(ClusterSummariser):
    """Any backends.interfaces.ClusterNamer (the job's namer interface; LLM namers plug in there) fed
    with the members' most distinctive words instead of DP keywords: still not private."""

    def __init__(self, namer, keywords: int = 5):
        self.namer = namer
        self._words = ExtractiveSummariser(keywords=keywords, quotes=0)

    def setup(self) -> None:
        self.namer.setup()

    def summarise(self, members: list[str], contrastive: list[str]) -> dict:
        keywords = self._words.summarise(members, contrastive)["keywords"]
        name, description = self.namer.name(keywords)
        return {"name": name, "description": description, "keywords": keywords}


def redact_pii(text: str) -> str:
    """The release gate's PII patterns replaced by a placeholder naming their kind."""
    for kind, pattern in PII_PATTERNS.items():
        text = pattern.sub(f"[{kind.upper()}]", text)
    return text


@dataclasses.dataclass(frozen=True)
class SimpleClioParams:
    """SIMPLE-CLIO's options: `num_clusters` (k, at most one per conversation), `seed` (k-means and the
    sampling), `members_per_summary` conversations summarised per cluster against `contrastive_members`
    of each of its `contrastive_clusters` nearest clusters; the defences: `k_min` (drop clusters with
    fewer distinct users; None: none dropped) and `redact` (PII-regex matches in summaries replaced)."""

    num_clusters: int = 50
    seed: int = 0
    members_per_summary: int = 10
    contrastive_clusters: int = 2
    contrastive_members: int = 3
    k_min: int | None = None
    redact: bool = False


def run_simple_clio(conversation_ids: list[str], user_ids: list[str], facets: list[str], embeddings: np.ndarray,
                    params: SimpleClioParams = SimpleClioParams(), summariser: ClusterSummariser | None = None) -> dict:
    """The baseline's report (same shape as the job's report.json) plus `_private` (assignments)."""
    from sklearn.cluster import KMeans
    summariser = summariser or ExtractiveSummariser()
    summariser.setup()
    k = max(1, min(params.num_clusters, len(facets)))
    model = KMeans(n_clusters=k, n_init=3, random_state=params.seed).fit(embeddings)
    labels = model.labels_
    centres = model.cluster_centers_ / np.maximum(np.linalg.norm(model.cluster_centers_, axis=1, keepdims=True), 1e-12)
    rng = np.random.default_rng(params.seed)
    members_of = {c: np.flatnonzero(labels == c) for c in range(k)}
    similarity = centres @ centres.T
    topics = []
    for cluster in range(k):
        members = members_of[cluster]
        if len(members) == 0:
            continue
        users = len({user_ids[i] for i in members})
        if params.k_min is not None and users < params.k_min:
            continue
        sampled = rng.choice(members, size=min(params.members_per_summary, len(members)), replace=False)
        neighbours = [c for c in np.argsort(-similarity[cluster]) if c != cluster and len(members_of[c])]
        contrast = []
        for other in neighbours[:params.contrastive_clusters]:
            pool = members_of[other]
            contrast += rng.choice(pool, size=min(params.contrastive_members, len(pool)), replace=False).tolist()
        summary = summariser.summarise([facets[i] for i in sampled], [facets[i] for i in contrast])
        if params.redact:
            summary = {"name": redact_pii(summary["name"]), "description": redact_pii(summary["description"]),
                       "keywords": [redact_pii(w) for w in summary["keywords"]]}
        topics.append({"id": int(cluster), **summary, "size": int(len(members))})
    topics.sort(key=lambda t: (-t["size"], t["id"]))
    return {
        "topics": topics,
        "privacy": {"differentially_private": False, "unit": None, "epsilon": None, "delta": None,
                    "warning": "SIMPLE-CLIO baseline: exact sizes and summaries built from member text. "
                               "NOT differentially private; for evaluation only, never publish.",
                    "defence": {"k_min_users": params.k_min, "pii_regex_redaction": params.redact}},
        "config": {"pipeline": "simple_clio", "num_clusters": k, "seed": params.seed,
                   "members_per_summary": params.members_per_summary, "contrastive_clusters": params.contrastive_clusters,
                   "contrastive_members": params.contrastive_members, "summariser": type(summariser).__name__},
        "_private": {"assignments": dict(zip(conversation_ids, labels.tolist()))},
    }


def write_report(report: dict, output: str) -> str:
    """Writes OUTPUT/non_private_baseline/{release/report.json, private/assignments.jsonl}; returns the
    run folder."""
    run_dir = os.path.join(output, BASELINE_FOLDER)
    os.makedirs(os.path.join(run_dir, "release"), exist_ok=True)
    os.makedirs(os.path.join(run_dir, "private"), exist_ok=True)
    public = {key: value for key, value in report.items() if not key.startswith("_")}
    with open(os.path.join(run_dir, "release", "report.json"), "w") as handle:
        json.dump(public, handle, indent=2)
    with open(os.path.join(run_dir, "private", "assignments.jsonl"), "w") as handle:
        for conversation_id, cluster in report["_private"]["assignments"].items():
            handle.write(json.dumps({"conversation_id": conversation_id, "cluster_id": cluster}) + "\n")
    return run_dir


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="SIMPLE-CLIO: the non-private baseline (evaluation only).")
    parser.add_argument("--input", required=True, help="JSON Lines file in the job's input schema")
    parser.add_argument("--output", required=True)
    add_config_flags(parser, overridable=False, num_clusters=JOB_DEFAULT)  # SIMPLE-CLIO's k, as the job's
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--members_per_summary", type=int, default=10)
    parser.add_argument("--k_min", type=int, default=None, help="defence: drop clusters with fewer distinct users")
    parser.add_argument("--redact", action="store_true", help="defence: redact PII-regex matches in summaries")
    parser.add_argument("--summariser", choices=("extractive", "keyword_namer"), default="extractive",
                        help="extractive: quotes members (leaky); keyword_namer: the job's offline namer on "
                             "the members' distinctive words")
    parser.add_argument("--embedding_model", default="all-MiniLM-L6-v2")
    args = parser.parse_args(argv)
    dataset = load_dataset(args.input)
    embeddings = embed_cached(dataset.facets, args.embedding_model)
    summariser = None
    if args.summariser == "keyword_namer":
        from backends.offline import KeywordClusterNamer
        summariser = NamerSummariser(KeywordClusterNamer())
    params = SimpleClioParams(num_clusters=args.num_clusters, seed=args.seed, members_per_summary=args.members_per_summary,
                              k_min=args.k_min, redact=args.redact)
    report = run_simple_clio(dataset.conversation_ids, dataset.user_ids, dataset.facets, embeddings, params, summariser)
    run_dir = write_report(report, args.output)
    print(f"NON-PRIVATE baseline: {len(report['topics'])} topics from {len(dataset)} conversations "
          f"-> {run_dir}/release/report.json")


if __name__ == "__main__":
    main()
