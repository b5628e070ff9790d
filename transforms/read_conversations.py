"""ReadConversations: input files -> validated Conversations + DeadLetters (nothing dropped).

Each file is cut into ranges that any worker can read (an uncompressed JSON Lines file into byte
ranges of about `split_bytes`, a Parquet file into runs of row groups; a compressed file is one
range, as a compressed stream cannot be entered in the middle; it is decompressed and checked whole
before any record is parsed), and the ranges are reshuffled so a
runner spreads one large file over its workers. A line belongs to the range holding its first byte,
as in Beam's own text source, so ranges neither lose nor repeat a record.

Every record is parsed on its own (transforms/validation.parse_record never raises): a record can
only dead-letter itself. Only a failure to read or decompress the file itself ends a range early; the
`unreadable_file` dead letter then says how many bytes of the file, as stored, were not read.
"""

from __future__ import annotations

import bz2
import dataclasses
import gzip
import lzma
import tempfile
from collections.abc import Callable, Iterator

import apache_beam as beam
from apache_beam.io import fileio
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from core.records import Conversation, DeadLetter
from transforms import progress
from transforms.record_isolation import split_dead_letters
from transforms.validation import DEFAULT_MAX_RECORD_BYTES, parse_record

_PARQUET_SUFFIXES = (".parquet", ".parq")
_PARQUET_BATCH_ROWS = 1024
# Beam's text source aims at 64 MiB bundles too: large enough that a range's fixed cost is noise.
DEFAULT_SPLIT_BYTES = 64 * 1024 * 1024
_CHUNK_BYTES = 1024 * 1024

JSONL, COMPRESSED_JSONL, PARQUET = "jsonl", "compressed_jsonl", "parquet"


@dataclasses.dataclass(frozen=True)
class InputRange:
    """A part of one input file that one worker reads.

    JSON Lines: the lines whose first byte is in [start, end). Parquet: row groups [start, end), or
    all of them when end is None (the footer could not be read when splitting). A compressed file:
    the whole file (start 0, end = its size).
    """

    path: str
    kind: str
    size: int
    start: int
    end: int | None
    stored_bytes: int = 0  # how many bytes of the file, as stored, this range covers
    first_row: int = 0  # Parquet: the file's row number of the range's first row (0-based)


def _kind(path: str) -> str:
    if path.lower().endswith(_PARQUET_SUFFIXES):
        return PARQUET
    if CompressionTypes.detect_compression_type(path) != CompressionTypes.UNCOMPRESSED:
        return COMPRESSED_JSONL
    return JSONL


def split_file(path: str, size: int, split_bytes: int = DEFAULT_SPLIT_BYTES) -> list[InputRange]:
    """The ranges of one file. Never raises: a Parquet footer that cannot be read gives one range,
    whose reading then dead-letters the file with its size."""
    kind = _kind(path)
    if kind == COMPRESSED_JSONL:
        return [InputRange(path, kind, size, 0, size, stored_bytes=size)]
    if kind == JSONL:
        return [InputRange(path, kind, size, start, end, stored_bytes=end - start)
                for start in range(0, max(size, 1), split_bytes) for end in [min(start + split_bytes, size)]]
    try:
        return _split_parquet(path, size, split_bytes)
    except Exception:  # read again, and dead-lettered with its reason, by the reader
        return [InputRange(path, kind, size, 0, None, stored_bytes=size)]


def _split_parquet(path: str, size: int, split_bytes: int) -> list[InputRange]:
    metadata, kind = _parquet_metadata(path), PARQUET
    ranges, first_group, first_row, group_bytes, stored, rows = [], 0, 0, 0, 0, 0
    for group in range(metadata.num_row_groups):
        group_bytes += metadata.row_group(group).total_byte_size
        stored += _stored_bytes(metadata.row_group(group))
        rows += metadata.row_group(group).num_rows
        if group_bytes >= split_bytes or group == metadata.num_row_groups - 1:
            ranges.append(InputRange(path, kind, size, first_group, group + 1, stored, first_row))
            first_group, first_row, group_bytes, stored = group + 1, rows, 0, 0
    return ranges or [InputRange(path, kind, size, 0, 0)]


def _stored_bytes(row_group) -> int:
    """A row group's size in the file (its column chunks, compressed)."""
    return sum(row_group.column(i).total_compressed_size for i in range(row_group.num_columns))


def _parquet_metadata(path: str):
    import pyarrow.parquet as pq
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
        return pq.ParquetFile(handle).metadata


