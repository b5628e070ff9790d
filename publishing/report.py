"""Assembling report.json from DP outputs: the release's shape, with no Beam and no data access.

Everything here is post-processing of released values (noisy sizes, DP keywords, names made from
them, the mechanisms' spends), so it costs no budget.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

from core.dp_stages import CLUSTER_SIZES
from core.label_sources import HISTOGRAM_SOURCE
from core.spend import MechanismSpend

# The keys of a released row that hold noisy counts (a size and its 95% interval, in users or conversations).
COUNT_KEYS = ("size", "low", "high")
# report.json's "noisy_counts": what its sizes are, and what the pages and tables do with them.
NOISY_COUNTS_NOTE = ("Sizes here are noisy counts as released, unclamped: the noise is unbiased, so a column few or no "
                     "users chose (a theme, a facet answer, a keyword's votes) can be below 0, and sums and means of "
                     "these values stay unbiased; shares and intervals are computed from them. report.html, "
                     "timeline.html and the CSV and Parquet tables show every count clamped at 0, as no true count is "
                     "below 0. A topic's size is released only at or above the release threshold.")


def shown_count(value):
    """A noisy count as a page or a table shows it: clamped at 0, since no true count is below 0 and the
    noise takes a small one there about half the time. report.json and timeline.json keep the released
    values (NOISY_COUNTS_NOTE); this is the one place a shown count is clamped. None stays None."""
    if value is None:
        return None
    return value if value > 0 else type(value)(0)


def shown_counts(row: dict) -> dict:
    """A copy of a released row whose COUNT_KEYS are shown_count's (the others as they were)."""
    return {key: shown_count(value) if key in COUNT_KEYS else value for key, value in row.items()}


def keyword_agreement(histogram: dict[int, list[str]], centroid: dict[int, list[str]]) -> dict:
    """How much the histogram's and the centroid's keywords agree, per topic and overall:
    Jaccard |A & B| / |A | B| and the share of the centroid's keywords the histogram also released."""
    per_topic = []
    for cluster_id in sorted(histogram):
        a, b = set(histogram[cluster_id]), set(centroid.get(cluster_id, []))
        union = a | b
        per_topic.append({"id": int(cluster_id), "shared": sorted(a & b),
                          "jaccard": len(a & b) / len(union) if union else 1.0,
                          "centroid_share_in_histogram": len(a & b) / len(b) if b else 0.0})
    mean = lambda key: (sum(t[key] for t in per_topic) / len(per_topic)) if per_topic else None  # noqa: E731
    return {"mean_jaccard": mean("jaccard"), "mean_centroid_share_in_histogram": mean("centroid_share_in_histogram"),
            "topics_with_a_shared_keyword": sum(1 for t in per_topic if t["shared"]), "per_topic": per_topic}


def privacy_section(spends: list[MechanismSpend], max_conversations_per_user: int,
                    composition: dict | None, stage_releases: Mapping[str, str] | None = None) -> dict:
    """The report's privacy guarantee. `composition` is the run's total as its budget composed it
    (dp_ops.run_budget.RunBudget.composition(): {"composition": "PLD", "accountant", "epsilon",
    "delta"}), and `spends` its registered entries, each listing the event composed. None only where
    no DP stage ran (no spends: the non-private evaluation, which states its own privacy section), and
    then the section states no total. `stage_releases` (dp_ops/dp_stage_specs.stage_releases) says
    what each stage released: it is written into the stage's entry as "releases"."""
    if composition is None and spends:
        # Every caller with DP stages has their PLD total (RunBudget): a total made up here would be another claim.
        raise ValueError("the DP stages' composed total (RunBudget.composition()) is missing")
    if any(spend.event is None for spend in spends):
        raise ValueError("a PLD total must list the event of every mechanism it composed")
    return {
        "unit": "user",
        "max_conversations_per_user": max_conversations_per_user,
        **(composition or {}),
        "mechanisms": [{**spend.to_json(), **({"releases": stage_releases[spend.stage]}
                                              if spend.stage in (stage_releases or {}) else {})}
                       for spend in spends],
    }


def size_noise_of(privacy: dict) -> dict | None:
    """The noise of a report's cluster sizes (its `cluster_sizes` mechanism's "noise"), None if it has none."""
    for mechanism in privacy.get("mechanisms", []):
        if mechanism.get("stage") == CLUSTER_SIZES:
            return mechanism.get("noise")
    return None


