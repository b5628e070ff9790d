"""Options of the insights job, in groups (Beam style: snake_case flags, parsed by PipelineOptions).

Each group is declared once, as a frozen params dataclass whose fields are its flags, with their
defaults and help (beam_jobs/flags.py): it checks itself and says which of its fields the report
may show. The LLM group, LLMParams, is declared where the backends read it (backends/llm/config.py).
A PipelineOptions class per group registers those flags; InsightsOptions is all of them, and
`insights_params` turns a parsed view into InsightsParams, one params object per group. The job
reads params, never the options object, and never writes to it: values a run resolves (the seed,
the auto embedding threads, the LLM backend's defaults) go into a copy of the params.
"""

from __future__ import annotations

import dataclasses
import math
import os
import random

from apache_beam.options.pipeline_options import DebugOptions, DirectOptions, PipelineOptions, StandardOptions

from backends.embedding import BACKENDS as EMBEDDING_BACKENDS
from backends.embedding import DEFAULT_EMBEDDING_MODEL, check_device_value
from backends.embedding import DEVICES as EMBEDDING_DEVICES
from backends.llm.config import LLMParams
from backends.token_decoder import model_path as token_decoder_model_path
from beam_jobs.flags import options_class, params_from
from core.params import Params, check, flag, parse_bool
from dp_ops import dp_stage_specs
from dp_ops.budget_ledger import DEFAULT_WINDOW_DELTA, LedgerPolicy
from dp_ops.dp_counts import DEFAULT_FALSE_KEYWORDS_PER_TOPIC
from dp_ops.dp_kmeans import AUTO_DIMENSION, BASES, DEFAULT_WARM_PRIOR
from dp_ops.nightly_plan import DEFAULT_CADENCE_DAYS
from dp_ops.token_decoding import TokenDecodingParams
from transforms.validation import DEFAULT_MAX_RECORD_BYTES


def parse_projection_dim(value) -> int:
    """--projection_dim: 'auto' (or -1) is AUTO_DIMENSION, else an integer."""
    if str(value).strip().lower() == "auto":
        return AUTO_DIMENSION
    return int(value)


@dataclasses.dataclass(frozen=True)
class ReadingParams(Params):
    """Where the conversations come from and what of each is kept."""

    # --input is required by the job, not here: the keyword-set builder's public method has none.
    input: str | None = flag(
        None, "Local path/glob or gs:// glob of JSON Lines (.jsonl, .jsonl.gz) or Parquet files; see docs/input.md.")
    max_record_bytes: int = flag(DEFAULT_MAX_RECORD_BYTES, "Input records larger than this are dead-lettered.",
                                 type=int, ge=1)
    facet_max_chars: int = flag(1000, "Offline facet extractor: characters of user turns kept.", type=int, ge=1)


# The stages and their default weights are declared in dp_ops/dp_stage_specs.py.
DEFAULT_EPSILON_WEIGHTS = dp_stage_specs.default_weights()
# Still parsed (Beam would silently drop an unknown flag, and the run would spend what the user did
# not ask for), but refused; not Flex Template parameters.
RETIRED_FLAGS = ("epsilon_clustering", "epsilon_size", "epsilon_keywords")
RETIRED_EPSILON_FLAGS = ("give the run's total with --epsilon and the stages' shares with --epsilon_weights "
                         f"(default {DEFAULT_EPSILON_WEIGHTS}); e.g. --epsilon_clustering 4 --epsilon_size 1 "
                         "--epsilon_keywords 2 becomes --epsilon 7, and the stages then get less noise than before, "
                         "as their releases are composed with PLD instead of added up.")
RETIRED_HELP = "Retired: passing it is an error that says how to give --epsilon and --epsilon_weights instead."


KEYWORD_VOTES = ("weighted", "count")
# A run's epsilon when neither --epsilon nor a nightly plan (--max_epsilon_per_window) sets it.
DEFAULT_EPSILON = 7.0
DEFAULT_KEYWORD_PARTITIONS_PER_USER = 10


