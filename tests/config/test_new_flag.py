"""A new flag is 2 files: its declaration in its params group (config/) and the stage that reads it.

The toy flag here is declared once, in a subclass of the keywords group (standing for an edit of
config/keywords.py), and read by the keyword stage from the group it is given (standing for an edit of
transforms/topic_keywords.py). Nothing else names it, yet it is parsed as Dataflow passes it and checked,
listed by the job's --help, in docs/options.md and the Flex Template's parameters, shown in the report's
config (it is public), a field of the in-process run's config and settable with an evaluation's --set.
"""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from backends import embedding
from backends.keyword_categories import KeywordCategories
from backends.offline import KeywordClusterNamer
from beam_jobs import job_help, option_docs
from beam_jobs.topic_plan import TopicBackends, topic_plan
from config.flags import job_options
from config.insights import REQUIRED_FLAGS, InsightsParams, insights_params
from config.keywords import KeywordParams
from core.params import flag, params_group
from core.records import ConversationBlock
from eval.config_flags import config_overrides
from eval.urania_inprocess import config_class, config_shown, job_params
from publishing.previous_nights import PreviousNights
from tests.beam_jobs.test_option_docs import _copy_documents
from transforms import topic_stages
from transforms.engine import LocalEngine

HELP = "Toy: how many keywords the selector looks at before it picks."


@params_group
class ToyKeywordParams(KeywordParams):
    """Topic keywords: the keyword set, how keywords are chosen and how many are released."""

    keyword_toy_knob: int = flag(3, HELP, type=int, public=True, ge=1)


@dataclasses.dataclass(frozen=True)
class ToyJob(InsightsParams):
    """The insights job whose keywords group has the toy flag."""

    keywords: ToyKeywordParams


@pytest.fixture
def toy_job_options():
    """ToyJob's options class, for this test only: Beam parses the flags of every live PipelineOptions
    subclass, and the toy keywords group's would register the keyword flags a second time in every later
    parse of this process: afterwards it registers none."""
    options = job_options(ToyJob, "ToyJobOptions", __name__)
    yield options
    toy_group = next(base for base in options.__bases__ if base.__name__ == "ToyKeywordOptions")
    toy_group._add_argparse_args = classmethod(lambda cls, parser: None)


def test_the_flag_is_parsed_checked_and_public(toy_job_options):
    def parsed(*flags):
        return insights_params(PipelineOptions(["--input=in.jsonl", "--output=out", *flags]).view_as(toy_job_options),
                               ToyJob)

    params = parsed("--keyword_toy_knob=5")
    assert params.keywords.keyword_toy_knob == 5 and parsed().keywords.keyword_toy_knob == 3
    assert params.public_config()["keyword_toy_knob"] == 5  # what the job's release_config puts in the report
    with pytest.raises(ValueError, match="--keyword_toy_knob must be >= 1, got 0"):
        parsed("--keyword_toy_knob=0")


def test_the_flag_is_in_the_help_the_documents_and_the_template(tmp_path):
    help_text = job_help.help_parser(ToyJob, prog="insights", description="", required=REQUIRED_FLAGS).format_help()
    assert "--keyword_toy_knob" in help_text and "selector looks at" in help_text

    root = _copy_documents(tmp_path)
    assert option_docs.write(root, ToyJob) == [option_docs.OPTIONS_MD, option_docs.METADATA_JSON]
    page = (tmp_path / option_docs.OPTIONS_MD).read_text()
    keywords_section = page[page.index("## Keywords\n"):]
    keywords_section = keywords_section[:keywords_section.index("\n## ", 1)]
    assert f"| `--keyword_toy_knob` | 3 | {HELP} Must be `>= 1`. |" in keywords_section
    parameters = {p["name"]: p for p in json.loads((tmp_path / option_docs.METADATA_JSON).read_text())["parameters"]}
    toy = parameters["keyword_toy_knob"]
    assert toy["helpText"] == f"{HELP} Must be >= 1." and toy["isOptional"]
    assert all(re.fullmatch(regex, "5") for regex in toy["regexes"])
    assert not all(re.fullmatch(regex, "many") for regex in toy["regexes"])


def test_the_flag_reaches_the_in_process_config_set_and_the_stage(monkeypatch):
    ToyConfig = config_class(ToyJob)
    assert "keyword_toy_knob" in ToyConfig.flags and ToyConfig().keyword_toy_knob == 3
    with pytest.raises(ValueError, match="--keyword_toy_knob must be >= 1"):
        ToyConfig(keyword_toy_knob=0)
    assert config_overrides(["keyword_toy_knob=6"], ToyConfig) == {"keyword_toy_knob": 6}
    config = ToyConfig(num_clusters=2, min_cluster_size=1, **config_overrides(["keyword_toy_knob=6"], ToyConfig))
    assert job_params(config).keywords.keyword_toy_knob == 6

    # The stage reads it from the group it is given: the wiring between (TopicPlan, topic_stages) names it
    # nowhere. Centroid keywords and no noise keep the run small; the plan is the one the job builds.
    seen = []

    class ToyTopicKeywords(topic_stages.TopicKeywords):
        def __init__(self, params, *args, **kwargs):
            seen.append(params.keyword_toy_knob)
            super().__init__(params, *args, **kwargs)

    monkeypatch.setattr(topic_stages, "TopicKeywords", ToyTopicKeywords)
    categories = KeywordCategories({"python": "Python coding", "unit testing": "Python coding",
                                    "vegetables": "Food and cooking"})
    # No basis to compute, and no label writer or name bank for the (default) centre decoder.
    small = dataclasses.replace(config, keyword_mode="centroid", projection_dim=0, centre_decoder=False,
                                themes=False, facets="none")  # a toy keyword set: no sensitive category to answer concern
    dimension = embedding.embedding_dimension(embedding.DEFAULT_EMBEDDING_MODEL)  # the default encoder's
    plan = topic_plan(job_params(small), None, dimension, TopicBackends(
        keywords=("python", "unit testing", "vegetables"), categories=categories, selector=None,
        namer=KeywordClusterNamer(categories), previous=PreviousNights(), new_lineage_prefix="n",
        exemplar_writer=None, label_writer=None, name_bank=None))
    vectors = np.random.default_rng(0).normal(size=(20, dimension)).astype(np.float32)
    block = ConversationBlock([f"c{i}" for i in range(20)], [f"u{i}" for i in range(20)], np.ones(20),
                              ["{}"] * 20, vectors / np.linalg.norm(vectors, axis=1, keepdims=True))
    released = topic_stages.topic_stages(LocalEngine(), [block], plan, None).released
    assert seen == [6] and released.topics
    # the in-process report's config shows a flag it did not show before once it is set away from its default
    assert config_shown(config)["keyword_toy_knob"] == 6 and "keyword_toy_knob" not in config_shown(ToyConfig())