def scan_lines(read: Callable[[int], bytes], first_offset: int, keep_bytes: int
               ) -> Iterator[tuple[int, bytes, int]]:
    """(offset, line, length) for each line of a byte stream, without its line end.

    Only the first `keep_bytes` bytes of a line are kept (`length` is its whole length), so a
    gigabyte line with no newline costs no more memory than a record at the size cap.
    """
    kept, length, line_start = bytearray(), 0, first_offset
    while True:
        chunk = read(_CHUNK_BYTES)
        if not chunk:
            if length:
                yield line_start, bytes(kept), length
            return
        position = 0
        while True:
            newline = chunk.find(b"\n", position)
            piece = chunk[position:newline if newline >= 0 else len(chunk)]
            room = keep_bytes - len(kept)
            if room > 0:
                kept += piece[:room]
            length += len(piece)
            if newline < 0:
                break
            yield line_start, bytes(kept), length
            line_start += length + 1
            kept, length, position = bytearray(), 0, newline + 1


def _record(raw: bytes, length: int, path: str, line: int | None, offset: int | None, cap: int):
    if length <= cap + 1 and raw.endswith(b"\r"):  # a CRLF line end is not part of the record
        raw, length = raw[:-1], length - 1
    return parse_record(raw, path, line, cap, offset=offset, record_bytes=length)


class _Unreadable(Exception):
    """Reading the file itself failed after `unread_bytes` were left: ends the range."""

    def __init__(self, error: Exception, unread_bytes: int, where: str):
        super().__init__(f"{where}: {type(error).__name__}: {str(error)[:300]}")
        self.unread_bytes = unread_bytes