@dataclasses.dataclass(frozen=True)
class PrivacyParams(Params):
    """The privacy parameters: contribution bounds, the run's total budget and how the DP stages
    share it, how keyword votes are counted and their noise.

    One total (epsilon, delta) per run: the stages' noise is calibrated jointly so that the PLD
    composition of all their releases is exactly `epsilon` at `delta` (dp_ops/joint_calibration.py),
    each stage's share in proportion to its weight. The former per-stage epsilons are retired:
    summing them (basic composition) overstated the spend, and a stage's share of a PLD total is
    not an epsilon of its own.
    """

    max_conversations_per_user: int = flag(
        5, "C: conversations kept per user (uniformly at random) before any aggregate.", type=int, public=True, ge=1)
    epsilon: float | None = flag(
        None, "Total epsilon of a run: the PLD composition of all its DP releases at --delta (plus a DP keyword "
              "set's own spend, if one is used). The stages' noise is calibrated jointly to meet it (docs/privacy.md). "
              f"Default: {DEFAULT_EPSILON:g}; with --max_epsilon_per_window, the nightly plan's (the largest that lets "
              "a run every --cadence_days keep every window within the cap: docs/production.md). A given --epsilon "
              "that would bring a window over the cap is refused.",
        type=float, public=True, gt=0, finite=True)
    epsilon_weights: str = flag(
        DEFAULT_EPSILON_WEIGHTS, "How the DP stages share --epsilon, as stage:weight pairs (stages: "
        f"{', '.join(s.name for s in dp_stage_specs.calibrated_specs())}; "
        f"{', '.join(f'{s.name} (weight {s.default_weight:g})' for s in dp_stage_specs.calibrated_specs() if s.optional)}"
        " may be left out); a stage's noise is calibrated to its "
        "weighted share, then all are scaled together until the composition meets --epsilon. A stage that "
        "does not run (keyword_histograms with --keyword_mode centroid; user_count unless --projection_dim "
        "auto without --expected_users; themes without --themes, facets and facet_topics without --facets, "
        "token_decoding without --token_decoding_steps) is left out, and its weight moves nothing.", public=True)
    delta: float = flag(1e-6, "Total delta of a run, at which its epsilon is composed (not split between stages).",
                        type=float, public=True, gt=0, lt=1)
    keyword_votes: str = flag(
        "weighted",
        "How conversations vote for their topic's keywords. weighted: each conversation weighs 1/n_u "
        "(n_u: its user's kept conversations) and votes its best --keywords_per_vote keywords; one Gaussian "
        "sum of L2 sensitivity 1 per (cluster, keyword) (docs/privacy.md). count: the former PipelineDP COUNT "
        "of users per (cluster, keyword), each conversation adding up to --max_keywords_per_conversation keywords "
        "and a user up to --max_keyword_partitions_per_user pairs, with --keyword_noise.",
        choices=KEYWORD_VOTES, public=True)
    keyword_noise: str | None = flag(
        None, "--keyword_votes count only: noise of the keyword counts (default gaussian). Weighted votes "
              "are always Gaussian.", choices=("gaussian", "laplace"), public=True)
    max_keyword_partitions_per_user: int | None = flag(
        None, "--keyword_votes count only: L0 bound, the (cluster, keyword) pairs one user may add 1 to "
              f"(default {DEFAULT_KEYWORD_PARTITIONS_PER_USER}). Weighted votes need none: a user's votes weigh 1 "
              "in total.", type=int, public=True, ge=1)
    # Private: the report says only whether it was set (derived_public_values).
    noise_seed: int | None = flag(
        None, "TESTING ONLY: makes the DP k-means and weighted keyword-vote noise reproducible, which voids "
              "their guarantee for anyone who knows the seed. PipelineDP's noise is never seeded.", type=int)
    epsilon_clustering: float | None = flag(None, RETIRED_HELP, type=float)
    epsilon_size: float | None = flag(None, RETIRED_HELP, type=float)
    epsilon_keywords: float | None = flag(None, RETIRED_HELP, type=float)

    def check_values(self):
        for name in RETIRED_FLAGS:
            check(getattr(self, name) is None, f"--{name} is retired: {RETIRED_EPSILON_FLAGS}")
        self.stage_weights()  # raises on a malformed --epsilon_weights
        for name in ("keyword_noise", "max_keyword_partitions_per_user"):
            check(self.keyword_votes == "count" or getattr(self, name) is None,
                  f"--{name} applies to --keyword_votes count only: weighted votes (the default) are one Gaussian "
                  "sum of L2 sensitivity 1 (each user's votes weigh 1 in total), so they need no L0 bound and "
                  "take no Laplace noise; drop the flag, or add --keyword_votes count")

    @property
    def histogram_noise(self) -> str:
        """The keyword stage's noise kind (weighted votes: always Gaussian)."""
        return self.keyword_noise or "gaussian"

    @property
    def keyword_partitions_per_user(self) -> int:
        """The count votes' L0 bound."""
        return self.max_keyword_partitions_per_user or DEFAULT_KEYWORD_PARTITIONS_PER_USER

    def derived_public_values(self) -> dict:
        return {"noise_seed_fixed": self.noise_seed is not None}

    def stage_weights(self) -> dict[str, float]:
        """--epsilon_weights as {stage: weight}; every stage named (or optional), each weight positive."""
        specs = dp_stage_specs.calibrated_specs()
        names = [spec.name for spec in specs]
        weights: dict[str, float] = {}
        for item in filter(None, (part.strip() for part in self.epsilon_weights.split(","))):
            stage, _, value = item.partition(":")
            stage = stage.strip()
            check(stage in names, f"--epsilon_weights: unknown stage {stage!r}; the stages are {', '.join(names)}")
            check(stage not in weights, f"--epsilon_weights: {stage} is given twice")
            try:
                weight = float(value)
            except ValueError:
                raise ValueError(f"--epsilon_weights: {stage}'s weight must be a number, got {value!r}") from None
            check(weight > 0 and math.isfinite(weight), f"--epsilon_weights: {stage}'s weight must be > 0")
            weights[stage] = weight
        for spec in specs:
            if spec.optional:
                weights.setdefault(spec.name, spec.default_weight)
        missing = [stage for stage in names if stage not in weights]
        check(not missing, f"--epsilon_weights: give a weight for {', '.join(missing)} "
                           f"(e.g. {dp_stage_specs.default_weights()})")
        return weights


