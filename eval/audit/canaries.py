"""The canary leakage benchmark (CanaryBench protocol).

Run a pipeline on conversations with planted canaries (eval/audit/canary_generator.py), then scan every
file the pipeline wrote under release/ (and private/release.pending/, private/release.rejected/: what it
would have published, whatever the release gate then decided) for each canary verbatim (case-insensitive) and
for PII-like regex hits (the release gate's patterns). Reported:

- per-canary leak rate: canaries found anywhere in the released files / canaries planted;
- cluster-level leak rate: among clusters holding at least one canary conversation (from the
  pipeline's private assignments), the share whose published topic text contains a canary
  (an unreleased cluster publishes nothing, so it does not leak);
- PII regex hits, and the release gate's verdict on the same files;
- the synthetic exemplars the reports released (issue 17): the check above covers them like any
  released string, and their count shows it was not run on a release without any;
- every decoded output (issue 41): the names and descriptions decoded from the DP centres
  (`--centre_decoder`, name_evidence dp_centre_decoded) and the token-level DP descriptions
  (`--token_decoding_steps`, each topic's token_decoded), each checked on its own for the canaries and
  the gate's PII patterns, with how many were released (0 released: the check did not run).

    python -m eval.audit.canaries --pipeline urania|simple_clio --data eval/results/canary_sample [--k_min 5 --redact]
    python -m eval.audit.canaries --pipeline urania --gate --output OUT -- --exemplars_per_topic 3
    python -m eval.audit.canaries --pipeline urania --gate --output OUT -- --centre_decoder --token_decoding_steps 12

With --data pointing at a folder that does not exist yet, the canary sample is generated there first.
For `urania`, arguments this script does not know (or everything after `--`) are the job's own flags
(beam_jobs/insights.py), passed through unchanged; `simple_clio` takes none.
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import subprocess
import sys

from core.run_context import PENDING_FOLDER, PRIVATE_FOLDER, REJECTED_FOLDER
from eval.config_flags import JOB_DEFAULT, add_config_flags
from publishing.release_gate import scan

# The release gate keeps pending and rejected releases under the run's private folder (core/run_context.py);
# the benchmark runs the job without --private_output, so that is RUN/private/.
RELEASE_FOLDERS = ("release", f"{PRIVATE_FOLDER}/{PENDING_FOLDER}", f"{PRIVATE_FOLDER}/{REJECTED_FOLDER}")


def released_files(run_dir: str) -> dict[str, bytes]:
    """Every file, of any type, at any depth under the run's release folders."""
    files = {}
    for folder in RELEASE_FOLDERS:
        for path in sorted(glob.glob(os.path.join(run_dir, folder, "**", "*"), recursive=True)):
            if os.path.isfile(path):
                with open(path, "rb") as handle:
                    files[path] = handle.read()
    return files


def _released_topics(files: dict[str, bytes]):
    """Every topic dict of the released reports (reports in any release folder)."""
    for path, content in files.items():
        if not path.endswith(".json"):
            continue
        try:
            document = json.loads(content)
        except ValueError:
            continue
        yield from document.get("topics", []) if isinstance(document, dict) else []


def _topic_texts(files: dict[str, bytes]) -> dict[int, str]:
    """cluster id -> every string a released report says about it."""
    texts: dict[int, list[str]] = collections.defaultdict(list)
    for topic in _released_topics(files):
        texts[int(topic["id"])].append(json.dumps(topic, ensure_ascii=False))
    return {cluster: "\n".join(parts).lower() for cluster, parts in texts.items()}


def released_exemplars(files: dict[str, bytes]) -> int:
    """Distinct (topic id, exemplar text) pairs in the released reports (a report may sit in several
    release folders)."""
    return len({(topic.get("id"), exemplar["text"]) for topic in _released_topics(files)
                for exemplar in topic.get("exemplars", [])})


# The decoded outputs a released topic may carry: its name and description decoded from the DP centre,
# and its token-level DP description (_decoded_text reads each).
DECODED_KINDS = ("centre_decoded", "token_decoded")


def _decoded_text(kind: str, topic: dict) -> str | None:
    if kind == "centre_decoded":
        if topic.get("name_evidence") != "dp_centre_decoded":
            return None
        return f"{topic.get('name', '')}\n{topic.get('description', '')}"
    description = (topic.get("token_decoded") or {}).get("description")
    return description if isinstance(description, str) else None


def released_decoded(files: dict[str, bytes]) -> dict[str, set[tuple[int, str]]]:
    """{kind: distinct (topic id, decoded text)} of the released reports, for each DECODED_KINDS."""
    decoded: dict[str, set[tuple[int, str]]] = {kind: set() for kind in DECODED_KINDS}
    for topic in _released_topics(files):
        for kind in DECODED_KINDS:
            text = _decoded_text(kind, topic)
            if text is not None:
                decoded[kind].add((topic.get("id"), text))
    return decoded


