import os
import pathlib

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
# Every test gets exactly one tier. `slow` is the union of the tiers other than unit, so the existing
# @pytest.mark.slow decorators keep working and `pytest -m "not slow"` (= `-m unit`) is the inner loop.
# The tiers are the markers pytest.ini describes as "tier: ...".
TIERS: tuple[str, ...] = ()
TESTS = pathlib.Path(__file__).resolve().parent
# The tier of a test that carries no tier marker of its own. "module::test": that test's, marked slow or not (a
# heavy test moved out of the inner loop from here, its file unchanged). "module": the tier of the module's tests
# marked slow (or in a module marked slow). A slow test found in neither stops the run, so that no test goes
# without a tier. A module is named by its path under tests/, dotted: "beam_jobs.test_options".
SLOW_TIERS = {
    "beam_jobs.test_build_keywords": "e2e", "backends.test_centre_decoder": "e2e",
    "transforms.test_centroid_keywords": "e2e", "beam_jobs.test_compare_reports": "real_model",
    "beam_jobs.test_dask_runner": "e2e", "backends.test_default_keyword_set": "real_model",
    "dp_ops.test_dp_stage_specs": "e2e", "backends.test_embedding_backends": "real_model",
    "beam_jobs.test_end_to_end": "e2e", "transforms.test_engines": "e2e", "eval.test_eval_llm_judge": "e2e",
    "eval.test_eval_nightly_stream": "e2e", "eval.test_eval_pipelines": "e2e", "eval.test_eval_topic_quality": "e2e",
    "eval.test_eval_utility_metrics": "real_model", "backends.test_exemplars": "e2e",
    "eval.test_facet_accuracy": "real_model", "dp_ops.test_facet_histograms": "e2e",
    "backends.test_facet_multilingual": "real_model", "dp_ops.test_keyword_votes": "e2e",
    "eval.test_label_coverage": "real_model", "beam_jobs.test_ledger_policy": "e2e", "publishing.test_lineage": "e2e",
    "backends.test_llm_fault_injection": "e2e", "backends.test_llm_independence": "real_model",
    "backends.test_local_backend": "real_llm", "backends.test_local_prefix_cache": "real_llm",
    "backends.test_name_rules": "real_model", "backends.test_native_workers": "real_model",
    "eval.test_nightly_privacy_modes": "e2e",
    "beam_jobs.test_nightly_runs": "e2e", "backends.test_offline_backends": "real_model",
    "beam_jobs.test_options": "e2e", "backends.test_person_judge": "real_llm", "backends.test_pii_real": "real_model",
    "dp_ops.test_privacy_audit": "e2e", "beam_jobs.test_progress": "e2e", "backends.test_pseudonymize": "real_model",
    "transforms.test_record_independence": "real_model", "beam_jobs.test_release_snapshot": "e2e",
    "publishing.test_report_browser": "browser", "backends.test_surrogates": "real_model",
    "dp_ops.test_theme_histogram": "e2e", "publishing.test_timeline": "e2e",
    "publishing.test_timeline_browser": "browser", "dp_ops.test_token_decoding": "real_llm",
    "beam_jobs.test_token_decoding_job": "real_llm",
    "backends.test_centre_decoder::test_the_local_model_decodes_a_centre_into_a_readable_name": "real_llm",
    "transforms.test_record_independence::test_the_whole_job_exits_0_and_accounts_for_every_kind_of_line": "e2e",
    "transforms.test_record_independence::test_the_reported_breakers_are_dead_lettered_alone_and_the_job_releases":
        "e2e",
    # Not marked slow in their files, and the heaviest of the inner loop (5-25 s each under load): PLD
    # calibrations over many nights or modes, and the decoder through whole in-process and Beam runs.
    "beam_jobs.test_ledger_policy::test_sixty_planned_nights_with_one_mistaken_night_keep_every_window_within_the_cap":
        "e2e",
    "eval.test_nightly_privacy_modes::test_sampled_window_checked_with_the_library_accountant_from_the_stage_multipliers":
        "e2e",
    "eval.test_nightly_privacy_modes::test_calibrated_noise_meets_the_cap_and_one_percent_less_exceeds_it": "e2e",
    "eval.test_nightly_privacy_modes::test_amplification_lets_a_sampled_night_spend_more_but_never_more_signal_per_unit_of_noise":
        "e2e",
    "backends.test_centre_decoder::test_a_topic_whose_decoding_fails_keeps_its_name_and_no_other_topic_changes":
        "e2e",
    "backends.test_centre_decoder::test_released_topics_with_decoded_names_are_the_same_on_beam_and_in_process":
        "e2e",
}


def pytest_configure(config):
    global TIERS
    TIERS = tuple(line.split(":", 1)[0] for line in config.getini("markers")
                  if line.split(":", 1)[1].strip().startswith("tier:"))


def tier_of(item) -> str:
    """The tier of a collected test: its own tier marker, else SLOW_TIERS's, else unit."""
    marked = {mark.name for mark in item.iter_markers() if mark.name in TIERS}
    if len(marked) > 1:
        raise pytest.UsageError(f"{item.nodeid}: more than one tier ({', '.join(sorted(marked))})")
    if marked == {"unit"} and item.get_closest_marker("slow") is not None:
        raise pytest.UsageError(f"{item.nodeid}: marked unit and slow; slow is every tier but unit")
    if marked:
        return marked.pop()
    module = ".".join(item.path.resolve().relative_to(TESTS).with_suffix("").parts)  # beam_jobs.test_options
    tier = SLOW_TIERS.get(f"{module}::{getattr(item, 'originalname', item.name)}")
    if tier is not None:
        return tier
    if item.get_closest_marker("slow") is None:
        return "unit"
    tier = SLOW_TIERS.get(module)
    if tier is None:
        raise pytest.UsageError(f"{item.nodeid} is marked slow but has no tier: add its module to SLOW_TIERS in "
                                "tests/conftest.py or mark it with its tier")
    return tier


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
