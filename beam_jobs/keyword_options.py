"""Options of the keyword-set builder (beam_jobs.build_keywords).

A subclass of InsightsOptions: it reuses the main job's reading, validation and contribution
bounding flags (--input, --max_record_bytes, --max_conversations_per_user, --seed, --facet_max_chars,
--embedding_model, --private_output, --privacy_ledger, --max_epsilon_per_window, --window_days,
--date) with the same meaning, except --output, which here is the keyword-set FILE to write. --noise_seed
is accepted but does nothing here: none of the builder's noise can be seeded.
"""

from __future__ import annotations

import math

from beam_jobs.options import InsightsOptions

METHODS = ("tfidf", "llm", "public", "hybrid")
DP_METHODS = ("tfidf", "llm", "hybrid")


class BuildKeywordsOptions(InsightsOptions):
    @classmethod
    def _add_argparse_args(cls, parser):
        add = parser.add_argument
        add("--method", choices=METHODS, default=None,
            help="tfidf | llm | hybrid (DP, read --input) or public (reads only --public_corpus).")
        add("--epsilon_keyword_set", type=float, default=1.0, help="Total epsilon of a DP keyword set.")
        add("--delta_keyword_set", type=float, default=1e-6, help="Delta of the DP partition selection.")
        add("--tfidf_df_epsilon_share", type=float, default=0.5,
            help="tfidf: share of the epsilon spent on the document frequencies (the rest selects terms).")
        add("--terms_per_conversation", type=int, default=5,
            help="k: terms (tfidf) or proposed keywords (llm, hybrid) per conversation; a user adds <= C x k.")
        add("--max_terms_per_user", type=int, default=None,
            help="L0 bound of the partition selection: distinct terms one user may add (PipelineDP samples "
                 "down to it). Default: max_conversations_per_user x terms_per_conversation (keeps all).")
        add("--partition_selection", choices=("gaussian", "truncated_geometric", "laplace"), default="gaussian",
            help="PipelineDP partition-selection strategy (gaussian needs the fewest users per term when a "
                 "user adds many terms).")
        add("--tfidf_min_noisy_df", type=float, default=None,
            help="tfidf: terms with a smaller noisy document frequency are not candidates (post-processing). "
                 "Default: one standard deviation of its noise.")
        add("--max_terms_per_conversation", type=int, default=16,
            help="tfidf: L1 clip of a conversation's term counts (and bound on its distinct terms).")
        add("--df_buckets", type=int, default=1 << 16, help="tfidf: hash buckets of the DP document frequencies.")
        add("--max_keywords", type=int, default=None,
            help="K: keep at most this many DP-selected keywords, ranked by a noisy user count (costs part of "
                 "the selection's epsilon). Default: keep all.")
        add("--refine_to", type=int, default=200,
            help="Refinement target size (0 = no refinement); refinement sees only public or DP-released words.")
        add("--max_refine_rounds", type=int, default=5, help="Refinement rounds at most (stops when stable).")
        add("--public_corpus", default=None,
            help="public, hybrid: PUBLIC text file(s) (one document per line, or JSON Lines with text/messages).")
        add("--min_public_document_frequency", type=int, default=2,
            help="public, hybrid: candidates must occur in at least this many public documents.")
        add("--max_public_candidates", type=int, default=1000,
            help="public, hybrid: most widespread candidates passed to refinement.")


def validate_build(o: BuildKeywordsOptions) -> None:
    """Raises ValueError naming the first bad option."""
    def check(condition: bool, message: str):
        if not condition:
            raise ValueError(message)

    check(o.method in METHODS, f"--method is required: one of {', '.join(METHODS)}")
    check(bool(o.output), "--output is required: the keyword-set file to write (.json)")
    if o.method in DP_METHODS:
        check(bool(o.input), f"--method {o.method} needs --input (the private conversations)")
        check(o.epsilon_keyword_set > 0 and math.isfinite(o.epsilon_keyword_set),
              "--epsilon_keyword_set must be a positive finite number")
        check(0 < o.delta_keyword_set < 1, "--delta_keyword_set must be in (0, 1)")
        check(o.max_conversations_per_user >= 1, "--max_conversations_per_user must be >= 1")
        check(1 <= o.terms_per_conversation <= 20, "--terms_per_conversation must be in [1, 20]")
    if o.method in ("public", "hybrid"):
        check(bool(o.public_corpus), f"--method {o.method} needs --public_corpus")
    check(o.max_terms_per_user is None or o.max_terms_per_user >= 1, "--max_terms_per_user must be >= 1")
    check(0 < o.tfidf_df_epsilon_share < 1, "--tfidf_df_epsilon_share must be in (0, 1)")
    check(o.max_terms_per_conversation >= 1, "--max_terms_per_conversation must be >= 1")
    check(o.df_buckets >= 1, "--df_buckets must be >= 1")
    check(o.max_keywords is None or o.max_keywords >= 1, "--max_keywords must be >= 1")
    check(o.refine_to >= 0, "--refine_to must be >= 0")
    check(o.max_refine_rounds >= 1, "--max_refine_rounds must be >= 1")
    check(o.min_public_document_frequency >= 1, "--min_public_document_frequency must be >= 1")
    check(o.max_public_candidates >= 1, "--max_public_candidates must be >= 1")
    check(o.max_record_bytes >= 1, "--max_record_bytes must be >= 1")