@dataclasses.dataclass(frozen=True)
class ClusteringParams(Params):
    """DP k-means and which clusters are released."""

    num_clusters: int = flag(
        50, "k for DP k-means. Fixed by the operator: it must not depend on the private data.", type=int,
        public=True, ge=1)
    kmeans_iterations: int = flag(3, "Lloyd steps after the DP LSH seeding step (each one more Gaussian release).",
                                  type=int, public=True, ge=1)
    projection_dim: int = flag(
        AUTO_DIMENSION, "Dimension d DP k-means runs in: auto (default, or -1) takes d from the number of users "
        "(--expected_users, else a DP count of them, stage user_count): d = (0.2 * users / k / sigma)^2, sigma the "
        "k-means noise, clipped to [32, the embedding dimension] (docs/performance.md); N > 0 a fixed d; 0 the "
        "embedding dimension. The d used is config.clustering_dimension in the report.",
        type=parse_projection_dim, public=True)
    projection_basis: str = flag(
        "pca", "Basis whose first coordinates DP k-means keeps: pca (the principal directions of the bundled "
        "public keyword set's embeddings: public, no budget) or random (seeded).", choices=BASES, public=True)
    expected_users: int | None = flag(
        None, "Public hint of the number of users for --projection_dim auto; skips the DP user count. It is "
        "released as given: never take it from the data being processed or from any private output (e.g. "
        "run_stats.json) of runs over the same users; a past report's DP figures are fine.", type=int, public=True, ge=1)
    min_cluster_size: float = flag(25, "tau: clusters with a smaller noisy size are dropped.", type=float,
                                   public=True, ge=0)
    warm_start: str = flag(
        "auto", "auto: with --date, seed DP k-means from the latest earlier released night's topic centres in "
                "OUTPUT/index.json (public: no budget), fresh LSH seeds filling the other slots, so topics keep "
                "their place and lineage id (docs/report.md); off: seed from LSH buckets only (lineages are still "
                "matched).", choices=("auto", "off"), public=True)
    warm_prior: float = flag(
        DEFAULT_WARM_PRIOR, "With a warm start, how much the earlier night's centre of a topic counts in "
        "tonight's Lloyd steps of the cluster it seeded: tonight's centre is the direction of its noisy sum plus "
        "this times the earlier centre, a mean over the nights that steadies a steady topic's centre "
        "(post-processing of public releases: no budget). 0: tonight's noisy sums alone. See docs/production.md.",
        type=float, public=True, ge=0, finite=True)

    def check_values(self):
        check(self.projection_dim >= 0 or self.projection_dim == AUTO_DIMENSION,
              "--projection_dim must be auto, 0 or a positive dimension")

    @property
    def counts_users(self) -> bool:
        """Whether the run releases a DP user count (auto dimension without a public hint)."""
        return self.projection_dim == AUTO_DIMENSION and self.expected_users is None


