"""The in-process run's configuration is the job's flags, declared once (eval/urania_inprocess.py,
eval/config_flags.py): its fields' types and defaults are the params groups', it refuses what the job's
flags refuse, and an evaluation's command line registers the job's flags rather than re-declaring them."""

import argparse
import dataclasses
import math
import typing

import pytest

from beam_jobs.topic_plan import stage_requests as job_stage_requests
from config.clustering import ClusteringParams
from config.insights import InsightsParams
from config.keywords import KeywordParams
from config.privacy import DEFAULT_EPSILON, PrivacyParams
from core.params import flag_fields
from eval.config_flags import JOB_DEFAULT, _convert, add_config_flags, config_from, config_overrides
from eval.urania_inprocess import (
    CONFIG_FLAGS,
    REPORTED_FLAGS,
    UNHONOURED_FLAGS,
    UNRUN_GROUPS,
    UraniaConfig,
    config_shown,
    job_flag,
    job_params,
    stage_requests,
)


def test_the_config_is_the_jobs_flags_with_the_jobs_defaults():
    config = UraniaConfig()
    assert [field.name for field in dataclasses.fields(UraniaConfig)] == list(CONFIG_FLAGS)
    assert config.num_clusters == ClusteringParams.num_clusters
    assert config.keyword_votes == PrivacyParams.keyword_votes
    assert config.keywords_per_vote == KeywordParams.keywords_per_vote
    # the job plans epsilon from a ledger's cap when none is given; the in-process run has no ledger
    assert PrivacyParams.epsilon is None and config.epsilon == DEFAULT_EPSILON and config.private
    assert not dataclasses.replace(config, epsilon=math.inf).private
    with pytest.raises(ValueError, match="not a flag the in-process run honours"):
        job_flag("embedding_threads")


def test_every_flag_of_the_job_is_honoured_or_declared_as_not():
    """A flag added to a group the run has is a config field with no edit here; one it cannot honour is
    listed with why; the groups it has no part of are named."""
    groups = typing.get_type_hints(InsightsParams)
    assert set(UNRUN_GROUPS) < set(groups)
    for name, group in groups.items():
        for field in flag_fields(group):
            honoured, unhonoured = field.name in CONFIG_FLAGS, field.name in UNHONOURED_FLAGS
            if name in UNRUN_GROUPS:
                assert not (honoured or unhonoured), field.name
            else:
                assert honoured != unhonoured, field.name
    assert CONFIG_FLAGS[:len(REPORTED_FLAGS)] == REPORTED_FLAGS
    assert set(CONFIG_FLAGS[len(REPORTED_FLAGS):]) == {"keyword_mode", "keyword_min_noisy_count"}


def test_the_report_shows_a_newer_flag_only_away_from_its_default():
    assert list(config_shown(UraniaConfig())) == list(REPORTED_FLAGS)
    shown = config_shown(UraniaConfig(keyword_mode="both"))
    assert list(shown) == [*REPORTED_FLAGS, "keyword_mode"] and shown["keyword_mode"] == "both"
    assert job_params(UraniaConfig(keyword_mode="centroid")).keywords.keyword_mode == "centroid"
    assert "keyword_histograms" not in [r.stage for r in stage_requests(UraniaConfig(keyword_mode="centroid"))]


def test_each_field_reaches_its_group_and_the_jobs_checks_apply():
    config = UraniaConfig(num_clusters=7, keywords_per_vote=3, themes=True, facets="none", exemplars_per_topic=2)
    params = job_params(config, seed=4, noise_seed=9)
    assert (params.clustering.num_clusters, params.keywords.keywords_per_vote, params.keywords.themes,
            params.exemplars.exemplars_per_topic) == (7, 3, True, 2)
    assert (params.run.seed, params.privacy.noise_seed) == (4, 9)
    # the calibration requests are the job's own for the same params
    assert stage_requests(config) == job_stage_requests(params)
    assert [r.stage for r in stage_requests(config)][-1] == "themes"
    with pytest.raises(ValueError, match="--num_clusters must be >= 1"):
        UraniaConfig(num_clusters=0)
    with pytest.raises(ValueError, match="--keywords_per_vote must be in"):
        UraniaConfig(keywords_per_vote=99)


def _parser(**defaults) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    add_config_flags(parser, **defaults)
    return parser


def test_an_evaluation_registers_the_jobs_flag_with_its_own_default():
    parser = _parser(num_clusters=20, min_cluster_size=JOB_DEFAULT)
    help_text = " ".join(parser.format_help().split())
    assert job_flag("num_clusters").metadata["help"].split(".")[0] in help_text
    assert "this evaluation's default; the job's is 50" in help_text
    args = parser.parse_args([])
    assert (args.num_clusters, args.min_cluster_size) == (20, ClusteringParams.min_cluster_size)
    assert config_from(args).num_clusters == 20
    # --set overrides any field, typed; what the evaluation fixes wins over both
    args = parser.parse_args(["--num_clusters", "12", "--set", "epsilon=inf", "--set", "themes=true"])
    config = config_from(args, min_cluster_size=3)
    assert (config.num_clusters, config.epsilon, config.themes, config.min_cluster_size) == (12, math.inf, True, 3)
    # an evaluation's own flag of the same name as a field is not taken for it
    parser.add_argument("--warm_start", default="both")
    assert config_from(parser.parse_args([])).warm_start == ClusteringParams.warm_start


def test_bad_overrides_name_the_field_and_the_choices():
    with pytest.raises(SystemExit, match="FIELD one of .*num_clusters"):
        config_overrides(["no_such_field=1"])
    with pytest.raises(SystemExit, match="expected true or false"):
        config_overrides(["themes=maybe"])
    assert config_overrides(["expected_users=none", "num_clusters=3"]) == {"expected_users": None, "num_clusters": 3}
    with pytest.raises(SystemExit):
        _parser(num_clusters=JOB_DEFAULT).parse_args(["--num_clusters", "many"])


def test_overrides_are_typed_from_the_config():
    overrides = config_overrides(["projection_dim=64", "epsilon=inf", "keyword_set=none", "delta=1e-5"])
    assert overrides == {"projection_dim": 64, "epsilon": math.inf, "keyword_set": None, "delta": 1e-5}
    assert UraniaConfig(**overrides).projection_dim == 64
    with pytest.raises(SystemExit, match="projection_dim"):
        config_overrides(["projection_dim=sixty"])


def test_override_conversion_follows_the_annotation():
    assert _convert("none", typing.Optional[int]) is None
    assert _convert("3", typing.Optional[int]) == 3
    assert _convert("false", bool) is False
    assert _convert("pca", typing.Literal["pca", "random"]) == "pca"
    with pytest.raises(ValueError, match="pca, random"):
        _convert("umap", typing.Literal["pca", "random"])
