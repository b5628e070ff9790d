"""ReadConversations: input files -> validated Conversations + DeadLetters (nothing dropped)."""

from __future__ import annotations

import dataclasses

import apache_beam as beam
from apache_beam.io import fileio
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.metrics import Metrics

from transforms import progress
from transforms.records import Conversation, DeadLetter
from transforms.validation import DEFAULT_MAX_RECORD_BYTES, parse_record

_PARQUET_SUFFIXES = (".parquet", ".parq")
_PARQUET_BATCH_ROWS = 1024


def _read_parquet_rows(readable):
    import pyarrow.parquet as pq
    with readable.open(compression_type=CompressionTypes.UNCOMPRESSED) as handle:
        parquet_file = pq.ParquetFile(handle)
        for batch in parquet_file.iter_batches(batch_size=_PARQUET_BATCH_ROWS):
            yield from batch.to_pylist()


def _read_json_lines(readable):
    # Bytes, not str: invalid UTF-8 must reach validation (and the dead letter), not crash a reader.
    with readable.open(compression_type=CompressionTypes.AUTO) as handle:
        while True:
            line = handle.readline()
            if not line:
                return
            yield line.rstrip(b"\r\n")


class _ParseRecordsInFile(beam.DoFn):
    def __init__(self, max_record_bytes: int):
        self._max_record_bytes = max_record_bytes
        self._read = Metrics.counter("read", "records_read")
        self._valid = Metrics.counter("read", "records_valid")
        self._dead = Metrics.counter("read", "records_dead_lettered")

    def process(self, readable):
        path = readable.metadata.path
        is_parquet = path.lower().endswith(_PARQUET_SUFFIXES)
        rows = _read_parquet_rows(readable) if is_parquet else _read_json_lines(readable)
        line = 0
        try:
            for line, raw in enumerate(rows, start=1):
                yield self._tag(parse_record(raw, path, line, self._max_record_bytes))
        except Exception as error:  # a corrupt file must not fail the job: dead-letter the rest of it
            detail = f"stopped after record {line}: {type(error).__name__}: {error}"
            yield self._tag(DeadLetter(source=path, line=None, reason="unreadable_file", detail=detail, raw=""))

    def _tag(self, parsed: Conversation | DeadLetter):
        self._read.inc()
        progress.advance("read")
        if isinstance(parsed, DeadLetter):
            self._dead.inc()
            Metrics.counter("dead_letter", parsed.reason).inc()
        else:
            self._valid.inc()
            progress.note_valid_record(parsed.user_id)
        return parsed


@dataclasses.dataclass(frozen=True)
class ReadResult:
    valid: beam.PCollection
    dead_letter: beam.PCollection


class ReadConversations(beam.PTransform):
    """Reads JSON Lines (.jsonl, .jsonl.gz) and Parquet files matching `file_pattern`.

    Returns `valid` Conversations and `dead_letter` DeadLetters; every input record lands in exactly
    one of them. A pattern that matches no file fails the pipeline early. (Split with two filters
    rather than a multi-output ParDo: Beam 2.77's DaskRunner sends every element to every tag.)
    """

    def __init__(self, file_pattern: str, max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES):
        super().__init__()
        self._file_pattern = file_pattern
        self._max_record_bytes = max_record_bytes

    def expand(self, pbegin):
        parsed = (
            pbegin
            | "match input files" >> fileio.MatchFiles(
                self._file_pattern, empty_match_treatment=fileio.EmptyMatchTreatment.DISALLOW)
            | "open input files" >> fileio.ReadMatches()
            | "parse and validate records" >> beam.ParDo(_ParseRecordsInFile(self._max_record_bytes))
        )
        return ReadResult(
            valid=parsed | "valid records" >> beam.Filter(lambda r: isinstance(r, Conversation)),
            dead_letter=parsed | "dead letters" >> beam.Filter(lambda r: isinstance(r, DeadLetter)),
        )
