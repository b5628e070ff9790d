"""Options of the insights job (Beam style: snake_case flags, parsed by PipelineOptions)."""

from __future__ import annotations

import math
import os

from apache_beam.options.pipeline_options import DebugOptions, DirectOptions, PipelineOptions, StandardOptions

from backends.embedding import BACKENDS as EMBEDDING_BACKENDS
from backends.embedding import DEFAULT_EMBEDDING_MODEL
from transforms.validation import DEFAULT_MAX_RECORD_BYTES


def parse_bool(value: str) -> bool:
    lowered = str(value).strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise ValueError(f"expected true or false, got {value!r}")


class InsightsOptions(PipelineOptions):
    @classmethod
    def _add_argparse_args(cls, parser):
        add = parser.add_argument
        add("--input", default=None,
            help="Local path/glob or gs:// glob of JSON Lines (.jsonl, .jsonl.gz) or Parquet files.")
        add("--output", default=None, help="Output folder (local or gs://): release/ and private/ go under it.")
        add("--private_output", default=None,
            help="Folder (local or gs://) for private/ (dead letters, exact counts, assignments); default: "
                 "under --output. Point it at a bucket with tighter access and retention.")
        add("--num_clusters", type=int, default=50,
            help="k for DP k-means. Fixed by the operator: it must not depend on the private data.")
        add("--max_conversations_per_user", type=int, default=5,
            help="C: conversations kept per user (uniformly at random) before any aggregate.")
        add("--epsilon_clustering", type=float, default=4.0, help="Epsilon for DP k-means.")
        add("--epsilon_size", type=float, default=1.0, help="Epsilon for the DP cluster sizes.")
        add("--epsilon_keywords", type=float, default=2.0, help="Epsilon for the DP keyword histograms.")
        add("--delta", type=float, default=1e-6,
            help="Total delta; split between DP k-means and (with Gaussian keyword noise) the keyword histograms.")
        add("--min_cluster_size", type=float, default=25, help="tau: clusters with a smaller noisy size are dropped.")
        add("--samples_per_cluster", type=int, default=200,
            help="m: expected conversations Poisson-sampled per cluster for keyword selection.")
        add("--keywords_per_cluster", type=int, default=5, help="t: keywords released per topic.")
        add("--keyword_set", default=None, help="Keyword set file (text or JSON); default: the bundled list.")
        add("--seed", type=int, default=None,
            help="Seed for contribution bounding, keyword sampling, the projection and LSH planes "
                 "(not the DP noise). Default: drawn at random and recorded in private/run_stats.json.")
        add("--embedding_model", default=DEFAULT_EMBEDDING_MODEL,
            help="sentence-transformers model: a packaged name (all-MiniLM-L6-v2) or a local model folder, "
                 "e.g. all-mpnet-base-v2 unpacked.")
        add("--embedding_backend", choices=EMBEDDING_BACKENDS, default="torch",
            help="How the embedding model runs: torch (default), onnx (the same network exported to ONNX, "
                 "run by onnxruntime: same vectors, ~0.7x torch's speed) or onnx-int8 (dynamically quantised "
                 "to int8 and run one text at a time, so no vector depends on its batch: ~1.7-2.2x torch's "
                 "speed, mean cosine ~0.96 to torch's vectors). "
                 "The ONNX file is exported offline on first use. See README, Performance.")
        add("--embedding_threads", type=int, default=0,
            help="Threads each worker process gives the embedding model. 0 (default) = auto: 1 on Dataflow "
                 "(one SDK process per vCPU), cores / --direct_num_workers with "
                 "--direct_running_mode=multi_processing, else the runtime's default (all cores), so worker "
                 "processes never oversubscribe the cores.")
        add("--kmeans_iterations", type=int, default=3, help="Lloyd steps after the DP LSH seeding step.")
        add("--projection_dim", type=int, default=32,
            help="Dimension DP k-means runs in after a random projection (0 = the embedding dimension).")
        add("--keyword_noise", choices=("gaussian", "laplace"), default="gaussian",
            help="Noise of the keyword histograms.")
        add("--max_keywords_per_conversation", type=int, default=5,
            help="Keywords the selector may pick per sampled conversation (bounds the histogram's sensitivity).")
        add("--max_keyword_partitions_per_user", type=int, default=10,
            help="L0 bound of the keyword histograms: (cluster, keyword) pairs one user may add to.")
        add("--keyword_min_similarity", type=float, default=0.3,
            help="Offline keyword selector: cosine floor between a conversation and a keyword.")
        add("--keyword_min_noisy_count", type=float, default=None,
            help="Keywords with a smaller noisy count are not released. Default: the count that pure noise "
                 "exceeds for at most 0.05 keywords per topic on average.")
        add("--facet_max_chars", type=int, default=1000, help="Offline facet extractor: characters of user turns kept.")
        add("--max_record_bytes", type=int, default=DEFAULT_MAX_RECORD_BYTES,
            help="Input records larger than this are dead-lettered.")
        add("--embedding_block_size", type=int, default=512,
            help="Conversations per embedding block (sorted by length inside, so larger blocks pad less).")
        add("--date", default=None,
            help="Run date YYYY-MM-DD, or 'today'/'yesterday' (UTC). Fills a {date} placeholder in --input, "
                 "writes under OUTPUT/dt=DATE/run=RUN_ID/ and lists the run in OUTPUT/index.json.")
        add("--privacy_ledger", default=None,
            help="JSON privacy-budget ledger (local or gs://) that records every run's spend per privacy unit.")
        add("--max_epsilon_per_window", type=float, default=None,
            help="Refuse, before reading any data, a run that would bring any --window_days window over this "
                 "epsilon (needs --privacy_ledger).")
        add("--window_days", type=int, default=30, help="Length of the ledger's budget window in days.")
        add("--allow_rerun", type=parse_bool, nargs="?", const=True, default=False,
            help="Allow a second run for a date already in the ledger, recorded as a second spend "
                 "(--allow_rerun or --allow_rerun=true, as Flex Templates pass it).")
        add("--canary_file", default=None,
            help="Strings (one per line, or JSON Lines with a canary field) that the release gate must never find in release/.")
        add("--keyword_mode", choices=("histogram", "centroid", "both"), default="histogram",
            help="Topic keywords from the DP keyword histograms, from the keywords nearest each DP k-means "
                 "centre (post-processing: no keyword budget is spent, --epsilon_keywords is unused), or both "
                 "(histogram keywords name the topics; the report adds centroid keywords and their agreement).")
        add("--noise_seed", type=int, default=None,
            help="TESTING ONLY: makes the DP k-means noise reproducible, which voids its guarantee for "
                 "anyone who knows the seed. PipelineDP's noise is never seeded.")
        # LLM backends of the facet, keyword-selection and naming steps (backends/llm/).
        add("--llm_backend", choices=("offline", "openai", "vertex", "local"), default="offline",
            help="offline: deterministic defaults; openai: an OpenAI-compatible chat-completions server "
                 "(--llm_base_url); vertex: Gemini on Vertex AI (--llm_project, --llm_location); local: a GGUF "
                 "model in process (optional extra: llama-cpp-python, scripts/install_local_llm.py).")
        add("--llm_model", default=None,
            help="Model name sent to the backend (openai: required; vertex: default gemini-2.5-flash; "
                 "local: a GGUF file, default the one scripts/install_local_llm.py installs).")
        add("--llm_base_url", default=None,
            help="openai backend: server URL, e.g. http://host:8000/v1 (API key from $OPENAI_API_KEY).")
        add("--llm_project", default=None, help="vertex backend: Google Cloud project (default $GOOGLE_CLOUD_PROJECT).")
        add("--llm_location", default=None,
            help="vertex backend: region (default $GOOGLE_CLOUD_LOCATION, else us-central1).")
        add("--llm_max_concurrency", type=int, default=8, help="Model calls in flight per worker process.")
        add("--llm_timeout_s", type=float, default=60.0, help="Timeout of one model request, in seconds.")
        add("--llm_max_retries", type=int, default=4,
            help="Retries of a call on 429/5xx/timeouts (exponential backoff with jitter) before the "
                 "offline fallback answers for that element.")
        add("--llm_cache", default=None,
            help="Folder (local or gs://) of a content-hash cache of model answers. PRIVATE: it holds answers "
                 "derived from conversation text; keep it with private/.")
        add("--pseudonymize", choices=("on", "off"), default=None,
            help="Replace PII by typed pseudonyms before conversation text goes into a prompt. "
                 "Default: on for remote backends (openai, vertex).")
        add("--progress", choices=("auto", "on", "off"), default="auto",
            help="Print the running stage, its progress and an ETA to stderr every 10 s. auto: on for the "
                 "DirectRunner's in-process engine; never on Dataflow, which has its own monitoring.")


