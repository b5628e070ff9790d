"""Options of the keyword-set builder (beam_jobs.build_keywords).

Its own flags (KeywordSetParams) and only the main job's groups it needs, with the same meaning:
reading (--input, --max_record_bytes, --facet_max_chars), privacy (--max_conversations_per_user;
the main job's budgets are not used here), embedding (--embedding_model, for the refiner), LLM
(--llm_*, --pseudonymize) and run (--private_output, --date, --seed, --privacy_ledger,
--max_epsilon_per_window, --window_days), except --output, which here is the keyword-set FILE to
write, --private_output, which the DP methods require (dead letters and exact counts; there is no
default next to the public file) and which must not be inside the keyword-set file's folder, and
--date, which the DP methods require too: the last day of the data --input holds (with
--data_days, how many days end there), on which every ledger charges the set. --noise_seed is
accepted but does nothing here: none of the builder's noise can be seeded.
"""

from __future__ import annotations

import dataclasses
import os

from apache_beam.options.pipeline_options import PipelineOptions

from config.embedding import EmbeddingParams
from config.flags import job_options, params_from
from config.insights import check_noise_seed_unledgered
from config.llm import LLMParams
from config.privacy import PrivacyParams
from config.reading import ReadingParams
from config.run import RunParams
from core.params import Params, advanced_flag, check, flag

METHODS = ("tfidf", "llm", "public", "hybrid")
DP_METHODS = ("tfidf", "llm", "hybrid")

# The flags the builder cannot run without, and what each is: build_keywords_params checks them and its
# --help marks them (argparse's required=True would break every other PipelineOptions() call, as Beam
# parses all registered classes).
REQUIRED_FLAGS = {"method": f"one of {', '.join(METHODS)}", "output": "the keyword-set file to write (.json)"}
# The flags its DP methods need too: the set's spend is charged on the days of its data, which a build
# day is not; and dead letters hold raw text, never by default beside the public file, which may be
# published with its folder.
DP_REQUIRED_FLAGS = {
    "input": "the private conversations",
    "date": "the (last) day of the conversations --input holds (--data_days: how many days end there); the "
            "set's privacy spend is charged on those days",
    "private_output": "a private folder, outside the keyword-set file's, for dead letters and exact counts",
}
DP_REQUIREMENT = f"with --method {', '.join(DP_METHODS[:-1])} or {DP_METHODS[-1]}"


