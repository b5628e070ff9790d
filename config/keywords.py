"""The keywords group: the keyword set, how keywords are chosen and how many are released, and the
fixed public releases beside them (themes, facets)."""

from __future__ import annotations

from core.params import Params, advanced_flag, check, flag, params_group, parse_bool
from dp_ops.dp_counts import DEFAULT_FALSE_KEYWORDS_PER_TOPIC

# Keyword selectors that cost nothing per conversation: they see every conversation (sampling rate 1).
FREE_SELECTORS = ("offline", "local")
OFFLINE_SELECTOR = "offline"
PAID_SELECTOR_SAMPLES = 200


ALL_FACETS = "all"  # --facets: every facet of --facet_set
NO_FACETS = "none"  # --facets: no facet


def facet_names(facets: str) -> tuple[str, ...]:
    """--facets as names, in the order given (the facet set fixes the order of their releases); (ALL_FACETS,) for
    every facet of the set, () for none."""
    names = tuple(filter(None, (name.strip() for name in facets.split(","))))
    return () if names == (NO_FACETS,) else names


@params_group
class KeywordParams(Params):
    """Topic keywords: the keyword set, how keywords are chosen and how many are released."""

    keyword_set: str | None = flag(
        None, "Keyword set K: a text file (one keyword per line) or JSON from beam_jobs.build_keywords "
              "(docs/keyword_sets.md); default: the bundled list.")
    keyword_mode: str = advanced_flag(
        "histogram",
        "Where topic keywords come from: histogram (the default), centroid or both. With histogram, from the DP "
        "keyword histograms. With centroid, they are the t keywords of K nearest each DP k-means centre "
        "(post-processing: the histogram stages do not run, so --epsilon is shared by k-means and the cluster sizes "
        "only; every topic is then approximate or unverified, never placed in a sensitive category). With both, "
        "histogram keywords name the topics, and each topic also lists its centroid_keywords, with "
        "keyword_agreement (Jaccard per topic and mean) in report.json.",
        choices=("histogram", "centroid", "both"), public=True)
    samples_per_cluster: str = advanced_flag(
        "auto", "m: expected conversations Poisson-sampled per cluster for keyword selection (rate "
                "min(1, m / noisy size)), or 'all'. Auto (the default): all when the selector is free (the offline "
                f"embedding selector, the local LLM), {PAID_SELECTOR_SAMPLES} for paid LLM backends (openai, vertex).",
        public=True)
    keywords_per_cluster: int = flag(5, "t: keywords released per topic.", type=int, public=True, ge=1)
    max_keywords_per_conversation: int = advanced_flag(
        5, "--keyword_votes count: keywords the selector may pick per sampled conversation (bounds the "
           "histogram's sensitivity; weighted votes use --keywords_per_vote).",
        type=int, public=True, ge=1, le=20)
    keyword_min_similarity: float | None = advanced_flag(
        None, "Offline keyword selector: cosine floor between a conversation and a keyword. Default: the embedding "
              "model's own (config/embedding.py SIMILARITY_FLOORS: 0.23 for use-multilingual-v3, 0.3 for "
              "all-MiniLM-L6-v2; docs/performance.md).", type=float, ge=-1, le=1)
    keywords_per_vote: int = advanced_flag(
        2, "Weighted votes: keywords a conversation splits its vote over (weight / sqrt(j) each); 2 named more "
           "planted topics than 1 (docs/evaluation.md).", type=int,
        public=True, ge=1, le=20)
    category_vote_share: float = advanced_flag(
        0.3, "Weighted votes: the share s of a conversation's squared vote norm given to its keywords' "
             "categories (the rest to the keywords; one release, no extra budget). A topic is labelled by a "
             "voted category first, its keywords only inside it (docs/privacy.md). 0: keyword votes only; 0.3 "
             "keeps the generated sets' keyword labels and names most real topics by their votes "
             "(docs/evaluation.md). Needs a keyword set with categories; count votes take none.",
        type=float, public=True, ge=0, lt=1)
    false_keywords_per_topic: float = advanced_flag(
        DEFAULT_FALSE_KEYWORDS_PER_TOPIC,
        "Release floor: the noisy value that pure noise exceeds for this many of a topic's candidate keywords on "
        "average (the noise quantile at rate / candidates per topic). With category votes, the same holds of its "
        "categories, with a tenth of this many for the sensitive ones.", type=float, public=True, gt=0, lt=0.5)
    keyword_candidates: int = advanced_flag(
        0, "Candidate keywords per topic: the ones nearest its DP centre (post-processing, no budget); "
           "fewer candidates lower the release floor. 0 = all of K.", type=int, public=True, ge=0)
    label_fallback: str = advanced_flag(
        "centroid", "How a topic whose votes clear no keyword is labelled: centroid (the default) or none. With "
                    "centroid, from the keywords nearest its DP centre (no budget; with a voted category, that "
                    "category's nearest, under the category's name); with none, it is left without keywords "
                    "(named by its voted category if it has one, else unlabelled). The report's label_source says "
                    "which.",
        choices=("centroid", "none"), public=True)
    keyword_min_noisy_count: float | None = advanced_flag(
        None, "Keywords with a smaller noisy value are not released. Default: from --false_keywords_per_topic.",
        type=float)
    themes: bool = flag(
        True, "Release every night each fixed public theme's size, as one user-level DP histogram "
              "(docs/production.md#themes); on by default (--themes false: off). The themes are the keyword set's "
              "categories and Other; each conversation counts in the one whose keywords' mean direction is nearest "
              "it. The histogram is its own stage of the joint calibration (themes in --epsilon_weights) and of the "
              "nightly plan; the budget split is measured in docs/privacy.md#one-budget-for-every-release.",
        type=parse_bool, nargs="?", const=True, public=True)
    facets: str = flag(
        ALL_FACETS, f"Release every night these facets of --facet_set: {ALL_FACETS} (the default; the bundled set has "
                    f"language, request_kind and concern), {NO_FACETS}, or a comma list of names. Each is a fixed public "
                    "question with fixed answers: its answers over all conversations and per released topic are "
                    "user-level DP histograms, two stages of the joint calibration (facets and facet_topics in "
                    "--epsilon_weights; docs/privacy.md#facets).",
        public=True)
    facet_set: str | None = flag(
        None, "The facets' declarations: a JSON file (docs/report.md#facets); default: the bundled "
              "beam_jobs/resources/default_facets.json.")

    def check_values(self):
        check(self.samples_per_cluster in ("auto", "all") or (self.samples_per_cluster.isdigit()
                                                               and int(self.samples_per_cluster) >= 1),
              f"--samples_per_cluster must be auto, all or an integer >= 1, got {self.samples_per_cluster!r}")
        # The floor's union bound counts keyword_candidates candidates: fewer than t would not be what is ranked.
        check(self.keyword_candidates == 0 or self.keyword_candidates >= self.keywords_per_cluster,
              "--keyword_candidates must be 0 or at least --keywords_per_cluster")
        names = facet_names(self.facets)
        check(len(set(names)) == len(names), "--facets: a facet is named twice")
        check(len(names) == 1 or not {ALL_FACETS, NO_FACETS} & set(names),
              f"--facets: {ALL_FACETS} and {NO_FACETS} stand alone, not in a list of names")

    @property
    def votes(self) -> bool:
        """The keyword histograms' DP stage runs: histogram and both."""
        return self.keyword_mode in ("histogram", "both")

    @property
    def ranks_keywords(self) -> bool:
        """K is ranked by closeness to each DP centre: centroid labels, the report's list, a fallback or candidates."""
        return self.keyword_mode in ("centroid", "both") or self.label_fallback == "centroid" or bool(
            self.keyword_candidates)

    def resolved_samples_per_cluster(self, llm_backend: str) -> int | None:
        """m for this run (None: every conversation). Public config only, never data."""
        if self.samples_per_cluster == "auto":
            return None if llm_backend in FREE_SELECTORS else PAID_SELECTOR_SAMPLES
        return None if self.samples_per_cluster == "all" else int(self.samples_per_cluster)
