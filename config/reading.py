"""The reading group: where the conversations come from and what of each is kept."""

from __future__ import annotations

from core.params import Params, advanced_flag, flag, params_group

# Larger input records are dead-lettered (transforms/validation.py reads this default).
DEFAULT_MAX_RECORD_BYTES = 1_000_000


@params_group
class ReadingParams(Params):
    """Where the conversations come from and what of each is kept."""

    # --input is required by the job, not here: the keyword-set builder's public method has none.
    input: str | None = flag(
        None, "Local path/glob or gs:// glob of JSON Lines (.jsonl, .jsonl.gz) or Parquet files; see docs/input.md.")
    max_record_bytes: int = advanced_flag(DEFAULT_MAX_RECORD_BYTES, "Input records larger than this are "
                                          "dead-lettered.", type=int, ge=1)
    facet_max_chars: int = advanced_flag(1000, "Offline facet extractor: characters of user turns kept.", type=int,
                                         ge=1)