def validate(options: InsightsOptions) -> None:
    """Raises ValueError naming the first bad option, before any pipeline is built."""
    o = options

    def check(condition: bool, message: str):
        if not condition:
            raise ValueError(message)

    # --input/--output are checked here, not with argparse's required=True: Beam parses every
    # registered options class on any PipelineOptions() call, and a required flag would break those.
    check(bool(o.input), "--input is required: a path, glob or gs:// glob of .jsonl/.jsonl.gz/.parquet files")
    check(bool(o.output), "--output is required: the folder that release/ and private/ go under")
    check(o.num_clusters >= 1, f"--num_clusters must be >= 1, got {o.num_clusters}")
    check(o.max_conversations_per_user >= 1, "--max_conversations_per_user must be >= 1")
    for name in ("epsilon_clustering", "epsilon_size", "epsilon_keywords"):
        value = getattr(o, name)
        check(value > 0 and math.isfinite(value), f"--{name} must be a positive finite number, got {value}")
    check(0 < o.delta < 1, f"--delta must be in (0, 1), got {o.delta}")
    check(o.min_cluster_size >= 0, "--min_cluster_size must be >= 0")
    check(o.samples_per_cluster >= 1, "--samples_per_cluster must be >= 1")
    check(o.keywords_per_cluster >= 1, "--keywords_per_cluster must be >= 1")
    check(o.kmeans_iterations >= 1, "--kmeans_iterations must be >= 1")
    check(o.projection_dim >= 0, "--projection_dim must be >= 0")
    check(1 <= o.max_keywords_per_conversation <= 20, "--max_keywords_per_conversation must be in [1, 20]")
    check(o.max_keyword_partitions_per_user >= 1, "--max_keyword_partitions_per_user must be >= 1")
    check(-1 <= o.keyword_min_similarity <= 1, "--keyword_min_similarity must be in [-1, 1]")
    check(o.facet_max_chars >= 1, "--facet_max_chars must be >= 1")
    check(o.max_record_bytes >= 1, "--max_record_bytes must be >= 1")
    check(o.embedding_threads >= 0, "--embedding_threads must be >= 0 (0 = auto)")
    check(o.embedding_block_size >= 1, "--embedding_block_size must be >= 1")
    check(o.window_days >= 1, "--window_days must be >= 1")
    check(o.max_epsilon_per_window is None or o.privacy_ledger is not None,
          "--max_epsilon_per_window needs --privacy_ledger")
    check(o.max_epsilon_per_window is None or o.max_epsilon_per_window > 0, "--max_epsilon_per_window must be > 0")
    _validate_llm(o)