def decoded_leaks(files: dict[str, bytes], canaries: list[dict]) -> dict[str, dict]:
    """Per decoded kind: how many outputs were released, how many hold a canary (case-insensitive), and
    the gate's PII pattern hits in them."""
    planted = [c["canary"].lower() for c in canaries]
    table = {}
    for kind, outputs in released_decoded(files).items():
        with_canary = sum(any(c in text.lower() for c in planted) for _, text in outputs)
        pii = collections.Counter(f.kind for _, text in outputs for f in scan(f"{kind}.txt", text.encode("utf-8")))
        table[kind] = {"released": len(outputs), "with_canary": with_canary, "pii_regex_hits": dict(sorted(pii.items()))}
    return table


def leak_table(files: dict[str, bytes], canaries: list[dict], assignments: dict[str, int]) -> dict:
    """Per-canary and cluster-level leak rates of `files` (path -> bytes) for planted `canaries`."""
    corpus = "\n".join(content.decode("utf-8", errors="replace") for content in files.values()).lower()
    # json.dumps escapes nothing in our canaries but keep a decoded view too, for any JSON escaping.
    decoded = []
    for path, content in files.items():
        if path.endswith(".json"):
            try:
                decoded.append(json.dumps(json.loads(content), ensure_ascii=False).lower())
            except ValueError:
                pass
    corpus += "\n".join(decoded)
    leaked = [c for c in canaries if c["canary"].lower() in corpus]
    by_kind = collections.Counter(c["kind"] for c in canaries)
    leaked_by_kind = collections.Counter(c["kind"] for c in leaked)
    topic_texts = _topic_texts(files)
    bearing: dict[int, list[dict]] = collections.defaultdict(list)
    for canary in canaries:
        cluster = assignments.get(canary["conversation_id"])
        if cluster is not None:
            bearing[cluster].append(canary)
    leaking_clusters = [cluster for cluster, planted in bearing.items()
                        if cluster in topic_texts and any(c["canary"].lower() in topic_texts[cluster] for c in planted)]
    released_bearing = [cluster for cluster in bearing if cluster in topic_texts]
    pii = collections.Counter(f.kind for path, content in files.items() for f in scan(path, content))
    return {
        "canaries": len(canaries),
        "canaries_leaked": len(leaked),
        "canary_leak_rate": len(leaked) / len(canaries) if canaries else 0.0,
        "by_kind": {kind: {"planted": by_kind[kind], "leaked": leaked_by_kind[kind]} for kind in sorted(by_kind)},
        "canary_bearing_clusters": len(bearing),
        "canary_bearing_clusters_released": len(released_bearing),
        "clusters_leaking": len(leaking_clusters),
        "cluster_leak_rate": len(leaking_clusters) / len(bearing) if bearing else 0.0,
        "pii_regex_hits": dict(sorted(pii.items())),
        "exemplars_released": released_exemplars(files),
        "decoded": decoded_leaks(files, canaries),
        "released_files": sorted(files),
    }


def gate_verdict(files: dict[str, bytes], canary_strings: list[str]) -> dict:
    """What the job's release gate (publishing.release_gate.scan) says about these files."""
    findings = [f for path, content in files.items() for f in scan(path, content, tuple(canary_strings))]
    return {"status": "rejected" if findings else "passed", "findings": len(findings),
            "kinds": dict(collections.Counter(f.kind for f in findings))}


def read_assignments(run_dir: str) -> dict[str, int]:
    assignments = {}
    for path in glob.glob(os.path.join(run_dir, "private", "assignments*", "*.jsonl")) + glob.glob(
            os.path.join(run_dir, "private", "assignments*.jsonl")):
        with open(path) as handle:
            for line in handle:
                if line.strip():
                    row = json.loads(line)
                    assignments[row["conversation_id"]] = int(row["cluster_id"])
    return assignments


def run_pipeline(pipeline: str, data_dir: str, output: str, num_clusters: int, seed: int, k_min: int | None,
                 redact: bool, gate: bool, extra_args: list[str]) -> tuple[str, int | None]:
    """Runs a pipeline on data_dir/conversations.jsonl; returns (its run folder, exit code)."""
    conversations = os.path.join(data_dir, "conversations.jsonl")
    if pipeline == "urania":
        command = [sys.executable, "-m", "beam_jobs.insights", "--input", conversations, "--output", output,
                   "--num_clusters", str(num_clusters), "--seed", str(seed), *extra_args]
        if gate:
            command += ["--canary_file", os.path.join(data_dir, "canaries.txt")]
        completed = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if completed.returncode not in (0, 5):
            sys.stderr.write(completed.stderr[-3000:])
        return output, completed.returncode
    from eval.data import embed_cached, load_dataset
    from eval.utility import simple_clio
    dataset = load_dataset(conversations)
    report = simple_clio.run_simple_clio(dataset.conversation_ids, dataset.user_ids, dataset.facets,
                                         embed_cached(dataset.facets), simple_clio.SimpleClioParams(
                                             num_clusters=num_clusters, seed=seed, k_min=k_min, redact=redact))
    return simple_clio.write_report(report, output), None


