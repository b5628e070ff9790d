"""Tiers are marked in the test files (tests/conftest.py, docs/tests.md): a file says @pytest.mark.e2e,
real_model, real_llm or browser, and conftest adds `slow` to each of them. A bare `slow` marker would
stop the run at collection; this names the file instead."""

import pathlib

TESTS = pathlib.Path(__file__).resolve().parents[1]


def test_no_test_file_marks_slow_without_its_tier():
    bare = sorted(str(path.relative_to(TESTS)) for path in TESTS.rglob("test_*.py")
                  if path != pathlib.Path(__file__).resolve() and "pytest.mark.slow" in path.read_text(encoding="utf-8"))
    assert bare == []