@dataclasses.dataclass(frozen=True)
class EmbeddingParams(Params):
    """The embedding model and how it runs."""

    embedding_model: str = flag(
        DEFAULT_EMBEDDING_MODEL,
        "sentence-transformers model: all-MiniLM-L6-v2 (packaged), all-mpnet-base-v2 (after "
        "scripts/install_mpnet.py) or a local model folder.", public=True)
    embedding_backend: str = flag(
        "torch",
        "How the embedding model runs: torch (default), onnx (the same network exported to ONNX, "
        "run by onnxruntime: same vectors, ~0.7x torch's speed) or onnx-int8 (dynamically quantised "
        "to int8 and run one text at a time, so no vector depends on its batch: ~1.7-2.2x torch's "
        "speed, mean cosine ~0.96 to torch's vectors). "
        "The ONNX file is exported offline on first use. See docs/performance.md.",
        choices=EMBEDDING_BACKENDS, public=True)
    embedding_device: str = flag(
        "cpu", "Where the torch embedding model runs: cpu (default) or cuda (a GPU; torch backend only, the "
               "ONNX backends run on the CPU). Fixed for the run before any data is read; refused at launch "
               "when no CUDA device is visible (on Dataflow: when no worker_accelerator is requested). Each "
               "vector is still independent of its batch; it may differ from the CPU one in its last bits. "
               "See docs/production.md (GPU workers).", choices=EMBEDDING_DEVICES, public=True)
    embedding_threads: int = flag(
        0, "Threads each worker process gives the embedding model. 0 (default) = auto: 1 on Dataflow "
           "(one SDK process per vCPU; all cores with the no_use_multiple_sdk_containers experiment), cores / "
           "--direct_num_workers with --direct_running_mode=multi_processing, else the runtime's default (all "
           "cores), so worker processes never oversubscribe the cores. The value used is recorded in "
           "private/run_stats.json.", type=int, ge=0)
    embedding_block_size: int = flag(
        512, "Conversations per embedding block, the unit that travels as one numpy array. Larger blocks fill "
             "the fixed-shape batches better; on GPU workers use thousands (docs/performance.md, GPU).", type=int, ge=1)

    def check_values(self):
        check_device_value(self.embedding_device, self.embedding_backend)


# Keyword selectors that cost nothing per conversation: they see every conversation (sampling rate 1).
FREE_SELECTORS = ("offline", "local")
OFFLINE_SELECTOR = "offline"
PAID_SELECTOR_SAMPLES = 200


def facet_names(facets: str) -> tuple[str, ...]:
    """--facets as names, in the order given (the facet set fixes the order of their releases)."""
    return tuple(filter(None, (name.strip() for name in facets.split(","))))


@dataclasses.dataclass(frozen=True)
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
    keyword_min_similarity: float = flag(
        0.3, "Offline keyword selector: cosine floor between a conversation and a keyword.", type=float, ge=-1, le=1)
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
    def facet_names(self) -> tuple[str, ...]:
        return facet_names(self.facets)

    def resolved_samples_per_cluster(self, llm_backend: str) -> int | None:
        """m for this run (None: every conversation). Public config only, never data."""
        if self.samples_per_cluster == "auto":
            return None if llm_backend in FREE_SELECTORS else PAID_SELECTOR_SAMPLES
        return None if self.samples_per_cluster == "all" else int(self.samples_per_cluster)


