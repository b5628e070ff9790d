"""The tier table names real tests: an entry for a renamed or removed test would silently put its
successor back in the inner loop (tests/conftest.py, docs/tests.md)."""

import importlib

from tests.conftest import SLOW_TIERS


def test_every_named_test_in_the_tier_table_exists():
    for key, tier in SLOW_TIERS.items():
        module, _, test = key.partition("::")
        imported = importlib.import_module(f"tests.{module}")
        assert not test or callable(getattr(imported, test, None)), f"SLOW_TIERS names {key}, which does not exist"
        assert tier in ("e2e", "browser", "real_model", "real_llm"), key
