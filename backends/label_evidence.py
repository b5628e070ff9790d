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
- `UNVERIFIED`: keywords nearest its centre whose dominant category is sensitive; the name is
  "Possibly <category> (unverified)", it gets no synthetic exemplars, and it never joins that
  category's group (transforms/topic_hierarchy.py puts it in `UNVERIFIED_GROUP`);
- `NO_LABEL`: no keywords at all.

A centre guess (approximate or unverified) never releases a keyword of a sensitive category, so no
name, description, exemplar or group built from its keywords carries one (`shown_keywords`). Both
the job (transforms/name_clusters.py) and the in-process evaluation call `labelled_topic` through
`name_topic`.
"""

from __future__ import annotations

from backends.keyword_categories import dominant_category
from backends.offline import MAX_NAME_WORDS, cut_name, in_running_text, note_label_source
from core.report import CATEGORY_SOURCE, HISTOGRAM_SOURCE

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
UNVERIFIED_SUFFIX = " (unverified)"


def label_evidence(source: str, keywords: list[str], category_of: dict[str, str | None],
                   sensitive: frozenset[str]) -> str:
    """One of EVIDENCE for a topic labelled with `keywords` from `source` (core.report's sources)."""
    if source == CATEGORY_SOURCE:
        return CATEGORY_VOTED
    if not keywords:
        return NO_LABEL
    if source == HISTOGRAM_SOURCE:
        return VOTED
    return UNVERIFIED if dominant_category(keywords, category_of) in sensitive else APPROXIMATE


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


def unverified_text(category: str) -> tuple[str, str]:
    """Name and description of a topic whose centre-nearest keywords lie in sensitive `category`."""
    about = in_running_text(category)
    return (f"Possibly {about}{UNVERIFIED_SUFFIX}",
            f"No keyword vote of this topic's own conversations cleared the privacy noise. The keywords nearest "
            f"its DP centre lie mostly in a sensitive category ({about}), which is not evidence that its "
            "conversations are about it: treat it as unlabelled until a night with more data labels it by its own "
            "votes. Its sensitive keywords are not shown.")


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


def labelled_topic(name_keywords, keywords: list[str], source: str, category_of: dict[str, str | None],
                   sensitive: frozenset[str], voted_category: str | None = None) -> dict:
    """A released topic's {"name", "description", "keywords", "label_source", "label_evidence"}, and
    "voted_category" when its votes support one. `name_keywords(keywords) -> (name, description)` is
    the namer; it is not asked for a topic named by its category alone, nor for an unverified topic
    (its name is fixed, and an LLM namer would only be sent the sensitive guess)."""
    evidence = label_evidence(source, keywords, category_of, sensitive)
    shown = shown_keywords(keywords, evidence, category_of, sensitive)
    if source == CATEGORY_SOURCE:
        if voted_category is None:
            raise ValueError("a topic labelled by its category votes needs the voted category")
        name, description = category_text(voted_category, shown)
    elif evidence == UNVERIFIED:
        name, description = unverified_text(dominant_category(keywords, category_of))
    else:
        name, description = name_keywords(shown)
        description = note_label_source(description, source)
        if evidence == APPROXIMATE:
            name = approximate_name(name)
    topic = {"name": name, "description": description, "keywords": shown, "label_source": source,
             "label_evidence": evidence}
    if evidence in VOTED_CATEGORY_EVIDENCE and voted_category is not None:
        topic["voted_category"] = voted_category
    return topic