def _read_jsonl(part: InputRange, cap: int):
    with FileSystems.open(part.path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
        first = max(part.start - 1, 0)
        handle.seek(first)
        lines = scan_lines(handle.read, first, cap + 1)
        position = part.start
        try:
            if part.start > 0:
                next(lines, None)  # the line holding byte start-1 belongs to the range before
            for offset, raw, length in lines:
                if offset >= part.end:
                    return
                position = offset
                yield _record(raw, length, part.path, None, offset, cap)
                position = offset + length + 1
        except Exception as error:
            raise _Unreadable(error, max(part.end - position, 0), f"stopped at byte {position}") from error


# Readers that raise on a truncated stream (EOFError) and on corrupt data (a CRC or format error).
# Beam's CompressedFile returns a truncated gzip's prefix as if it were the whole file, and neither
# it nor the zstd and deflate readers can tell a cut stream from a whole one: a file in those formats
# is dead-lettered unread rather than read with the risk of losing its end without a word.
_VERIFIED_DECOMPRESSORS = {
    CompressionTypes.GZIP: lambda raw: gzip.GzipFile(fileobj=raw, mode="rb"),
    CompressionTypes.BZIP2: lambda raw: bz2.BZ2File(raw, mode="rb"),
    CompressionTypes.LZMA: lambda raw: lzma.LZMAFile(raw, mode="rb"),
}


def _decompress_to(plain, part: InputRange) -> Exception | None:
    """Decompresses the whole file into the temporary file `plain` before any record is parsed:
    gzip checks its CRC only at a member's end, so records decoded from corrupt data would otherwise
    be released (under whatever user the damaged bytes name) before the corruption shows. Returns the
    EOFError of a truncated stream (what was decoded before the cut is intact) or None; raises
    _Unreadable for corrupt data, of which nothing is released."""
    compression = CompressionTypes.detect_compression_type(part.path)
    if compression not in _VERIFIED_DECOMPRESSORS:
        raise _Unreadable(ValueError(f"{compression} streams cannot be checked for truncation"), part.size,
                          "not read: recompress the file as gzip, bzip2 or xz")
    with FileSystems.open(part.path, compression_type=CompressionTypes.UNCOMPRESSED) as raw_handle:
        stream = _VERIFIED_DECOMPRESSORS[compression](raw_handle)
        # read1: what was decompressed before a cut is handed over, not lost with the failing read.
        read = getattr(stream, "read1", stream.read)
        try:
            while chunk := read(_CHUNK_BYTES):
                plain.write(chunk)
        except EOFError as error:
            return error
        except Exception as error:
            raise _Unreadable(error, part.size, "corrupt compressed data: no record of the file was released") from error
    return None


def _read_compressed_jsonl(part: InputRange, cap: int):
    with tempfile.TemporaryFile() as plain:
        truncated = _decompress_to(plain, part)
        plain.seek(0)
        number = 0
        for number, (_, raw, length) in enumerate(scan_lines(plain.read, 0, cap + 1), start=1):
            yield _record(raw, length, part.path, number, None, cap)
        if truncated is not None:
            # Every stored byte was read, so unread_bytes is 0; how much of the original is missing
            # cannot be known from a cut stream.
            raise _Unreadable(truncated, 0, f"the compressed stream ends early, after line {number}: the rest of the "
                                            f"file is missing and its size cannot be known")


class _UnconvertibleRow:
    def __init__(self, error: Exception):
        self.error = error


def _rows_of(batch) -> list:
    """A record batch as Python rows; a row Arrow cannot convert stands alone as _UnconvertibleRow."""
    try:
        return batch.to_pylist()
    except Exception:
        rows = []
        for index in range(batch.num_rows):
            try:
                rows.append(batch.slice(index, 1).to_pylist()[0])
            except Exception as error:
                rows.append(_UnconvertibleRow(error))
        return rows


def _read_parquet(part: InputRange, cap: int):
    import pyarrow.parquet as pq
    unread = part.stored_bytes
    try:
        with FileSystems.open(part.path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
            parquet_file = pq.ParquetFile(handle)
            groups = range(part.start, parquet_file.num_row_groups if part.end is None else part.end)
            unread = sum(_stored_bytes(parquet_file.metadata.row_group(g)) for g in groups)
            row = part.first_row
            for group in groups:
                for batch in parquet_file.iter_batches(batch_size=_PARQUET_BATCH_ROWS, row_groups=[group]):
                    for values in _rows_of(batch):
                        row += 1
                        if isinstance(values, _UnconvertibleRow):
                            yield DeadLetter(source=part.path, line=row, reason="invalid_record",
                                             detail=f"row cannot be converted: {type(values.error).__name__}",
                                             raw="")
                        else:
                            yield parse_record(values, part.path, row, cap)
                unread -= _stored_bytes(parquet_file.metadata.row_group(group))
    except Exception as error:
        raise _Unreadable(error, max(unread, 0), f"stopped before Parquet row {part.first_row + 1}"
                          if part.first_row else "stopped") from error


_READERS = {JSONL: _read_jsonl, COMPRESSED_JSONL: _read_compressed_jsonl, PARQUET: _read_parquet}


def read_range(part: InputRange, max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES
               ) -> Iterator[Conversation | DeadLetter]:
    """Every record of a range, parsed; then one `unreadable_file` dead letter if reading the file
    itself failed (never raises for what the file holds)."""
    try:
        yield from _READERS[part.kind](part, max_record_bytes)
    except _Unreadable as failure:
        yield DeadLetter(source=part.path, line=None, reason="unreadable_file", detail=str(failure), raw="",
                         unread_bytes=failure.unread_bytes)
    except Exception as error:  # opening the file failed: none of the range was read
        yield DeadLetter(source=part.path, line=None, reason="unreadable_file",
                         detail=f"cannot open: {type(error).__name__}: {str(error)[:300]}", raw="",
                         unread_bytes=part.stored_bytes)


class _ReadRange(beam.DoFn):
    def __init__(self, max_record_bytes: int):
        self._max_record_bytes = max_record_bytes
        self._read = Metrics.counter("read", "records_read")
        self._valid = Metrics.counter("read", "records_valid")
        self._dead = Metrics.counter("read", "records_dead_lettered")

    def process(self, part: InputRange):
        for parsed in read_range(part, self._max_record_bytes):
            self._read.inc()
            progress.advance("read")
            if isinstance(parsed, DeadLetter):
                self._dead.inc()
                Metrics.counter("dead_letter", parsed.reason).inc()
            else:
                self._valid.inc()
                progress.note_valid_record(parsed.user_id)
            yield parsed


@dataclasses.dataclass(frozen=True)
class ReadResult:
    valid: beam.PCollection
    dead_letter: beam.PCollection


class ReadConversations(beam.PTransform):
    """Reads JSON Lines (.jsonl, or compressed: .gz, .bz2, .xz) and Parquet files matching
    `file_pattern`.

    Returns `valid` Conversations and `dead_letter` DeadLetters; every input record lands in exactly
    one of them. A pattern that matches no file fails the pipeline early.
    """

    def __init__(self, file_pattern: str, max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
                 split_bytes: int = DEFAULT_SPLIT_BYTES):
        super().__init__()
        if split_bytes < 1:
            raise ValueError(f"split_bytes must be >= 1, got {split_bytes}")
        self._file_pattern = file_pattern
        self._max_record_bytes = max_record_bytes
        self._split_bytes = split_bytes

    def expand(self, pbegin):
        split_bytes = self._split_bytes
        parsed = (
            pbegin
            | "match input files" >> fileio.MatchFiles(
                self._file_pattern, empty_match_treatment=fileio.EmptyMatchTreatment.DISALLOW)
            | "split files into ranges" >> beam.FlatMap(
                lambda metadata: split_file(metadata.path, metadata.size_in_bytes, split_bytes))
            # Without this, a runner would read all ranges of a file in the worker that listed it.
            | "spread ranges over workers" >> beam.Reshuffle()
            | "parse and validate records" >> beam.ParDo(_ReadRange(self._max_record_bytes))
        )
        split = split_dead_letters(parsed)
        return ReadResult(valid=split.output, dead_letter=split.dead_letter)
