"""terraform/ is checked with what runs here: terraform itself is not in the package registries, so
the files are parsed with python-hcl2, every reference is resolved, and terraform fmt's layout
rules (2-space nesting, aligned '=' in runs of single-line attributes) are checked."""

import glob
import json
import os
import re

import hcl2
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FILES = sorted(glob.glob(os.path.join(ROOT, "terraform", "*.tf")))
TEXT = {path: open(path).read() for path in FILES}
PARSED = {path: hcl2.load(open(path)) for path in FILES}


def _unquote(value: str) -> str:
    return value.strip('"')


def _blocks(kind: str) -> list[dict]:
    return [block for parsed in PARSED.values() for block in parsed.get(kind, [])]


def _resources() -> dict[tuple[str, str], dict]:
    resources = {}
    for block in _blocks("resource"):
        for rtype, named in block.items():
            for name, body in named.items():
                resources[(_unquote(rtype), _unquote(name))] = body
    return resources


def _variables() -> set[str]:
    return {_unquote(name) for block in _blocks("variable") for name in block}


def _locals() -> dict:
    merged = {}
    for block in _blocks("locals"):
        merged.update(block)
    return merged


def test_every_file_parses_and_the_module_has_what_production_needs():
    assert {os.path.basename(p) for p in FILES} >= {"main.tf", "variables.tf", "versions.tf", "outputs.tf"}
    resources = _resources()
    buckets = {name for rtype, name in resources if rtype == "google_storage_bucket"}
    assert buckets == {"logs", "releases", "private", "access_logs"}
    for rtype in ("google_service_account", "google_artifact_registry_repository", "google_cloud_scheduler_job"):
        assert any(r == rtype for r, _ in resources), rtype
    assert {"project", "region", "bucket"} <= _variables()


def test_every_reference_resolves():
    resources, variables, local_names = _resources(), _variables(), {_unquote(k) for k in _locals()}
    text = "\n".join(TEXT.values())
    for rtype, name in set(re.findall(r"\b(google_[a-z_]+)\.([a-z0-9_]+)\.[a-z_]+", text)):
        assert (rtype, name) in resources, f"{rtype}.{name} is not declared"
    for name in set(re.findall(r"\bvar\.([a-z0-9_]+)", text)):
        assert name in variables, f"var.{name} is not declared"
    for name in set(re.findall(r"\blocal\.([a-z0-9_]+)", text)):
        assert name in local_names, f"local.{name} is not declared"


def test_buckets_are_private_and_private_outputs_expire():
    resources = _resources()
    for name in ("logs", "releases", "private", "access_logs"):
        bucket = resources[("google_storage_bucket", name)]
        assert bucket["uniform_bucket_level_access"] is True
        assert _unquote(bucket["public_access_prevention"]) == "enforced"
    private = resources[("google_storage_bucket", "private")]
    expiry, noncurrent = private["lifecycle_rule"]
    assert "var.private_retention_days" in json.dumps(expiry["condition"])
    assert private["versioning"][0]["enabled"] is True  # the ledger keeps its history
    # ... but outputs do not: a deleted or overwritten one (a pending release once published, a
    # rejected one once expired) does not linger as a noncurrent version.
    assert noncurrent["condition"][0]["days_since_noncurrent_time"] == 1
    prefixes = [[_unquote(p) for p in rule["condition"][0]["matches_prefix"]] for rule in (expiry, noncurrent)]
    assert prefixes == [["insights/"], ["insights/"]]


def test_private_outputs_and_the_release_gates_staging_are_in_the_private_bucket():
    # The job writes release.pending/ and release.rejected/ under --private_output (core/run_context.py),
    # so they land in the private bucket under the prefix that expires, never in the releases bucket.
    launch = _locals()["launch_parameters"]
    private = _unquote(launch["private_output"])
    assert private.startswith("gs://${local.private_bucket}/insights")
    assert _unquote(launch["output"]).startswith("gs://${local.releases_bucket}/")


def test_every_data_bucket_logs_its_access():
    resources = _resources()
    for name in ("logs", "releases", "private"):
        (logging,) = resources[("google_storage_bucket", name)]["logging"]
        assert "google_storage_bucket.access_logs.name" in logging["log_bucket"], name
    writers = [body for (rtype, _), body in resources.items() if rtype == "google_storage_bucket_iam_member"
               and "google_storage_bucket.access_logs" in json.dumps(body)]
    assert [(_unquote(w["role"]), _unquote(w["member"])) for w in writers] == [
        ("roles/storage.objectCreator", "group:cloud-storage-analytics@google.com")]


def test_roles_are_least_privilege():
    text = "\n".join(TEXT.values())
    roles = set(re.findall(r'role\s*=\s*"(roles/[a-zA-Z.]+)"', text))
    assert roles <= {"roles/dataflow.worker", "roles/dataflow.developer", "roles/storage.objectViewer",
                     "roles/storage.objectAdmin", "roles/storage.objectCreator", "roles/artifactregistry.reader",
                     "roles/iam.serviceAccountUser"}
    assert not re.search(r"roles/(owner|editor|storage\.admin)\b", text)
    resources = _resources()
    logs_members = [body for (rtype, _), body in resources.items() if rtype == "google_storage_bucket_iam_member"
                    and "google_storage_bucket.logs" in json.dumps(body)]
    assert [_unquote(m["role"]) for m in logs_members] == ["roles/storage.objectViewer"]  # logs are read-only


def test_nightly_launch_passes_only_options_the_template_declares():
    metadata = json.load(open(os.path.join(ROOT, "templates", "metadata.json")))
    declared = {p["name"] for p in metadata["parameters"]}
    launch = _locals()["launch_parameters"]
    assert {_unquote(k) for k in launch} <= declared
    assert _unquote(launch["date"]) == "yesterday" and "{date}" in launch["input"]
    scheduler = _resources()[("google_cloud_scheduler_job", "nightly")]
    target = scheduler["http_target"][0]
    assert "flexTemplates:launch" in target["uri"] and "local.launch_parameters" in target["body"]


@pytest.mark.parametrize("path", FILES, ids=os.path.basename)
def test_layout_follows_terraform_fmt(path):
    depth, run = 0, []

    def close_run():
        columns = {line.index("=") for line in run}
        assert len(columns) <= 1, f"{os.path.basename(path)}: '=' not aligned in {run}"
        if run:
            longest = max(len(line[:line.index("=")].rstrip()) for line in run)
            assert all(line.index("=") == longest + 1 for line in run), f"not minimally aligned: {run}"
        run.clear()

    for number, line in enumerate(TEXT[path].splitlines(), start=1):
        assert "\t" not in line and line == line.rstrip(), f"{os.path.basename(path)}:{number}: tabs or trailing space"
        stripped = line.strip()
        opens = len(re.findall(r"[{\[(]", stripped))
        closes = len(re.findall(r"[}\])]", stripped))
        expected = depth - (1 if stripped[:1] in "}])" and stripped else 0)
        if stripped:
            assert len(line) - len(line.lstrip()) == 2 * expected, f"{os.path.basename(path)}:{number}: indentation"
        single_line_attribute = (re.match(r'^[\w"-]+\s*=', stripped) and opens == closes)
        if single_line_attribute:
            run.append(line)
        else:
            close_run()
        # Like hclwrite: a line that leaves brackets open indents what follows by one level,
        # however many it opens (`toset([`), and a line that closes them dedents by one.
        depth += (opens > closes) - (opens < closes)
    close_run()
    assert depth == 0