def noise_margin(noise: dict | None) -> float | None:
    """Half-width of the interval a noisy count falls in around the true one 95% of the time."""
    if not noise:
        return None
    if noise.get("kind") == "laplace" and "scale" in noise:
        return noise["scale"] * math.log(20)
    std = noise.get("std", noise.get("sigma"))
    return None if std is None else 1.96 * std


def labelling_section(min_users: int | None, floor: float | None, candidates_per_topic: int,
                      false_keywords_per_topic: float, category_votes: dict | None = None) -> dict:
    """What the keyword votes can label at the run's noise (privacy.min_users_to_label_a_topic and a
    sentence saying it); empty when no histogram ran (min_users None). `category_votes`: with category
    votes, {"category_vote_share", "categories", "category_release_floor",
    "sensitive_category_release_floor"}."""
    if min_users is None:
        return {}
    if category_votes:
        how = (f"A topic's category is released only if its noisy vote total reaches "
               f"{category_votes['category_release_floor']:.1f} (a sensitive category's "
               f"{category_votes['sensitive_category_release_floor']:.1f}), the value pure noise exceeds for about "
               f"{false_keywords_per_topic:g} of a topic's {category_votes['categories']} categories (a tenth of that "
               "for the sensitive ones). Its keywords are released only inside its released categories, each "
               "clearing the floor of those categories' keywords, or, without a category, the floor over all "
               f"{candidates_per_topic} candidate keywords ({floor:.1f}). ")
    else:
        how = (f"A keyword is released for a topic only if its noisy vote total reaches {floor:.1f}, "
               f"the value pure noise exceeds for about {false_keywords_per_topic:g} of a topic's "
               f"{candidates_per_topic} candidate keywords. ")
    return {
        "keyword_release_floor": floor,
        "keyword_candidates_per_topic": candidates_per_topic,
        "false_keywords_per_topic": false_keywords_per_topic,
        **(category_votes or {}),
        "min_users_to_label_a_topic": min_users,
        "labelling_note": how + (f"A user's votes weigh at most 1 in all, so a topic of fewer than {min_users} users "
                                 "cannot be labelled from its own votes, even if every one of them voted alike; such "
                                 "topics carry the keywords nearest their DP centre instead, when the report says "
                                 "so (label_source), or none."),
    }


EXEMPLARS_NOTE = ("Exemplars are synthetic: a model (or, offline, fixed templates) wrote them from the topic's "
                  "released name, description and keywords only, and they were kept for being closest to the "
                  "topic's DP centre. They are not text from any user and no user's request was shown to the "
                  "writer; they illustrate what the topic's centre is near, not what any one person asked. "
                  "They cost no privacy budget (post-processing of released values).")


DECODED_NAMES_NOTE = ("A topic whose name_evidence is dp_centre_decoded was named and described by search against its "
                      "DP centre: candidate names written from its released labels and from a public bank, kept for "
                      "being closest to the centre. The name is a guess at what the centre is near, not something its "
                      "conversations said, and may be wrong; name_from_labels is the name its labels gave. It costs no "
                      "privacy budget (post-processing of released values).")


TOKEN_DECODING_NOTE = ("A topic's token_decoded description (evidence dp_token_decoded) was written token by token by a "
                       "small language model reading a sample of the topic's conversations (at most one per user), "
                       "under differential privacy: at each token, the noisy mean of the sampled conversations' "
                       "states chose it. It is decoded from a sample, not from the whole topic, and at small sample "
                       "sizes or epsilon it may be noise; read it beside the topic's name and keywords.")