@dataclasses.dataclass(frozen=True)
class KeywordSetParams(Params):
    """How a keyword set is built: the method, its budget and bounds, refinement, the public corpus."""

    method: str | None = flag(
        None, "tfidf | llm | hybrid (DP, read --input) or public (reads only --public_corpus).", choices=METHODS)
    epsilon_keyword_set: float = flag(1.0, "Total epsilon of a DP keyword set.", type=float, gt=0, finite=True)
    delta_keyword_set: float = flag(1e-6, "Delta of the DP partition selection.", type=float, gt=0, lt=1)
    tfidf_df_epsilon_share: float = advanced_flag(
        0.25, "tfidf: the partition selection gets (1 - this) x epsilon (and half the delta); the Gaussian "
              "document frequencies get the noise that makes the PLD composition of both the set's epsilon.",
        type=float, gt=0, lt=1)
    terms_per_conversation: int = advanced_flag(
        5, "k: keywords proposed per conversation (llm, hybrid).", type=int, ge=1, le=20)
    max_terms_per_user: int = advanced_flag(
        5, "L0 of the partition selection: a user nominates at most this many distinct terms, each once "
           "(tfidf: their top TF-IDF terms; llm, hybrid: the keywords proposed for most of their "
           "conversations). A term needs more users as it grows.", type=int, ge=1)
    partition_selection: str = advanced_flag(
        "gaussian", "PipelineDP partition-selection strategy (gaussian needs the fewest users per term from "
                    "L0 = 3 up; laplace and truncated_geometric from L0 <= 2).",
        choices=("gaussian", "truncated_geometric", "laplace"))
    tfidf_min_noisy_df: float | None = advanced_flag(
        None, "tfidf: terms with a smaller noisy document frequency (users) are not candidates "
              "(post-processing). Default: two standard deviations of its noise.", type=float)
    max_terms_per_conversation: int = advanced_flag(
        16, "tfidf: L1 clip of a conversation's term counts (and bound on its distinct terms).", type=int, ge=1)
    df_terms_per_user: int = advanced_flag(
        16, "tfidf: L_df, a user's most frequent terms counted in the document frequencies (L2 sensitivity "
            "sqrt(L_df + 1)).", type=int, ge=1)
    df_buckets: int = advanced_flag(1 << 16, "tfidf: hash buckets of the DP document frequencies.", type=int, ge=1)
    max_keywords: int | None = flag(
        None, "K: keep at most this many DP-selected keywords, ranked by a noisy user count (costs part of "
              "the selection's epsilon). Default: keep all.", type=int, ge=1)
    refine_to: int = flag(
        200, "Refinement target size (0 = no refinement); refinement sees only public or DP-released words.",
        type=int, ge=0)
    max_refine_rounds: int = advanced_flag(5, "Refinement rounds at most (stops when stable).", type=int, ge=1)
    data_days: int = flag(
        1, "DP methods: how many days of conversations --input holds, ending on --date (UTC). The set's spend "
           "is charged in every privacy-ledger window holding any of them.", type=int, ge=1)
    public_corpus: str | None = flag(
        None, "public, hybrid: PUBLIC text file(s) (one document per line, or JSON Lines with text/messages).")
    min_public_document_frequency: int = advanced_flag(
        2, "public, hybrid: candidates must occur in at least this many public documents.", type=int, ge=1)
    max_public_candidates: int = advanced_flag(
        1000, "public, hybrid: most widespread candidates passed to refinement.", type=int, ge=1)

    def check_values(self):
        check(self.method in METHODS, f"--method is required: one of {', '.join(METHODS)}")
        if self.method in ("public", "hybrid"):
            check(bool(self.public_corpus), f"--method {self.method} needs --public_corpus")


@dataclasses.dataclass(frozen=True)
class BuildKeywordsParams:
    """The keyword-set builder's validated params, one object per group."""

    builder: KeywordSetParams
    reading: ReadingParams
    privacy: PrivacyParams
    embedding: EmbeddingParams
    llm: LLMParams
    run: RunParams

    def __post_init__(self):
        check_noise_seed_unledgered(self.privacy, self.run)


BuildKeywordsOptions = job_options(BuildKeywordsParams, "BuildKeywordsOptions", __name__)


def _normalised(path: str) -> str:
    return path.rstrip("/") if "://" in path else os.path.abspath(path)


def inside_folder(path: str, folder: str) -> bool:
    """Whether `path` is `folder` or under it (local paths made absolute; URLs compared as written)."""
    path, folder = _normalised(path), _normalised(folder)
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def build_keywords_params(options: PipelineOptions) -> BuildKeywordsParams:
    """The builder's params from parsed flags; raises ValueError naming the first bad flag."""
    for name, what in REQUIRED_FLAGS.items():
        check(bool(getattr(options, name)), f"--{name} is required: {what}")
    builder = params_from(options, KeywordSetParams)
    if builder.method in DP_METHODS:
        for name, what in DP_REQUIRED_FLAGS.items():
            check(bool(getattr(options, name)), f"--method {builder.method} needs --{name}: {what}")
        public_folder = (options.output.rsplit("/", 1)[0] if "://" in options.output
                         else os.path.dirname(os.path.abspath(options.output)))
        check(not inside_folder(options.private_output, public_folder),
              f"--private_output {options.private_output} is inside the folder of the public keyword-set file "
              f"{options.output}: give a folder outside it (e.g. in a private bucket)")
    return BuildKeywordsParams(builder=builder, reading=params_from(options, ReadingParams),
                               privacy=params_from(options, PrivacyParams),
                               embedding=params_from(options, EmbeddingParams),
                               llm=params_from(options, LLMParams), run=params_from(options, RunParams))
