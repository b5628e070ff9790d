import os

# Before anything imports google-auth (it reads these at import time): never probe the GCE metadata
# server (a link-local address) for credentials; tests talk to loopback only.
os.environ["NO_GCE_CHECK"] = "true"
os.environ["GCE_METADATA_HOST"] = "127.0.0.1:9"
os.environ["GCE_METADATA_IP"] = "127.0.0.1:9"
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import apache_beam as beam  # noqa: E402
import pytest  # noqa: E402
from apache_beam.testing.test_pipeline import TestPipeline  # noqa: E402
from apache_beam.testing.util import BeamAssertException, assert_that  # noqa: E402
from hypothesis import settings  # noqa: E402

# CI draws the same examples on every run (a red CI must be reproducible, and must not come and go
# with the draw); elsewhere each run explores new ones.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


# --- test tiers (docs/tests.md) --------------------------------------------------------------------------
# Every test gets exactly one tier, marked in its own file (@pytest.mark.e2e, or a module's pytestmark).
# `slow` is the union of the tiers other than unit, added here, so `pytest -m "not slow"` (= `-m unit`) is
# the inner loop. The tiers are the markers pytest.ini describes as "tier: ...".
TIERS: tuple[str, ...] = ()
def pytest_configure(config):
    global TIERS
    TIERS = tuple(line.split(":", 1)[0] for line in config.getini("markers")
                  if line.split(":", 1)[1].strip().startswith("tier:"))


def tier_of(item) -> str:
    """The tier of a collected test: its own tier marker (on the test, its class or its module's
    pytestmark), else unit. A test marked slow without a tier stops the run, so that none goes without one."""
    marked = {mark.name for mark in item.iter_markers() if mark.name in TIERS}
    if len(marked) > 1:
        raise pytest.UsageError(f"{item.nodeid}: more than one tier ({', '.join(sorted(marked))})")
    if marked == {"unit"} and item.get_closest_marker("slow") is not None:
        raise pytest.UsageError(f"{item.nodeid}: marked unit and slow; slow is every tier but unit")
    if marked:
        return marked.pop()
    if item.get_closest_marker("slow") is not None:
        raise pytest.UsageError(f"{item.nodeid} is marked slow but has no tier: mark it with its tier "
                                f"({', '.join(t for t in TIERS if t != 'unit')})")
    return "unit"


def pytest_collection_modifyitems(config, items):
    for item in items:
        tier = tier_of(item)
        item.add_marker(tier)
        if tier != "unit":
            item.add_marker("slow")


@pytest.fixture(scope="session")
def small_run(tmp_path_factory):
    """One small finished run of the job per pytest run (tests/support/small_run.py), for tests that only read one."""
    from tests.support.small_run import run_small_job
    return run_small_job(str(tmp_path_factory.mktemp("small-run")))


def local_pipeline() -> TestPipeline:
    # The DirectRunner's in-process engine, without its Prism attempt (see beam_jobs.insights). A TestPipeline: it
    # runs when its `with` block ends and fails there if an assert_that does. argv=[]: its options never come from
    # pytest's command line.
    return TestPipeline(runner="FnApiRunner", argv=[])


def checked(check):
    """A matcher for assert_that: `check` gets the PCollection's elements (a list) and checks them with plain asserts;
    a failed one raises BeamAssertException with pytest's message, which shows the values involved."""

    def match(actual):
        try:
            check(actual)
        except AssertionError as failure:
            raise BeamAssertException(f"{getattr(check, '__name__', 'check')}: {failure}") from failure

    return match


def check_dp_stage(stage, elements, check) -> None:
    """Runs the DP `stage` on `elements` in a pipeline; check(its release as a dict, the stage's spend) runs as its
    assert_that. The spend is set when the stage is applied, before the run, so it is read there."""
    with local_pipeline() as pipeline:
        released = pipeline | beam.Create(elements) | stage
        spend = stage.spend

        def release(pairs):
            check(dict(pairs), spend)

        release.__name__ = getattr(check, "__name__", "check")  # a failure names the test's check
        assert_that(released, checked(release), label="release")


def assert_together(check, label: str, **pcolls):
    """assert_that on several PCollections at once: check(**{name: list of that PCollection's elements}), with plain
    asserts as in `checked`. For what compares the PCollections with one another."""
    names = list(pcolls)
    tagged = [pcoll | f"{label}: tag {name}" >> beam.Map(lambda element, name=name: (name, element))
              for name, pcoll in pcolls.items()]
    gathered = (tagged | f"{label}: flatten" >> beam.Flatten() | f"{label}: gather" >> beam.combiners.ToList()
                | f"{label}: by name" >> beam.Map(
                    lambda pairs: {name: [element for tag, element in pairs if tag == name] for name in names}))

    def together(actual):
        (by_name,) = actual
        check(**by_name)

    together.__name__ = getattr(check, "__name__", "check")
    assert_that(gathered, checked(together), label=label)


class PoisonedProposer:
    """The offline keyword proposer, except that it raises for a batch holding a facet that contains
    `raise_on` (case-insensitive) and answers a facet containing `broken_on` with something that is not
    a list of keywords: what a failing proposal looks like to ProposeKeywords."""

    def __init__(self, raise_on: str, broken_on: str | None = None):
        from backends.offline_keywords import FrequentTermsKeywordProposer
        self._inner = FrequentTermsKeywordProposer()
        self._raise_on, self._broken_on = raise_on.lower(), broken_on.lower() if broken_on else None

    def setup(self):
        self._inner.setup()

    def teardown(self):
        pass

    def propose(self, facets, max_keywords):
        if any(self._raise_on in facet.lower() for facet in facets):
            raise RuntimeError("the proposer broke")
        return [None if self._broken_on and self._broken_on in facet.lower() else proposed
                for facet, proposed in zip(facets, self._inner.propose(facets, max_keywords))]