def format_table(pipeline: str, table: dict, verdict: dict, exit_code: int | None) -> str:
    rows = [("pipeline", pipeline),
            ("canaries planted", table["canaries"]),
            ("canaries leaked", f"{table['canaries_leaked']} ({table['canary_leak_rate']:.1%})"),
            *((f"  {kind}", f"{v['leaked']}/{v['planted']}") for kind, v in table["by_kind"].items()),
            ("canary-bearing clusters (released)",
             f"{table['canary_bearing_clusters']} ({table['canary_bearing_clusters_released']})"),
            ("clusters leaking a canary", f"{table['clusters_leaking']} ({table['cluster_leak_rate']:.1%})"),
            ("PII regex hits", ", ".join(f"{k}: {v}" for k, v in table["pii_regex_hits"].items()) or "0"),
            ("synthetic exemplars released", table["exemplars_released"]),
            *((f"{kind.replace('_', '-')} outputs released (with a canary; PII hits)",
               f"{v['released']} ({v['with_canary']}; "
               f"{', '.join(f'{k}: {n}' for k, n in v['pii_regex_hits'].items()) or 0})")
              for kind, v in table["decoded"].items()),
            ("release gate on these files", f"{verdict['status']} ({verdict['findings']} findings)")]
    if exit_code is not None:
        rows.append(("job exit code", exit_code))
    width = max(len(str(name)) for name, _ in rows)
    return "\n".join(f"{str(name):<{width}}  {value}" for name, value in rows)


def main(argv: list[str] | None = None) -> int:
    # No abbreviations: an unknown flag is the job's, even when it starts like one of ours.
    parser = argparse.ArgumentParser(
        description="Canary leakage benchmark (CanaryBench protocol).", allow_abbrev=False,
        epilog="With --pipeline urania, other arguments (or everything after --) are the job's flags, passed "
               "through unchanged, e.g. -- --exemplars_per_topic 3.")
    parser.add_argument("--pipeline", choices=("urania", "simple_clio"), required=True)
    parser.add_argument("--data", default=os.path.join("eval", "results", "canary_sample"),
                        help="folder from eval.audit.canary_generator (generated here if missing)")
    parser.add_argument("--output", default=None, help="run folder (default: DATA/run-PIPELINE)")
    parser.add_argument("--conversations", type=int, default=3000, help="when generating")
    parser.add_argument("--users", type=int, default=1100, help="when generating")
    parser.add_argument("--fraction", type=float, default=0.6, help="when generating")
    add_config_flags(parser, overridable=False, num_clusters=JOB_DEFAULT)  # passed to the job as --num_clusters
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--k_min", type=int, default=None, help="simple_clio defence: min distinct users per cluster")
    parser.add_argument("--redact", action="store_true", help="simple_clio defence: PII regex redaction")
    parser.add_argument("--gate", action="store_true",
                        help="urania: pass the canaries to the job's release gate (--canary_file)")
    parser.add_argument("--json", default=None, help="also write the table as JSON here")
    args, extra = parser.parse_known_args(argv)
    if "--" in extra:
        extra.remove("--")  # the separator before the job's flags, not one of them
    if extra and args.pipeline != "urania":
        parser.error(f"job flags {' '.join(extra)} are for --pipeline urania only")
    if not os.path.exists(os.path.join(args.data, "canaries.jsonl")):
        from eval.audit.canary_generator import write_canary_sample
        write_canary_sample(args.data, args.conversations, args.users, args.seed, args.fraction)
    with open(os.path.join(args.data, "canaries.jsonl")) as handle:
        canaries = [json.loads(line) for line in handle if line.strip()]
    suffix = "" if args.pipeline == "urania" else ("-defended" if args.k_min or args.redact else "")
    output = args.output or os.path.join(args.data, f"run-{args.pipeline}{suffix}")
    run_dir, exit_code = run_pipeline(args.pipeline, args.data, output, args.num_clusters, args.seed, args.k_min,
                                      args.redact, args.gate, extra)
    files = released_files(run_dir)
    if not files:
        print(f"error: the pipeline wrote nothing under {run_dir}/release*", file=sys.stderr)
        return 1
    table = leak_table(files, canaries, read_assignments(run_dir))
    verdict = gate_verdict(files, [c["canary"] for c in canaries])
    label = args.pipeline + (" + k_min/redaction" if suffix else "") + "".join(f" {arg}" for arg in extra)
    print(format_table(label, table, verdict, exit_code))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"pipeline": args.pipeline, "job_flags": extra, "table": table, "gate": verdict,
                       "exit_code": exit_code}, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