def runs_on_dataflow(pipeline_options: PipelineOptions) -> bool:
    return (pipeline_options.view_as(StandardOptions).runner or "").endswith("DataflowRunner")


def resolve_embedding_threads(options: InsightsOptions, pipeline_options: PipelineOptions) -> int:
    """--embedding_threads with 0 ("auto") resolved for the runner's process layout; 0 = all cores.

    Several worker processes on one machine that each give torch every core oversubscribe it: 10k
    conversations took 719 s instead of 210 s with 2 processes on 2 vCPUs (README, Performance).
    """
    if options.embedding_threads:
        return options.embedding_threads
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


def _validate_llm(o: InsightsOptions) -> None:
    def check(condition: bool, message: str):
        if not condition:
            raise ValueError(message)

    check(o.llm_max_concurrency >= 1, "--llm_max_concurrency must be >= 1")
    check(o.llm_timeout_s > 0 and math.isfinite(o.llm_timeout_s), "--llm_timeout_s must be a positive number")
    check(o.llm_max_retries >= 0, "--llm_max_retries must be >= 0")
    if o.llm_backend == "openai":
        check(bool(o.llm_base_url), "--llm_backend=openai needs --llm_base_url (e.g. http://host:8000/v1)")
        check(str(o.llm_base_url).startswith(("http://", "https://")),
              f"--llm_base_url must start with http:// or https://, got {o.llm_base_url!r}")
        check(bool(o.llm_model), "--llm_backend=openai needs --llm_model (the name the server serves)")
    if o.llm_backend == "local":
        from backends.llm.local_client import default_local_model, llama_cpp_available
        check(llama_cpp_available(), "--llm_backend=local needs llama-cpp-python (pip install llama-cpp-python==0.3.36)")
        model = o.llm_model or default_local_model()
        check(os.path.exists(model), f"--llm_backend=local: no model at {model}; run scripts/install_local_llm.py")
    if o.llm_backend == "vertex":
        check(bool(o.llm_project or os.environ.get("GOOGLE_CLOUD_PROJECT")),
              "--llm_backend=vertex needs --llm_project or $GOOGLE_CLOUD_PROJECT")


def delta_split(options: InsightsOptions) -> tuple[float, float]:
    """(delta for DP k-means, delta for the keyword histograms); Laplace keywords need none, and
    centroid keywords spend nothing."""
    if options.keyword_noise == "gaussian" and options.keyword_mode != "centroid":
        return options.delta / 2, options.delta / 2
    return options.delta, 0.0
