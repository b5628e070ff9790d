"""How much a released topic's label rests on its own DP keyword votes, and what the label then says.

A topic's keywords come from its own DP keyword votes (`HISTOGRAM_SOURCE`), or, when none cleared the
noise floor, from the keywords nearest its DP centre (`CENTROID_SOURCE`: post-processing, no vote of
its conversations behind them), or there are none. The centre's nearest keywords are a guess at what
the topic is about: a topic of C++ questions can sit nearest "encoded instructions". For a
trust-and-safety reader a wrong label in a sensitive category (misuse, crime, self-harm, ...: the
keyword set marks them, backends/keyword_set.py) is the costliest error, so:

- `VOTED`: keywords from the topic's own votes; its name is a finding, and it may sit in a sensitive
  category's group;
- `APPROXIMATE`: keywords nearest its centre, dominant category not sensitive; the name says
  "(approximate)";
- `UNVERIFIED`: keywords nearest its centre whose dominant category is sensitive; the name is
  "Possibly <category> (unverified)" without the sensitive keywords, and the topic never joins that
  category's group (transforms/topic_hierarchy.py puts it in `UNVERIFIED_GROUP`);
- `NO_LABEL`: no keywords at all.

Both the job (transforms/name_clusters.py) and the in-process evaluation call `with_label_evidence`.
"""

from __future__ import annotations

from backends.keyword_categories import dominant_category
from backends.offline import in_running_text, note_label_source
from core.report import HISTOGRAM_SOURCE

VOTED = "dp_votes"
APPROXIMATE = "approximate"
UNVERIFIED = "unverified"
NO_LABEL = "none"
EVIDENCE = (VOTED, APPROXIMATE, UNVERIFIED, NO_LABEL)
# The group that holds every UNVERIFIED topic (never the sensitive category's own group).
UNVERIFIED_GROUP = "Unverified labels"
APPROXIMATE_SUFFIX = " (approximate)"


def label_evidence(source: str, keywords: list[str], category_of: dict[str, str | None],
                   sensitive: frozenset[str]) -> str:
    """One of EVIDENCE for a topic labelled with `keywords` from `source` (core.report's sources)."""
    if not keywords:
        return NO_LABEL
    if source == HISTOGRAM_SOURCE:
        return VOTED
    return UNVERIFIED if dominant_category(keywords, category_of) in sensitive else APPROXIMATE


def unverified_text(category: str) -> tuple[str, str]:
    """Name and description of a topic whose centre-nearest keywords lie in sensitive `category`."""
    about = in_running_text(category)
    return (f"Possibly {about} (unverified)",
            f"No keyword vote of this topic's own conversations cleared the privacy noise. The keywords nearest "
            f"its DP centre lie in a sensitive category ({about}), which is not evidence that its conversations "
            "are about it: treat it as unlabelled until a night with more data labels it by its own votes.")


def with_label_evidence(topic: dict, source: str, category_of: dict[str, str | None],
                        sensitive: frozenset[str]) -> dict:
    """A named topic ({"name", "description", "keywords", ...}) with `label_source`, `label_evidence`,
    and its name and description saying how far they can be trusted (see the module docstring)."""
    evidence = label_evidence(source, topic["keywords"], category_of, sensitive)
    marked = {**topic, "description": note_label_source(topic["description"], source), "label_source": source,
              "label_evidence": evidence}
    if evidence == APPROXIMATE and not marked["name"].endswith(APPROXIMATE_SUFFIX):
        marked["name"] = marked["name"] + APPROXIMATE_SUFFIX
    elif evidence == UNVERIFIED:
        marked["name"], marked["description"] = unverified_text(dominant_category(topic["keywords"], category_of))
    return marked
