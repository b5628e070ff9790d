"""How much a released topic's label rests on its own DP keyword votes, and what the label then says.

A topic's keywords come from its own DP keyword votes (`HISTOGRAM_SOURCE`), or only its DP category
votes cleared (`CATEGORY_SOURCE`: it is named by that category, with no keyword), or, when none cleared the
noise floor, from the keywords nearest its DP centre (`CENTROID_SOURCE`: post-processing, no vote of
its conversations behind them), or there are none. The centre's nearest keywords are a guess at what
the topic is about: a topic of C++ questions can sit nearest "encoded instructions". For a
trust-and-safety reader a wrong label in a sensitive category (misuse, crime, self-harm, ...: the
keyword set marks them, backends/keyword_set.py) is the costliest error, so:

- `VOTED`: keywords from the topic's own votes; its name is a finding, and it may sit in a sensitive
  category's group (`voted_category` says which category its votes support, as for CATEGORY_VOTED);
- `CATEGORY_VOTED`: its category is its own votes, no keyword's cleared; it is named by the category,
  and its keywords are that category's nearest its centre (a guess inside a finding: none are shown
  for a sensitive category);
- `APPROXIMATE`: keywords nearest its centre, dominant category not sensitive; the name says
  "(approximate)";
- `UNVERIFIED`: keywords nearest its centre whose dominant category is sensitive. The guess is never
  published: the topic is named by the dominant category of the rest of those keywords,
  "<category> (approximate)", or "Unlabelled topic" when none of them has a non-sensitive category
  (`unverified_text`); it gets no synthetic exemplars, and it never joins a category's group
  (transforms/topic_hierarchy.py puts it in `UNVERIFIED_GROUP`);
- `NO_LABEL`: no keywords at all.

A centre guess (approximate or unverified) never releases a keyword of a sensitive category, so no
name, description, exemplar or group built from its keywords carries one (`shown_keywords`).

Votes name a sensitive category only when they are a large share of the topic's votes: the lower
95% bound of that share (`vote_share`) must be at least `SENSITIVE_NAME_SHARE`, one half (`may_name`).
A topic whose sensitive votes cleared their floor but not that bound (a miscellany of a few users, a
third of whose votes went to one sensitive category) is named by its other evidence
(transforms/voted_labels.py drops the thin category before the topic's keywords and category are
chosen), and the share is released as a number, `sensitive_share` (post-processing of DP values).

A name from votes must also stand for its topic: a keyword can clear the noise floor while holding a
small part of a large topic's votes. Each vote-named topic publishes its keywords' and category's
shares of its votes with 95% intervals (`keyword_shares`, `category_share`: transforms/voted_labels.py
`vote_shares`), and keeps its name unless the share of what names it is shown to be small (its upper
bound under `NAME_SHARE`): its lead keyword or its category (`named_by_votes`); a topic where neither does is named
"Mixed: <its top keywords>". Over all of K a keyword's share is a ratio to a sum of |K| noisy values,
so its interval is wide and the category (a share of ~40 values) decides, unless --keyword_candidates
narrows the keywords a topic's share is taken over. Sensitive categories keep their own, stricter rule above.

Both the job (transforms/name_clusters.py) and the in-process evaluation call `labelled_topic` through
`name_topic`, and both label topics through transforms/voted_labels.py's LabelTopics.
"""

from __future__ import annotations

import math

from backends.keyword_categories import dominant_category
from backends.offline import MAX_NAME_WORDS, UNLABELLED_NAME, cut_name, in_running_text, join_words, note_label_source
from core.label_sources import CATEGORY_SOURCE, HISTOGRAM_SOURCE
from dp_ops.dp_counts import noise_upper_quantile