@dataclasses.dataclass(frozen=True)
class ExemplarParams(Params):
    """Synthetic example requests per topic, and names decoded from its DP centre, both evolved toward the
    centre (post-processing, no budget)."""

    exemplars_per_topic: int = flag(
        0, "Synthetic example requests released per topic (0: none). Written from the topic's released name, "
           "description and keywords, by the LLM backend when --llm_steps includes exemplars, else from "
           "templates; kept by closeness to the topic's DP centre. No privacy budget (docs/report.md).", type=int,
        public=True, ge=0, le=10)
    exemplar_candidates: int = flag(
        20, "Candidate requests written per topic in the first draft (each later round asks for half as many "
            "variations, at least --exemplars_per_topic).", type=int, public=True, ge=0, le=50)
    exemplar_rounds: int = flag(
        2, "Rounds of varying the candidates nearest the DP centre and ranking again (0: the first draft only).",
        type=int, public=True, ge=0, le=10)
    centre_decoder: bool = flag(
        False, "Name and describe each released topic by decoding its DP centre: candidate names written from "
               "its released labels (by the LLM backend when --llm_steps includes names, else from templates) "
               "and from a public bank are kept by closeness to the centre, varied and kept again. The report "
               "marks such names dp_centre_decoded; a name in a sensitive category still needs the topic's "
               "votes, and an unverified topic gets non-sensitive candidates only (it stays unverified). No "
               "privacy budget (docs/llm_backends.md#names-decoded-from-the-dp-centre).",
        type=parse_bool, nargs="?", const=True)

    def check_values(self):
        check(self.exemplars_per_topic <= self.exemplar_candidates,
              "--exemplar_candidates must be in [--exemplars_per_topic, 50]")

    def derived_public_values(self) -> dict:
        # Shown only when on: a run without it releases the same report (config included) as before it existed.
        return {"centre_decoder": True} if self.centre_decoder else {}


MAX_TOKEN_DECODING_STEPS = 64


@dataclasses.dataclass(frozen=True)
class DecodingParams(Params):
    """Token-level private decoding: each kept topic described by a frozen local LM that reads a sample of its
    members' conversations, one DP stage of the run (dp_ops/token_decoding.py)."""

    token_decoding_steps: int = flag(
        0, "T: tokens of each kept topic's description decoded under DP (0: off). Each step averages the "
           "clipped final hidden states of a sample of the topic's members (one conversation of one topic per "
           "user), adds Gaussian noise and takes the LM head's argmax; the T steps are the token_decoding stage "
           "of the joint calibration (its share of --epsilon by --epsilon_weights). Needs the bundled model "
           "(requirements-models.txt); the report marks these descriptions dp_token_decoded "
           "(docs/privacy.md#token-level-private-decoding).", type=int, ge=0, le=MAX_TOKEN_DECODING_STEPS)
    token_decoding_sample: int = flag(
        8, "n: members sampled per topic for --token_decoding_steps, the public denominator of each mean (a "
           "step's L2 sensitivity is 2C/n).", type=int, ge=1)
    token_decoding_clip: float = flag(
        40.0, "C: L2 bound on each member's final hidden state for --token_decoding_steps (the bundled model's "
              "are about 45).", type=float, gt=0, finite=True)

    @property
    def token_decoding(self) -> TokenDecodingParams | None:
        """The stage's public parameters, or None when it is off."""
        return (TokenDecodingParams(self.token_decoding_steps, self.token_decoding_sample, self.token_decoding_clip)
                if self.token_decoding_steps else None)

    def preflight(self) -> None:
        """Before any data is read: the bundled model is installed (a missing one is a bad option)."""
        if self.token_decoding_steps:
            try:
                token_decoder_model_path()
            except RuntimeError as error:
                raise ValueError(f"--token_decoding_steps: {error}") from None

    def derived_public_values(self) -> dict:
        # Shown only when on: a run without it releases the same report (config included) as before it existed.
        return {"token_decoding": {"steps": self.token_decoding_steps, "sample_size": self.token_decoding_sample,
                                   "clip_norm": self.token_decoding_clip}} if self.token_decoding_steps else {}


