"""One-shot decoding of a released topic's DP centre into a name and a one-sentence description, by search.

"Differentially Private Summarization with Large Language Models" decodes one noisy mean of its
inputs' representations into text with an adapter trained on public data. Each released topic's DP
k-means centre is such a noisy mean, already paid for by the clustering. A trained adapter does not
fit this CPU-only job (issue 41), so the centre is decoded by search instead, with the synthetic
exemplars' Private Evolution loop (backends/exemplars.evolve_exemplars, one implementation for both):

- a writer drafts candidate labels, "name — one sentence", from the topic's released labels only
  (its name, voted category and keywords; never its description, which holds notes on the noise);
- a bank of labels written once, offline, from the public keyword set
  (beam_jobs/resources/centre_name_bank.json, scripts/build_name_bank.py) adds candidates that no
  released word of the topic suggests (a topic named only "Web development" may sit nearest
  "React state management");
- the candidates are embedded with the job's model and projected as the conversations were, the
  nearest to the released centre are kept, the writer varies the best few;
- the name is then chosen from the best candidates' names (`NAME_POOL`): the one nearest the centre
  on its own, joined with up to `NAME_PARTS` - 1 more ("X, Y and Z") while each brings the joined name
  nearer (`compose_name`). A DP centre is the mean of a mixed cluster: one short name rarely sits near
  it, a few of its facets together do. The name is ranked alone, not beside the topic's keywords: a name
  chosen to complement them named other facets only ("Online Ads" for an address-lookup topic).

A candidate whose name a person could not read as a name (a question, a fragment, a list of unrelated
things: backends/readable_names.py) is refused before it is scored, as a sensitive one is, and a join is made
only if it reads (`Composition.readable`). The stage (transforms/decode_centres.py) then keeps the decoded name
only where it is nearer the centre than the name the topic's labels gave (`DecodedLabel.replaces_labels`).

Every input is public or released (the centre, the topic's labels, the keyword set, the bank), so the
decoded name is post-processing: no added epsilon. It is a guess at what the centre is near, marked as
such in the report (`NAME_EVIDENCE`).

A name that no vote wrote must not put a topic in a sensitive category its votes do not support
(backends/label_evidence.py): bank labels of a sensitive category are offered only to a topic whose
own votes support that category, and a candidate is refused before it is scored (so it is never varied
or kept) when its text lies in a sensitive category the votes do not support (its nearest keywords'
category, the themes' public rule: dp_ops/theme_histogram.py), or when it holds a keyword or name word
of such a category (`SensitiveGate.sensitive_terms`). The word rule is needed beside the category rule:
the nearest-keywords rule reads the whole label, so "Stress and suicidal thoughts" lies in "Mental
health" and a topic voted "Mental health" would otherwise be named by self-harm words no vote wrote.

A topic with an unverified label (its centre's nearest keywords lie mostly in a sensitive category, no
vote behind them) is decoded too, from non-sensitive candidates only: its votes support no category, so
the bank offers it only labels of non-sensitive categories, its writer sees only its released
(non-sensitive) keywords and fixed name, and the gate refuses any candidate of a sensitive category or
holding any sensitive category's keyword or name word: its name is the one place its guess could leak. It stays UNVERIFIED
(its group, no exemplars); only its name and description change, and the description says it is
unverified (`UNVERIFIED_NOTE`). Where no candidate passes, it keeps its fixed name.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
from typing import Callable

import numpy as np

from backends.exemplars import evolve_exemplars
from backends.interfaces import ExemplarWriter
from backends.label_evidence import (
    APPROXIMATE_SUFFIX,
    MIXED_PREFIX,
    UNVERIFIED,
    may_name,
    share_note,
    voted_categories,
)
from backends.offline import MAX_NAME_WORDS, UNLABELLED_NAME, cut_name, in_running_text, join_words

# What the report's topics say of a decoded name (their `name_evidence`).
NAME_EVIDENCE = "dp_centre_decoded"
# Between a candidate's name and its description, in the one text that is embedded and ranked. Not
# ": ", which the offline namer's names hold ("Python coding: unit testing").
SEPARATOR = " \u2014 "
DEFAULT_BANK = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            "beam_jobs", "resources", "centre_name_bank.json")
# Candidates drafted from a topic's own labels (the bank's come on top) and rounds of variations.
DRAFTS = 8
ROUNDS = 1
# The best candidates (by their own closeness to the centre) whose names a decoded name may join, and how
# many names at most it joins (3 fit the real mix's topics better than 2 or 1: docs/evaluation.md, issue 41).
NAME_POOL = 30
NAME_PARTS = 3
# The problem a refused candidate is counted under (Evolution.dropped).
SENSITIVE_REFUSAL = "sensitive_without_votes"
# A candidate holding a keyword or name word of a sensitive category the topic's votes do not support (its
# category may still come out non-sensitive: the nearest-keywords rule reads the whole label).
SENSITIVE_WORD_REFUSAL = "sensitive_word_without_votes"
# What a decoded unverified topic's description adds: the label's evidence, which the decoded name hides.
UNVERIFIED_NOTE = (" Its label is unverified: no keyword vote of its own conversations cleared the privacy noise, and "
                   "most keywords nearest its DP centre lie in a category that only a topic's own votes may name "
                   "(not shown). This name is the nearest to its centre of candidates outside those categories.")


def label_text(name: str, description: str) -> str:
    """One candidate as it is embedded: "name — description" (the name's dashes made commas)."""
    name = " ".join(str(name).replace("\u2014", ",").split())
    return f"{name}{SEPARATOR}{' '.join(str(description).split())}"


def split_label(text: str) -> tuple[str, str] | None:
    """(name, description) of a candidate label, or None for one without both parts."""
    name, separator, description = text.partition(SEPARATOR)
    name, description = name.strip(" .\"'"), description.strip()
    if not separator or not name or not description:
        return None
    return cut_name(name, MAX_NAME_WORDS), description


def _sentence(text: str) -> str:
    """The first sentence of `text`, ended with a full stop."""
    first = re.split(r"(?<=[.!?])\s+", " ".join(text.split()), maxsplit=1)[0]
    return first if first.endswith((".", "!", "?")) else first + "."


def base_name(topic: dict) -> str:
    """The topic's current name as a starting point: without "(approximate)", and nothing for an
    unlabelled or a mixed one (its name is a list of keywords, which the drafts take from its keywords)."""
    name = str(topic.get("name") or "")
    name = name[: -len(APPROXIMATE_SUFFIX)] if name.endswith(APPROXIMATE_SUFFIX) else name
    return "" if name == UNLABELLED_NAME or name.startswith(MIXED_PREFIX) else name


# ---- the public bank ----

@dataclasses.dataclass(frozen=True)
class NameBank:
    """Labels written once, offline, from the public keyword set: (category, label text) pairs. The
    category is the keyword set's category they were written for (None: none)."""

    labels: tuple[tuple[str | None, str], ...] = ()

    def offered(self, supported_sensitive: frozenset[str], sensitive: frozenset[str]) -> list[str]:
        """The labels a topic may be offered: those of no sensitive category, or of one its votes support."""
        return [text for category, text in self.labels
                if category not in sensitive or category in supported_sensitive]


def load_bank(path: str | None = None) -> NameBank:
    """The bank file (default: the bundled one): {"labels": [{"category", "name", "description"}]}."""
    with open(path or DEFAULT_BANK, encoding="utf-8") as handle:
        data = json.load(handle)
    return NameBank(tuple((entry.get("category"), label_text(entry["name"], entry["description"]))
                          for entry in data["labels"]))


# ---- the offline writer ----

class TemplateLabelWriter(ExemplarWriter):
    """Candidate labels from fixed templates over a topic's released labels: the offline writer, and the
    LLM writer's per-call fallback. Deterministic."""

    def write(self, topic: dict, count: int) -> list[str]:
        keywords = list(topic.get("keywords") or [])
        base = base_name(topic) or (topic.get("voted_category") or "")
        labels = []
        if base and keywords:
            labels.append(label_text(base, f"Requests about {join_words(keywords[:3])}."))
        if base:
            labels.append(label_text(base, f"Requests about {in_running_text(base)}."))
        for i, keyword in enumerate(keywords):
            others = [k for k in keywords if k != keyword][:2]
            about = f"Requests about {keyword}" + (f", often with {join_words(others)}" if others else "") + "."
            labels.append(label_text(keyword[:1].upper() + keyword[1:], about))
            if base:
                labels.append(label_text(f"{base}: {keyword}", f"Requests about {keyword} in {in_running_text(base)}."))
        return list(dict.fromkeys(labels))[:count]

    def vary(self, topic: dict, winners: list[str], count: int) -> list[str]:
        """Each winner's name with the topic's keywords its description does not name yet."""
        keywords = list(topic.get("keywords") or [])
        varied = []
        for winner in winners:
            parts = split_label(winner)
            if parts is None:
                continue
            name, description = parts
            for keyword in keywords:
                if keyword.casefold() not in winner.casefold():
                    varied.append(label_text(name, f"{description.rstrip('.!?')}, especially {keyword}."))
        return list(dict.fromkeys(varied))[:count]


class WithBank(ExemplarWriter):
    """`writer`'s drafts after the bank's labels a topic may be offered (`offered(topic)`); its
    variations as they are. The bank's labels are many and cheap: the caller embeds each once."""

    def __init__(self, writer: ExemplarWriter, offered: Callable[[dict], list[str]]):
        self.writer, self.offered = writer, offered

    def setup(self) -> None:
        self.writer.setup()

    def teardown(self) -> None:
        self.writer.teardown()

    def write(self, topic: dict, count: int) -> list[str]:
        return self.offered(topic) + self.writer.write(topic, count)

    def vary(self, topic: dict, winners: list[str], count: int) -> list[str]:
        return self.writer.vary(topic, winners, count)


# ---- the gate and the search ----

def _words(text: str) -> list[str]:
    return re.findall(r"[\w'-]+", text.casefold())


@dataclasses.dataclass(frozen=True)
class SensitiveGate:
    """Refuses a candidate label whose category (`categories_of`: texts -> each text's category or
    None, the themes' nearest-keywords rule) is sensitive and not supported by the topic's votes, or
    that holds a term of such a category (`sensitive_terms`), whatever the topic's evidence."""

    categories_of: Callable[[list[str]], list[str | None]]
    category_of: dict
    sensitive: frozenset[str]

    def supported(self, topic: dict) -> frozenset[str]:
        return voted_categories(topic, self.category_of) & self.sensitive

    @functools.cached_property
    def category_terms(self) -> dict[str, frozenset[str]]:
        """{sensitive category: its terms}: its keywords and name, and each word of its name that no
        non-sensitive keyword or category uses ("Sexual content" gives "sexual", not "content"), as
        lower-case words joined by single spaces."""
        common = {w for text in [k for k, c in self.category_of.items() if c not in self.sensitive]
                  + [c for c in set(self.category_of.values()) if c is not None and c not in self.sensitive]
                  for w in _words(text)}
        terms = {}
        for category in self.sensitive:
            keywords = [k for k, c in self.category_of.items() if c == category]
            name_words = [w for w in _words(category) if len(w) > 2 and w not in common]
            terms[category] = frozenset(" ".join(_words(t)) for t in [*keywords, category, *name_words]) - {""}
        return terms

    def sensitive_terms(self, supported: frozenset[str] = frozenset()) -> re.Pattern | None:
        """The terms of the sensitive categories not in `supported` (`category_terms`), as whole words, a
        plural "s" or "es" either way (None: no such term). A term that a supported category has too is
        left out: the topic's votes back it (a keyword set may give two sensitive categories one word)."""
        allowed = {t for c in supported for t in self.category_terms.get(c, ())}
        terms = {t for c, ts in self.category_terms.items() if c not in supported for t in ts} - allowed
        if not terms:
            return None
        stems = {t[:-2] if t.endswith("es") else t[:-1] if t.endswith("s") else t for t in terms} - allowed
        alternatives = "|".join(re.escape(t).replace(r"\ ", r"[\s,-]+") for t in sorted(terms | stems, key=len, reverse=True))
        return re.compile(rf"(?<![\w])(?:{alternatives})(?:e?s)?(?![\w])")

    def refuse_for(self, topic: dict) -> Callable[[list[str]], list[str | None]]:
        supported = self.supported(topic)
        terms = self.sensitive_terms(supported)

        def refuse(texts: list[str]) -> list[str | None]:
            return [SENSITIVE_REFUSAL if category in self.sensitive and category not in supported
                    else SENSITIVE_WORD_REFUSAL if terms is not None and terms.search(text.casefold())
                    else None
                    for category, text in zip(self.categories_of(texts), texts)]

        return refuse


@dataclasses.dataclass(frozen=True)
class DecodedLabel:
    name: str
    description: str
    similarity: float  # cosine of the name with the topic's DP centre, in the clustering space
    # The same for a name composed from round 0's candidates alone, for evaluation only (None unless
    # Composition.first_draft asks: composing it again costs the search as much time as the name itself).
    first_draft_similarity: float | None
    round: int  # 0: its names were drafted (or from the bank); r >= 1: one is a variation written in round r
    candidates_scored: int
    dropped: dict
    # The cosine of the name the topic's labels gave (`labels_name`) with its DP centre, measured by the
    # stage (None: not measured, or a topic its labels left unlabelled).
    labels_similarity: float | None = None

    @property
    def replaces_labels(self) -> bool:
        """Whether the decoded name replaces the labels' name: only when it is nearer the topic's DP centre."""
        return self.labels_similarity is None or self.similarity > self.labels_similarity


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One scored candidate of the search: its name and description, and the round that wrote it."""

    name: str
    description: str
    round: int


@dataclasses.dataclass(frozen=True)
class Composition:
    """How decode_centre composes a name from the searched candidates: from the best `pool` names, joining at
    most `parts`; `readable` (name -> a problem or None: backends.readable_names.NameGate.problem) refuses a
    candidate or a join whose name a person could not read as a name, as the sensitive gate refuses; and
    `first_draft`, for evaluation only, also composes round 0's name (DecodedLabel.first_draft_similarity)."""

    pool: int = NAME_POOL
    parts: int = NAME_PARTS
    readable: Callable[[str], str | None] | None = None
    first_draft: bool = False


# The reason a candidate or a join the readability gate refuses is counted under: UNREADABLE_PREFIX + its problem.
UNREADABLE_PREFIX = "unreadable_"


def with_readability(refuse: Callable[[list[str]], list[str | None]] | None,
                     readable: Callable[[str], str | None] | None) -> Callable[[list[str]], list[str | None]] | None:
    """`refuse` (label texts -> a reason or None each) that also refuses a label whose name `readable` does not
    read (UNREADABLE_PREFIX + its problem); `refuse` as it is without `readable`."""
    if readable is None:
        return refuse

    def refused(texts: list[str]) -> list[str | None]:
        earlier = refuse(texts) if refuse is not None else [None] * len(texts)
        problems = []
        for text, problem in zip(texts, earlier):
            if problem is None:
                parts = split_label(text)
                unreadable = readable(parts[0] if parts is not None else text)
                problem = UNREADABLE_PREFIX + unreadable if unreadable is not None else None
            problems.append(problem)
        return problems

    return refused


def compose_name(pool: list[Candidate], direction: np.ndarray, points_of: Callable[[list[str]], np.ndarray],
                 refuse: Callable[[list[str]], list[str | None]] | None, parts: int = NAME_PARTS
                 ) -> tuple[list[Candidate], float] | None:
    """The candidates whose names, joined ("X, Y and Z", at most `parts` and MAX_NAME_WORDS words), make
    the name nearest the centre (`direction`, unit), and that cosine; greedy: the nearest single name, then
    one more name while it brings the joined name nearer. A joined name is released with its first part's
    description, so it must pass `refuse` as that label (its parts passed alone, not together). None: an
    empty pool."""
    if not pool:
        return None

    def cosines(names: list[str]) -> np.ndarray:
        return points_of(names) @ direction

    alone = cosines([c.name for c in pool])
    chosen, best = [pool[int(np.argmax(alone))]], float(np.max(alone))
    while len(chosen) < parts:
        options = [chosen + [c] for c in pool if c not in chosen
                   and len(join_words([p.name for p in chosen + [c]]).split()) <= MAX_NAME_WORDS]
        if refuse is not None and options:
            problems = refuse([label_text(join_words([p.name for p in o]), chosen[0].description) for o in options])
            options = [o for o, problem in zip(options, problems) if problem is None]
        if not options:
            break
        scores = cosines([join_words([p.name for p in o]) for o in options])
        if float(np.max(scores)) <= best:
            break
        chosen, best = options[int(np.argmax(scores))], float(np.max(scores))
    return chosen, best


def decode_centre(writer: ExemplarWriter, topic: dict, centre: np.ndarray,
                  points_of: Callable[[list[str]], np.ndarray], gate: SensitiveGate | None,
                  drafts: int = DRAFTS, rounds: int = ROUNDS, composition: Composition = Composition()
                  ) -> DecodedLabel | None:
    """The name decoded from the topic's DP centre (None: no usable candidate, or an unverified topic
    without a gate): the search (`writer`'s drafts and variations; WithBank adds the bank's labels)
    scores each candidate label by its closeness to the centre, and compose_name joins names of the best
    `composition.pool` of them (distinct names). An unverified topic is searched only with the gate, which
    refuses every sensitive candidate for it (its votes support no category). With `composition.readable`, a
    candidate whose name is not readable is refused before it is scored, and a join only if it is readable."""
    if gate is None and topic.get("label_evidence") == UNVERIFIED:
        return None
    refuse = with_readability(gate.refuse_for(topic) if gate is not None else None, composition.readable)
    # Every candidate the search scores (those it kept after the gate), with the round that wrote it:
    # the search calls points_of once a round, round 0 first.
    scored: list[tuple[str, np.ndarray, int]] = []

    def recorded(texts: list[str]) -> np.ndarray:
        points = points_of(texts)
        round_ = scored[-1][2] + 1 if scored else 0
        scored.extend((text, point, round_) for text, point in zip(texts, points))
        return points

    evolution = evolve_exemplars(writer, topic, centre, recorded, 1, drafts, rounds, refuse=refuse,
                                 search_unverified=True)
    norm = float(np.linalg.norm(centre))
    direction = np.asarray(centre, dtype=np.float32) / norm if norm > 0 else np.zeros_like(centre, dtype=np.float32)

    def best_names(last_round: int, pool: int) -> list[Candidate]:
        by_name: dict[str, Candidate] = {}
        for text, _, round_ in sorted((s for s in scored if s[2] <= last_round), key=lambda s: -float(s[1] @ direction)):
            parts_ = split_label(text)
            if parts_ is not None and parts_[0].casefold() not in by_name and len(by_name) < pool:
                by_name[parts_[0].casefold()] = Candidate(parts_[0], parts_[1], round_)
        return list(by_name.values())

    # Both compositions below embed many of the same names and joins: each text once (a text's vector
    # does not depend on its batch, so a remembered one is the one it would get again).
    known: dict[str, np.ndarray] = {}

    def names_points(texts: list[str]) -> np.ndarray:
        missing = [text for text in dict.fromkeys(texts) if text not in known]
        if missing:
            known.update(zip(missing, points_of(missing)))
        return np.stack([known[text] for text in texts]) if texts else points_of(texts)

    pool, parts = composition.pool, composition.parts
    composed = compose_name(best_names(max((s[2] for s in scored), default=0), pool), direction, names_points,
                            refuse, parts)
    if composed is None:
        return None
    names, similarity = composed
    first_draft = None
    if composition.first_draft:  # evaluation only
        first = compose_name(best_names(0, pool), direction, names_points, refuse, parts)
        first_draft = first[1] if first is not None else similarity
    return DecodedLabel(join_words([c.name for c in names]), _sentence(names[0].description), similarity,
                        first_draft, max(c.round for c in names), evolution.candidates_scored, evolution.dropped)


def labels_name(topic: dict) -> str | None:
    """The name the topic's labels gave, as it is compared with a decoded name: without "(approximate)" and
    without "Mixed: " (its keywords then); None for an unlabelled topic, which any decoded name replaces."""
    name = str(topic.get("name") or "")
    name = name[: -len(APPROXIMATE_SUFFIX)] if name.endswith(APPROXIMATE_SUFFIX) else name
    name = name[len(MIXED_PREFIX):] if name.startswith(MIXED_PREFIX) else name
    return None if not name.strip() or name == UNLABELLED_NAME else name


def decoded_topic(topic: dict, decoded: DecodedLabel) -> dict:
    """The topic with the decoded name and description; `name_from_labels` keeps the name its labels
    gave. A sensitive share too small to name the topic is still stated in the description, and an
    unverified topic's description says so (its evidence, group and lack of exemplars are unchanged)."""
    description = decoded.description
    if topic.get("label_evidence") == UNVERIFIED:
        description += UNVERIFIED_NOTE
    share = topic.get("sensitive_share")
    if share is not None and not may_name(share):
        description += share_note(share)
    return {**topic, "name": decoded.name, "description": description, "name_evidence": NAME_EVIDENCE,
            "name_from_labels": topic["name"], "centre_similarity": round(decoded.similarity, 4)}
