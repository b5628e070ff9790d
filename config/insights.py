"""Options of the insights job, in groups (Beam style: snake_case flags, parsed by PipelineOptions).

Each group is declared once, in config/ (a frozen pydantic dataclass whose fields are its flags, with
their defaults, help, bounds and choices; the LLM group is config/llm.py). Here a PipelineOptions class
per group registers those flags (config/flags.py); InsightsOptions is all of them, and `insights_params` turns a parsed view
into InsightsParams, one params object per group. The job reads params, never the options object, and
never writes to it: values a run resolves (the seed, the auto embedding threads, the LLM backend's
defaults) go into a copy of the params. What the flags need of the machine (software, a model, a GPU)
is checked at launch by beam_jobs/launch_checks.py and backends.factory.preflight.
"""

from __future__ import annotations

import dataclasses
import os
import typing

from apache_beam.options.pipeline_options import DebugOptions, DirectOptions, PipelineOptions, StandardOptions

from config.clustering import ClusteringParams
from config.decoding import DecodingParams
from config.embedding import EmbeddingParams
from config.exemplars import ExemplarParams
from config.flags import job_options, params_from
from config.keywords import KeywordParams
from config.llm import LLMParams
from config.privacy import PrivacyParams
from config.reading import ReadingParams
from config.run import RunParams
from core.params import check
from core.run_context import DATE_PLACEHOLDER

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


def check_capped_input_dated(reading: ReadingParams, run: RunParams) -> None:
    """A window cap bounds the spend per window of --date labels: the ledger charges a run on its date,
    whatever days its input holds. That is the spend per window of data days only when --date chooses
    the input, so a capped run must read a dated input (the same undated logs run under several dates
    were charged to several windows, none of which held them all)."""
    check(run.max_epsilon_per_window is None or reading.input is None or DATE_PLACEHOLDER in reading.input,
          f"--max_epsilon_per_window needs a {DATE_PLACEHOLDER} placeholder in --input (e.g. "
          f"'logs/dt={DATE_PLACEHOLDER}/*.jsonl'): the ledger charges a run on its --date, so --date must "
          f"choose the day of data it reads")


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
        check_capped_input_dated(self.reading, self.run)

    def public_config(self) -> dict:
        """What the params allow the report to show, group by group (beam_jobs.insights.release_config)."""
        config: dict = {}
        for field in dataclasses.fields(self):
            public = getattr(self, field.name).public_config()
            check(not set(public) & set(config), f"two groups publish {sorted(set(public) & set(config))}")
            config.update(public)
        return config


# Beam parses a view's flags from the classes in its MRO: one PipelineOptions class per group.
InsightsOptions = job_options(InsightsParams, "InsightsOptions", __name__)


def insights_params(options: PipelineOptions, job: type[InsightsParams] = InsightsParams) -> InsightsParams:
    """The insights job's params (`job`: InsightsParams, or a subclass with more flags) from parsed flags;
    raises ValueError naming the first bad flag, before any pipeline is built."""
    for name, what in REQUIRED_FLAGS.items():
        check(bool(getattr(options, name)), f"--{name} is required: {what}")
    groups = typing.get_type_hints(job)
    return job(**{field.name: params_from(options, groups[field.name]) for field in dataclasses.fields(job)})


def requests_worker_gpus(pipeline_options: PipelineOptions) -> bool:
    """Whether a Dataflow job asks for GPU workers: a worker_accelerator service option (or experiment,
    which is how `gcloud dataflow flex-template run --additional-experiments` passes it)."""
    from apache_beam.options.pipeline_options import GoogleCloudOptions
    requested = [*(pipeline_options.view_as(GoogleCloudOptions).dataflow_service_options or []),
                 *(pipeline_options.view_as(DebugOptions).experiments or [])]
    return any(str(option).strip().startswith("worker_accelerator=") for option in requested)


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
