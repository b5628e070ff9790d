"""The keywords group: the keyword set, how keywords are chosen and how many are released, and the
fixed public releases beside them (themes, facets)."""

from __future__ import annotations

from core.params import Params, check, flag, params_group, parse_bool
from dp_ops.dp_counts import DEFAULT_FALSE_KEYWORDS_PER_TOPIC

# Keyword selectors that cost nothing per conversation: they see every conversation (sampling rate 1).
FREE_SELECTORS = ("offline", "local")
OFFLINE_SELECTOR = "offline"
PAID_SELECTOR_SAMPLES = 200


def facet_names(facets: str) -> tuple[str, ...]:
    """--facets as names, in the order given (the facet set fixes the order of their releases)."""
    return tuple(filter(None, (name.strip() for name in facets.split(","))))


@params_group
class KeywordParams(Params):
    """Topic keywords: the keyword set, how keywords are chosen and how many are released."""

    keyword_set: str | None = flag(
        None, "Keyword set K: a text file (one keyword per line) or JSON from beam_jobs.build_keywords "
              "(docs/keyword_sets.md); default: the bundled list.")
    keyword_mode: str = flag(
        "histogram",
        "histogram: topic keywords from the DP keyword histograms. centroid: the t keywords of K nearest each "
        "DP k-means centre (post-processing: the histogram stages do not run, so --epsilon is shared by k-means "
        "and the cluster sizes only; every topic is then approximate or unverified, never placed in a sensitive "
        "category). both: histogram keywords name the topics, and each topic also lists its centroid_keywords, "
        "with keyword_agreement (Jaccard per topic and mean) in report.json.",
        choices=("histogram", "centroid", "both"), public=True)
    samples_per_cluster: str = flag(
        "auto", "m: expected conversations Poisson-sampled per cluster for keyword selection (rate "
                "min(1, m / noisy size)), or 'all'. auto: all when the selector is free (the offline "
                f"embedding selector, the local LLM), {PAID_SELECTOR_SAMPLES} for paid LLM backends (openai, vertex).",
        public=True)
    keywords_per_cluster: int = flag(5, "t: keywords released per topic.", type=int, public=True, ge=1)
    max_keywords_per_conversation: int = flag(
        5, "--keyword_votes count: keywords the selector may pick per sampled conversation (bounds the "
           "histogram's sensitivity; weighted votes use --keywords_per_vote).",
        type=int, public=True, ge=1, le=20)
    keyword_min_similarity: float | None = flag(
        None, "Offline keyword selector: cosine floor between a conversation and a keyword. Default: the embedding "
              "model's own (config/embedding.py SIMILARITY_FLOORS: 0.23 for use-multilingual-v3, 0.3 for "
              "all-MiniLM-L6-v2; docs/performance.md).", type=float, ge=-1, le=1)
    keywords_per_vote: int = flag(
        2, "Weighted votes: keywords a conversation splits its vote over (weight / sqrt(j) each); 2 named more "
           "planted topics than 1 (docs/evaluation.md).", type=int,
        public=True, ge=1, le=20)
    category_vote_share: float = flag(
        0.3, "Weighted votes: the share s of a conversation's squared vote norm given to its keywords' "
             "categories (the rest to the keywords; one release, no extra budget). A topic is labelled by a "
             "voted category first, its keywords only inside it (docs/privacy.md). 0: keyword votes only; 0.3 "
             "keeps the generated sets' keyword labels and names most real topics by their votes "
             "(docs/evaluation.md). Needs a keyword set with categories; count votes take none.",
        type=float, public=True, ge=0, lt=1)
    false_keywords_per_topic: float = flag(
        DEFAULT_FALSE_KEYWORDS_PER_TOPIC,
        "Release floor: the noisy value that pure noise exceeds for this many of a topic's candidate "
        "keywords (or, with category votes, of its categories; a tenth of it for the sensitive ones) on "
        "average (the noise quantile at rate / candidates per topic).", type=float, public=True, gt=0, lt=0.5)
    keyword_candidates: int = flag(
        0, "Candidate keywords per topic: the ones nearest its DP centre (post-processing, no budget); "
           "fewer candidates lower the release floor. 0 = all of K.", type=int, public=True, ge=0)
    label_fallback: str = flag(
        "centroid", "A topic whose votes clear no keyword is labelled from the keywords nearest its DP centre "
                    "(centroid, no budget; with a voted category, that category's nearest, under the category's "
                    "name) or left without keywords (none; named by its voted category if it has one, else "
                    "unlabelled). The report's label_source says which.",
        choices=("centroid", "none"), public=True)
    keyword_min_noisy_count: float | None = flag(
        None, "Keywords with a smaller noisy value are not released. Default: from --false_keywords_per_topic.",
        type=float)
    themes: bool = flag(
        False, "Release every night each fixed public theme's size (the keyword set's categories and Other; each "
               "conversation counts in the one whose keywords' mean direction is nearest it) as one user-level DP "
               "histogram, its own stage of the joint calibration (themes in --epsilon_weights) and of the nightly "
               "plan (docs/production.md#themes). Off by default until its evaluation decides.",
        type=parse_bool, nargs="?", const=True, public=True)
    facets: str = flag(
        "", "Release every night these facets (a comma list of names from --facet_set: the bundled set has language, "
            "request_kind and concern), each a fixed public question with fixed answers: its answers over all "
            "conversations and per released topic, as user-level DP histograms, two stages of the joint calibration "
            "(facets and facet_topics in --epsilon_weights; docs/privacy.md#facets). Empty (the default): none.",
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
        check(len(set(self.facet_names)) == len(self.facet_names), "--facets: a facet is named twice")

    @property
    def votes(self) -> bool:
        """The keyword histograms' DP stage runs: histogram and both."""
        return self.keyword_mode in ("histogram", "both")

    @property
    def ranks_keywords(self) -> bool:
        """K is ranked by closeness to each DP centre: centroid labels, the report's list, a fallback or candidates."""
        return self.keyword_mode in ("centroid", "both") or self.label_fallback == "centroid" or bool(
            self.keyword_candidates)

    @property
    def facet_names(self) -> tuple[str, ...]:
        return facet_names(self.facets)

    def resolved_samples_per_cluster(self, llm_backend: str) -> int | None:
        """m for this run (None: every conversation). Public config only, never data."""
        if self.samples_per_cluster == "auto":
            return None if llm_backend in FREE_SELECTORS else PAID_SELECTOR_SAMPLES
        return None if self.samples_per_cluster == "all" else int(self.samples_per_cluster)