VOTED = "dp_votes"
CATEGORY_VOTED = "dp_category_votes"
APPROXIMATE = "approximate"
UNVERIFIED = "unverified"
NO_LABEL = "none"
EVIDENCE = (VOTED, CATEGORY_VOTED, APPROXIMATE, UNVERIFIED, NO_LABEL)
# Evidence of a category from the topic's own votes: it may sit in that category's group.
VOTED_CATEGORY_EVIDENCE = (VOTED, CATEGORY_VOTED)
# The group that holds every UNVERIFIED topic (never the sensitive category's own group).
UNVERIFIED_GROUP = "Unverified labels"
APPROXIMATE_SUFFIX = " (approximate)"
# The smallest lower bound on a sensitive category's share of a topic's votes that lets it name the topic.
SENSITIVE_NAME_SHARE = 0.5
# Each bound of `vote_share` takes each of its two noisy sums at its one-sided 1 - SHARE_TAIL quantile,
# so it fails with probability at most 2 x SHARE_TAIL = 5% (a union bound): a 95% bound.
SHARE_TAIL = 0.025
# A keyword or category whose share of its topic's votes is shown to be under this (its upper 95% bound)
# does not name the topic (docs/report.md, "Names that stand for their topic": chosen on the shared real
# mix and the generated sample, where the lower bound is 0 for most well-named topics).
NAME_SHARE = 0.2
# A vote-named topic none of whose keywords or category reaches NAME_SHARE: "Mixed: <top keywords>".
MIXED_PREFIX = "Mixed: "
MIXED_KEYWORDS = 3


def label_evidence(source: str, keywords: list[str], category_of: dict[str, str | None],
                   sensitive: frozenset[str]) -> str:
    """One of EVIDENCE for a topic labelled with `keywords` from `source` (core.label_sources)."""
    if source == CATEGORY_SOURCE:
        return CATEGORY_VOTED
    if not keywords:
        return NO_LABEL
    if source == HISTOGRAM_SOURCE:
        return VOTED
    return UNVERIFIED if dominant_category(keywords, category_of) in sensitive else APPROXIMATE


def sensitive_guess(keywords: list[str], source: str, category_of: dict[str, str | None],
                    sensitive: frozenset[str]) -> str | None:
    """The sensitive category an UNVERIFIED topic's centre-nearest keywords point at (None for any
    other label). Never released: for an operator's private/ output only. (It is post-processing of
    the released DP centres and the public K, so it costs no budget; it is withheld because it is a
    guess that no vote supports.)"""
    if label_evidence(source, keywords, category_of, sensitive) != UNVERIFIED:
        return None
    return dominant_category(keywords, category_of)


def shown_keywords(keywords: list[str], evidence: str, category_of: dict[str, str | None],
                   sensitive: frozenset[str]) -> list[str]:
    """The keywords a topic releases: all of its own votes; of a centre guess, only those outside the
    sensitive categories, so that no name, description, exemplar, group or later page built from them
    carries a sensitive word that no vote supports."""
    if evidence == VOTED:
        return list(keywords)
    return without_sensitive(keywords, category_of, sensitive)


def without_sensitive(keywords: list[str], category_of: dict[str, str | None], sensitive: frozenset[str]) -> list[str]:
    """`keywords` less those of a sensitive category: what a list of keywords nearest a DP centre (a
    guess, no vote behind it) may release, as a label's keywords or as --keyword_mode both's
    centroid_keywords."""
    return [k for k in keywords if category_of.get(k) not in sensitive]


def unverified_text(category: str | None) -> tuple[str, str]:
    """Name and description of a topic whose centre-nearest keywords lie mostly in a sensitive category.
    The guess is not shown: it is named by `category`, the dominant category of the rest of those
    keywords (never a sensitive one), or, without one, is an unlabelled topic."""
    about = ("No keyword vote of this topic's own conversations cleared the privacy noise, and most of the "
             "keywords nearest its DP centre lie in a category that only a topic's own votes may name, which is "
             "not evidence that its conversations are about it; those keywords are not shown.")
    if category is None:
        return UNLABELLED_NAME, f"{about} Treat it as unlabelled until a night with more data labels it by its own votes."
    return (approximate_name(category),
            f"{about} It is named by {in_running_text(category)}, the category of the other keywords nearest "
            "its centre: an approximate guess, to be treated as unlabelled until its own votes label it.")