@dataclasses.dataclass(frozen=True)
class RunParams(Params):
    """One run: where it writes, its date, its seed, the privacy ledger, the release gate, progress."""

    output: str | None = flag(None, "Output folder (local or gs://): release/ and private/ go under it "
                                      "(README.md, What comes out).")
    private_output: str | None = flag(
        None, "Folder (local or gs://) for private/ (dead letters, exact counts, assignments); default: "
              "under --output. Point it at a bucket with tighter access and retention.")
    date: str | None = flag(
        None, "Run date YYYY-MM-DD, or 'today'/'yesterday' (UTC). Fills a {date} placeholder in --input, "
              "writes under OUTPUT/dt=DATE/run=RUN_ID/ and lists the run in OUTPUT/index.json.")
    seed: int | None = flag(
        None, "Seed for contribution bounding, keyword sampling, the projection and LSH planes "
              "(not the DP noise). Default: drawn at random and recorded in private/run_stats.json.", type=int)
    privacy_ledger: str | None = flag(
        None, "JSON privacy-budget ledger (local or gs://) that records every run's spend per privacy unit.")
    max_epsilon_per_window: float | None = flag(
        None, "Refuse, before reading any data, a run that would bring any --window_days window over this "
              "epsilon (needs --privacy_ledger). The first capped run writes this and the other window flags "
              "(--max_delta_per_window, --window_days, --cadence_days) into the ledger as its policy; a later "
              "run with other values is refused (exit code 4). Change it with python -m beam_jobs.ledger_policy "
              "(docs/production.md#the-ledgers-policy).", type=float, gt=0)
    max_delta_per_window: float = flag(
        DEFAULT_WINDOW_DELTA, "The one delta at which every window's runs are composed and its epsilon checked "
                              "against --max_epsilon_per_window; a window whose runs need a larger delta is refused "
                              "too. Keep it well under 1 / (users in a window).",
        type=float, gt=0, lt=1)
    window_days: int = flag(30, "Length of the ledger's budget window in days.", type=int, ge=1)
    cadence_days: int = flag(
        DEFAULT_CADENCE_DAYS, "Days between scheduled runs; with --max_epsilon_per_window and no --epsilon, each "
                              "run's budget is planned so that ceil(--window_days / this) runs fit every window.",
        type=int, ge=1)
    allow_rerun: bool = flag(
        False, "Allow a second run for a date already in the ledger, recorded as a second spend "
               "(--allow_rerun or --allow_rerun=true, as Flex Templates pass it).",
        type=parse_bool, nargs="?", const=True)
    canary_file: str | None = flag(
        None, "Strings (one per line, or JSON Lines with a canary field) that the release gate must never "
              "find in release/.")
    progress: str = flag(
        "auto", "Print the running stage, its progress and an ETA to stderr every 10 s. auto: on for the "
                "DirectRunner's in-process engine; never on Dataflow, which has its own monitoring.",
        choices=("auto", "on", "off"))

    def check_values(self):
        # --output is required by each job, with its own meaning (a folder here, a file for the
        # keyword-set builder).
        check(self.max_epsilon_per_window is None or self.privacy_ledger is not None,
              "--max_epsilon_per_window needs --privacy_ledger")

    def derived_public_values(self) -> dict:
        # Whether the spend was checked against a cap across runs (not where the ledger lives).
        return {"privacy_ledger": ({"window_days": self.window_days,
                                    "max_epsilon_per_window": self.max_epsilon_per_window,
                                    "max_delta_per_window": self.max_delta_per_window,
                                    "cadence_days": self.cadence_days}
                                   if self.privacy_ledger else None)}

    def ledger_policy(self) -> LedgerPolicy | None:
        """The window policy these flags ask the ledger to enforce; None without a cap (the ledger only
        records). A ledger holding another policy refuses the run (dp_ops/budget_ledger.py)."""
        if self.max_epsilon_per_window is None:
            return None
        return LedgerPolicy(self.max_epsilon_per_window, self.max_delta_per_window, self.window_days,
                            self.cadence_days)

    def with_seed(self) -> RunParams:
        """These params with a seed: --seed, else one drawn at random (recorded in private/run_stats.json)."""
        return self if self.seed is not None else dataclasses.replace(self, seed=random.SystemRandom().randrange(2**31))