def report_topics(named_topics: dict, noisy_sizes: dict, lineages: dict | None = None) -> list[dict]:
    """The report's topics (id, lineage id when known, name, description, keywords, where the
    keywords came from, rounded noisy size, synthetic exemplars when the run wrote them), largest first."""
    lineages = {int(c): lineage for c, lineage in (lineages or {}).items()}
    topics = [
        {
            "id": int(cluster_id),
            **({"lineage": lineages[int(cluster_id)]} if int(cluster_id) in lineages else {}),
            "name": topic["name"],
            "description": topic["description"],
            "keywords": topic["keywords"],
            **({"label_source": topic["label_source"]} if "label_source" in topic else {}),
            **({"label_evidence": topic["label_evidence"]} if "label_evidence" in topic else {}),
            **({"voted_category": topic["voted_category"]} if topic.get("voted_category") else {}),
            **({"sensitive_share": topic["sensitive_share"]} if topic.get("sensitive_share") else {}),
            # each shown keyword's and the voted category's share of the topic's votes, with 95% intervals
            **{key: topic[key] for key in ("keyword_shares", "category_share") if key in topic},
            # --centre_decoder: the name and description were decoded from the DP centre (a guess)
            **({key: topic[key] for key in ("name_evidence", "name_from_labels", "centre_similarity")}
               if "name_evidence" in topic else {}),
            "size": max(0, int(round(noisy_sizes[cluster_id]))),
            **({"exemplars": topic["exemplars"]} if "exemplars" in topic else {}),
        }
        for cluster_id, topic in named_topics.items()
    ]
    topics.sort(key=lambda t: (-t["size"], t["id"]))
    return topics


@dataclasses.dataclass(frozen=True)
class ReleasePrivacy:
    """What report.json's privacy section states (privacy_section): every DP stage's spend, with its event,
    the contribution bound and the run's PLD total (`composition`, dp_ops.run_budget.RunBudget.composition);
    `stage_releases` says what each stage released; `labelling` (labelling_section) and `plan` (the nightly
    budget plan) are added as they are."""

    spends: list[MechanismSpend]
    max_conversations_per_user: int
    composition: dict | None = None
    stage_releases: Mapping[str, str] | None = None
    labelling: dict | None = None
    plan: dict | None = None

    def section(self) -> dict:
        return {**privacy_section(self.spends, self.max_conversations_per_user, self.composition,
                                  self.stage_releases),
                **(self.labelling or {}), **({"plan": self.plan} if self.plan else {})}


def build_report(named_topics: dict, noisy_sizes: dict, privacy: ReleasePrivacy, config: dict,
                 centroid_keywords: dict | None = None, hierarchy: dict | None = None, lineage: dict | None = None,
                 sections: Mapping[str, object] | None = None,
                 topic_fields: Mapping[str, Mapping[int, object]] | None = None) -> dict:
    """The release: DP outputs and their post-processing only. Topics ranked by noisy size.
    With `centroid_keywords` (--keyword_mode both), each topic also lists its centroid keywords and
    the report says how much they agree with the histogram's. `hierarchy` (transforms.topic_hierarchy,
    built from the same topics) is placed as it is. `lineage` (transforms.topic_lineage.lineage_section):
    each topic's lineage id, and the topics' centres as the report's "centres". `sections` and
    `topic_fields` are the release stages' (transforms/release_stage.report_parts): report.json's keys
    ({key: section}, last, in the stages' order) and each topic's fields ({field: {cluster id: value}}; a
    topic whose stage failed for it, dead-lettered, has none)."""
    topics = report_topics(named_topics, noisy_sizes, (lineage or {}).get("lineages"))
    report = {"topics": topics, "privacy": privacy.section(), "config": config, "noisy_counts": NOISY_COUNTS_NOTE}
    if centroid_keywords is not None:
        for topic in topics:
            topic["centroid_keywords"] = centroid_keywords.get(topic["id"], [])
        # A topic labelled from its centroid keywords (no histogram keyword cleared) has no histogram keywords.
        histogram = {t["id"]: t["keywords"] if t.get("label_source", HISTOGRAM_SOURCE) == HISTOGRAM_SOURCE else []
                     for t in topics}
        report["keyword_agreement"] = keyword_agreement(histogram, centroid_keywords)
    if any("exemplars" in topic for topic in topics):
        report["exemplars_note"] = EXEMPLARS_NOTE
    if any("name_evidence" in topic for topic in topics):
        report["decoded_names_note"] = DECODED_NAMES_NOTE
    for field, values in (topic_fields or {}).items():
        for topic in topics:
            if topic["id"] in values:
                topic[field] = values[topic["id"]]
    if hierarchy is not None:
        report["hierarchy"] = hierarchy
    if lineage is not None:
        report["centres"] = lineage["centres"]
    report.update(sections or {})
    return report