def category_text(category: str, keywords: list[str]) -> tuple[str, str]:
    """Name and description of a topic whose category votes cleared the noise and no keyword's did;
    `keywords`: the ones shown, that category's nearest its DP centre."""
    guess = (f" Its keywords ({', '.join(keywords)}) are the ones of that category nearest its DP centre, not ones "
             "its conversations chose." if keywords else "")
    return (cut_name(category, MAX_NAME_WORDS),
            f"This topic's conversations voted for {in_running_text(category)} (its DP category votes cleared the "
            f"privacy noise); no single keyword's votes did.{guess}")


def approximate_name(name: str) -> str:
    """`name` + APPROXIMATE_SUFFIX, cut at a word boundary so that the whole keeps MAX_NAME_WORDS."""
    return cut_name(name, MAX_NAME_WORDS - len(APPROXIMATE_SUFFIX.split())) + APPROXIMATE_SUFFIX


def vote_share(category: str, part: float, part_columns: int, rest: float, rest_columns: int,
               noise: dict | None) -> dict:
    """{"category", "share", "low", "high"}: the share of a topic's votes that went to sensitive
    `category`, from `part`, its noisy votes (a sum of `part_columns` released values: its category
    vote, or its keywords' votes), and `rest`, the noisy sum of the topic's `rest_columns` other
    values (its other categories, or its other candidate keywords). `noise`: each released value's
    (core's noise description; None: exact values).

    share = p / (p + r), with p and r the noisy sums clipped at 0. It grows with p and falls with r, so
    `low` takes p at its lower and r at its upper one-sided 97.5% bound (`SHARE_TAIL`: the noise's
    quantile for one value, times sqrt(columns) for a sum: exact for Gaussian noise, conservative for
    Laplace), and `high` the other way round: each is a 95% bound (a union bound over the two sums).
    Post-processing of released values; rounded to 4 decimals."""
    z = 0.0 if noise is None else noise_upper_quantile(noise, SHARE_TAIL)
    part_margin, rest_margin = z * math.sqrt(part_columns), z * math.sqrt(max(rest_columns, 0))

    def ratio(p: float, r: float, empty: float) -> float:
        p, r = max(p, 0.0), max(r, 0.0)
        return p / (p + r) if p + r > 0 else empty

    return {"category": category, "share": round(ratio(part, rest, 0.0), 4),
            "low": round(ratio(part - part_margin, rest + rest_margin, 0.0), 4),
            "high": round(ratio(part + part_margin, rest - rest_margin, 1.0), 4)}


def may_name(share: dict) -> bool:
    """Whether a sensitive category's votes (`vote_share`) are a large enough share to name their topic."""
    return share["low"] >= SENSITIVE_NAME_SHARE


def share_note(share: dict) -> str:
    """A sentence for the description of a topic that a sensitive category's votes do not name: the
    share as a number, the category itself only in the topic's `sensitive_share` (the description is
    what an exemplar writer sees)."""
    exact = share["low"] == share["high"]  # no noise: the non-private evaluation
    bounds = "" if exact else f" (95% bounds {share['low']:.0%} to {share['high']:.0%})"
    rule = "" if exact else f" (its lower bound must reach {SENSITIVE_NAME_SHARE:.0%})"
    return (f" {share['share']:.0%} of its votes{bounds} went to a sensitive category, too small "
            f"{'' if exact else 'or uncertain '}a share to name it by{rule}; its sensitive_share says which.")


def stands_for_topic(row: dict | None) -> bool:
    """Whether a keyword's or category's share of its topic's votes (a histogram_rows row) may be a
    meaningful part of it: not shown to be under NAME_SHARE. A topic's votes are a sample of tens of
    users, so a share's interval is wide; a lower-bound rule would rename most well-named topics."""
    return row is not None and row["share_high"] >= NAME_SHARE


def named_by_votes(evidence: str, shares: dict | None) -> bool:
    """Whether a topic labelled from votes with `shares` (`vote_shares`) keeps the name its votes give:
    its lead keyword (VOTED) or its category (the head of a VOTED name, a CATEGORY_VOTED name) stands
    for it. A topic without shares, or not named by its votes, keeps its name."""
    if shares is None or evidence not in VOTED_CATEGORY_EVIDENCE:
        return True
    lead = shares["keywords"][0] if evidence == VOTED and shares["keywords"] else None
    return stands_for_topic(lead) or stands_for_topic(shares.get("category"))