# One PipelineOptions class per group: Beam parses each view's flags from the classes in its MRO.

ReadingOptions = options_class(ReadingParams)
PrivacyOptions = options_class(PrivacyParams)
ClusteringOptions = options_class(ClusteringParams)
EmbeddingOptions = options_class(EmbeddingParams)
KeywordOptions = options_class(KeywordParams)
ExemplarOptions = options_class(ExemplarParams)
DecodingOptions = options_class(DecodingParams)
LLMOptions = options_class(LLMParams)
RunOptions = options_class(RunParams)


class InsightsOptions(ReadingOptions, PrivacyOptions, ClusteringOptions, EmbeddingOptions, KeywordOptions,
                      ExemplarOptions, DecodingOptions, LLMOptions, RunOptions):
    """Every flag of the insights job."""


# The flags the insights job cannot run without, and what each is (insights_params checks them: argparse's
# required=True would break every other PipelineOptions() call, as Beam parses all registered classes).
REQUIRED_FLAGS = {"input": "a path, glob or gs:// glob of .jsonl/.jsonl.gz/.parquet files",
                  "output": "the folder that release/ and private/ go under"}

# The Dataflow Flex Template's metadata, templates/metadata.json, is written from the flags by
# `python -m beam_jobs.option_docs --write`, as is docs/options.md: a parameter per flag (the retired
# ones aside), with the flag's help. Its label is the flag's name in words ("keywords_per_vote":
# "Keywords per vote") and its regex follows the flag's type or choices, except for these flags.
FLEX_TEMPLATE = {"name": "urania-beam insights",
                 "description": "Topic insights from chatbot conversation logs under user-level differential "
                                "privacy (URANIA on Beam).",
                 "streaming": False}
TEMPLATE_LABELS = {
    "input": "Input logs (gs:// glob, may contain {date})",
    "output": "Output folder (gs://)",
    "num_clusters": "Number of clusters k",
    "epsilon": "Total epsilon of the run",
    "delta": "Total delta",
    "date": "Run date",
    "noise_seed": "Noise seed (testing only)",
    "llm_cache": "LLM answer cache (private)",
}
_GCS_FOLDER = r"^gs://[a-z0-9][-_.a-z0-9]*[a-z0-9](/.*)?$"
_LLM_STEPS = "(facets|keywords|names|exemplars)"
TEMPLATE_REGEXES = {
    "input": r"^gs://[a-z0-9][-_.a-z0-9]*[a-z0-9]/.+$",
    "output": _GCS_FOLDER,
    "private_output": _GCS_FOLDER,
    "llm_cache": _GCS_FOLDER,
    "privacy_ledger": r"^gs://[a-z0-9][-_.a-z0-9]*[a-z0-9]/.+\.json$",
    "date": r"^([0-9]{4}-[0-9]{2}-[0-9]{2}|today|yesterday)$",
    "epsilon_weights": r"^[a-z_]+:[0-9.eE+-]+(,[a-z_]+:[0-9.eE+-]+)*$",
    "samples_per_cluster": r"^(auto|all|[0-9]+)$",
    "projection_dim": r"^(auto|-1|[0-9]+)$",
    # not local: the image holds no GGUF model (scripts/install_local_llm.py)
    "llm_backend": r"^(offline|openai|vertex)$",
    "llm_steps": rf"^{_LLM_STEPS}(,{_LLM_STEPS})*$",
    "llm_model": r"^[-_.:/@A-Za-z0-9]+$",
    "llm_base_url": r"^https?://\S+$",
    "llm_project": r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$",
    "llm_location": r"^[a-z]+(-[a-z]+[0-9]+)?$",
}


def check_noise_seed_unledgered(privacy: PrivacyParams, run: RunParams) -> None:
    """Fixed noise is for tests: a ledger records spends whose noise is secret, so it refuses a seed."""
    check(privacy.noise_seed is None or run.privacy_ledger is None,
          "--noise_seed is for tests only (anyone who knows it can remove the noise) and is refused with "
          "--privacy_ledger: a ledgered run's spend must be real")