def mixed_text(keywords: list[str], shares: dict) -> tuple[str, str]:
    """Name and description of a topic none of whose keywords or category stands for it."""
    rows = {row["keyword"]: row for row in shares["keywords"]}
    held = join_words([f"{k} {rows[k]['share']:.0%}" for k in keywords[:MIXED_KEYWORDS] if k in rows])
    return (cut_name(MIXED_PREFIX + ", ".join(keywords[:MIXED_KEYWORDS]), MAX_NAME_WORDS),
            f"No keyword or category holds a clear share of this topic's votes (the upper 95% bound of each "
            f"share is under {NAME_SHARE:.0%}){f'; its top keywords hold {held}' if held else ''}. It mixes "
            "several requests.")


def labelled_topic(name_keywords, keywords: list[str], source: str, category_of: dict[str, str | None],
                   sensitive: frozenset[str], voted_category: str | None = None,
                   sensitive_share: dict | None = None, shares: dict | None = None) -> dict:
    """A released topic's {"name", "description", "keywords", "label_source", "label_evidence"}, and
    "voted_category" when its votes support one, "sensitive_share" (`vote_share`) when a sensitive
    category's votes cleared their floor, and with `shares` (`vote_shares`) its shown keywords' shares
    ("keyword_shares") and its voted category's ("category_share"); a topic whose name would not
    stand for it is named as mixed (`named_by_votes`). `name_keywords(keywords) -> (name, description)` is
    the namer; it is not asked for a topic named by its category alone, nor for an unverified topic
    (its name is fixed, and an LLM namer would only be sent a guess). The caller
    (transforms/voted_labels.py) has already kept a sensitive category that `may_name` refuses out of
    `keywords` and `voted_category`."""
    evidence = label_evidence(source, keywords, category_of, sensitive)
    shown = shown_keywords(keywords, evidence, category_of, sensitive)
    if not named_by_votes(evidence, shares):
        name, description = mixed_text(shown or [voted_category], shares)
    elif source == CATEGORY_SOURCE:
        if voted_category is None:
            raise ValueError("a topic labelled by its category votes needs the voted category")
        name, description = category_text(voted_category, shown)
    elif evidence == UNVERIFIED:
        name, description = unverified_text(dominant_category(shown, category_of))
    else:
        name, description = name_keywords(shown)
        description = note_label_source(description, source)
        if evidence == APPROXIMATE:
            name = approximate_name(name)
    if sensitive_share is not None and not may_name(sensitive_share):
        description += share_note(sensitive_share)
    topic = {"name": name, "description": description, "keywords": shown, "label_source": source,
             "label_evidence": evidence}
    if evidence in VOTED_CATEGORY_EVIDENCE and voted_category is not None:
        topic["voted_category"] = voted_category
    if sensitive_share is not None:
        topic["sensitive_share"] = dict(sensitive_share)
    if shares is not None:
        topic["keyword_shares"] = [row for row in shares["keywords"] if row["keyword"] in shown]
        if shares.get("category") is not None and topic.get("voted_category"):
            topic["category_share"] = dict(shares["category"])
    return topic


def voted_categories(topic: dict, category_of: dict[str, str | None]) -> frozenset[str]:
    """The categories a released topic's own DP votes support: its voted category (VOTED or
    CATEGORY_VOTED), and the categories of its keywords when they are its own votes (VOTED). A name
    that no vote wrote (one decoded from the DP centre, backends/centre_decoder.py) may lie in a
    sensitive category only if it is one of these: the rule names from votes already follow
    (`may_name` was applied before the label was chosen, transforms/voted_labels.py)."""
    evidence = topic.get("label_evidence")
    supported = set()
    if evidence in VOTED_CATEGORY_EVIDENCE and topic.get("voted_category"):
        supported.add(topic["voted_category"])
    if evidence == VOTED:
        supported |= {category_of.get(k) for k in topic.get("keywords") or []}
    return frozenset(c for c in supported if c is not None)