@dataclasses.dataclass(frozen=True)
class InsightsParams:
    """The insights job's validated params, one object per group."""

    reading: ReadingParams
    privacy: PrivacyParams
    clustering: ClusteringParams
    embedding: EmbeddingParams
    keywords: KeywordParams
    exemplars: ExemplarParams
    decoding: DecodingParams
    llm: LLMParams
    run: RunParams

    def __post_init__(self):
        check_noise_seed_unledgered(self.privacy, self.run)

    def public_config(self) -> dict:
        """What the params allow the report to show, group by group (beam_jobs.insights.release_config)."""
        config: dict = {}
        for field in dataclasses.fields(self):
            public = getattr(self, field.name).public_config()
            check(not set(public) & set(config), f"two groups publish {sorted(set(public) & set(config))}")
            config.update(public)
        return config


def insights_params(options: PipelineOptions) -> InsightsParams:
    """The insights job's params from parsed flags; raises ValueError naming the first bad flag,
    before any pipeline is built."""
    for name, what in REQUIRED_FLAGS.items():
        check(bool(getattr(options, name)), f"--{name} is required: {what}")
    return InsightsParams(reading=params_from(options, ReadingParams), privacy=params_from(options, PrivacyParams),
                          clustering=params_from(options, ClusteringParams),
                          embedding=params_from(options, EmbeddingParams), keywords=params_from(options, KeywordParams),
                          exemplars=params_from(options, ExemplarParams),
                          decoding=params_from(options, DecodingParams), llm=params_from(options, LLMParams),
                          run=params_from(options, RunParams))


def requests_worker_gpus(pipeline_options: PipelineOptions) -> bool:
    """Whether a Dataflow job asks for GPU workers: a worker_accelerator service option (or experiment,
    which is how `gcloud dataflow flex-template run --additional-experiments` passes it)."""
    from apache_beam.options.pipeline_options import GoogleCloudOptions
    requested = [*(pipeline_options.view_as(GoogleCloudOptions).dataflow_service_options or []),
                 *(pipeline_options.view_as(DebugOptions).experiments or [])]
    return any(str(option).strip().startswith("worker_accelerator=") for option in requested)


def check_embedding_device(embedding: EmbeddingParams, pipeline_options: PipelineOptions) -> None:
    """--embedding_device=cuda where the model will run: on Dataflow the workers, not this launcher, hold
    the GPU, so the job must request one (worker_accelerator); elsewhere the model runs in this machine's
    processes, so torch must see a CUDA device here. A bad value is a ValueError before any data is read."""
    if embedding.embedding_device == "cpu":
        return
    if runs_on_dataflow(pipeline_options):
        check(requests_worker_gpus(pipeline_options),
              f"--embedding_device={embedding.embedding_device} on Dataflow needs GPU workers: "
              "--dataflow_service_options=\"worker_accelerator=type:nvidia-tesla-t4;count:1;install-nvidia-driver\" "
              "and a CUDA image (docs/production.md, GPU workers)")
        return
    from backends.embedding import check_device
    check_device(embedding.embedding_device, embedding.embedding_backend)


def runs_on_dataflow(pipeline_options: PipelineOptions) -> bool:
    return (pipeline_options.view_as(StandardOptions).runner or "").endswith("DataflowRunner")


def resolve_embedding_threads(embedding: EmbeddingParams, pipeline_options: PipelineOptions) -> int:
    """--embedding_threads with 0 ("auto") resolved for the runner's process layout; 0 = all cores.

    Several worker processes on one machine that each give torch every core oversubscribe it: 10k
    conversations took 719 s instead of 210 s with 2 processes on 2 vCPUs (README, Performance).
    """
    if embedding.embedding_threads:
        return embedding.embedding_threads
    if runs_on_dataflow(pipeline_options):
        # Dataflow starts one SDK process per vCPU unless this experiment asks for a single one.
        experiments = pipeline_options.view_as(DebugOptions).experiments or []
        return 0 if "no_use_multiple_sdk_containers" in experiments else 1
    direct = pipeline_options.view_as(DirectOptions)
    if direct.direct_running_mode == "multi_processing":
        cores = os.cpu_count() or 1
        workers = direct.direct_num_workers or cores  # 0 workers means one per core
        return max(1, cores // workers)
    return 0
