"""Optional cross-encoder reranking of recalled memories.

No cross-encoder ships inside any package we can install offline, so the reranker is a
production option: point ``reranker_model`` at a local sentence-transformers CrossEncoder
folder. Without one, retrieval keeps its fused hybrid ranking (``load_reranker`` returns None).
Scores are squashed to [0, 1] so they can stand in for the relevance term of the final score.
"""
from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np

from memory_core.errors import ModelLoadError

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder

__all__ = ["Reranker", "CrossEncoderReranker", "load_reranker"]


class Reranker(ABC):
    """Scores (query, text) pairs; higher means more relevant, always within [0, 1]."""

    name: str

    @abstractmethod
    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """One score in [0, 1] per text, in the order given."""


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # Split by sign so large |x| neither overflows exp nor loses precision.
    out = np.empty_like(x, dtype=np.float64)
    pos = x >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-x[pos]))
    ex = np.exp(x[~pos])
    out[~pos] = ex / (1.0 + ex)
    return out


def _softmax_last(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=1, keepdims=True)
    probs = np.exp(shifted)
    probs /= probs.sum(axis=1, keepdims=True)
    return probs[:, -1]  # by convention the last label is "relevant"


class CrossEncoderReranker(Reranker):
    """A sentence-transformers CrossEncoder loaded from a local folder (never from a hub)."""

    def __init__(self, path: str, *, batch_size: int = 16, max_length: int | None = 512) -> None:
        folder = Path(path).expanduser()
        if not folder.is_dir():
            raise ModelLoadError(
                f"reranker model folder {str(folder)!r} does not exist (only local CrossEncoder folders are "
                "supported; no model hub is reachable)"
            )
        from memory_core.embedding.sentence_transformer import limit_torch_threads, set_offline_env

        set_offline_env()
        try:
            from sentence_transformers import CrossEncoder

            limit_torch_threads()
            model: "CrossEncoder" = CrossEncoder(
                str(folder.resolve()), device="cpu", local_files_only=True, trust_remote_code=False
            )
        except Exception as exc:
            raise ModelLoadError(f"could not load the cross-encoder at {str(folder)!r} offline: {exc}") from exc
        model.eval()
        if max_length is not None and (model.max_seq_length or max_length) > max_length:
            model.max_seq_length = max_length
        self._model = model
        self._lock = threading.Lock()  # torch modules and fast tokenizers are not thread-safe
        self.batch_size = batch_size
        self.name = folder.name
        self.path = str(folder.resolve())

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        items = [texts] if isinstance(texts, str) else list(texts)
        if not items:
            return []
        with self._lock:
            # Raw outputs (no activation) so squashing is ours and the same for every model.
            raw = self._model.predict(
                [(query, text) for text in items],
                batch_size=self.batch_size,
                activation_fn=_Identity(),
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        logits = np.asarray(raw, dtype=np.float64)
        if logits.ndim == 2 and logits.shape[1] > 1:
            scores = _softmax_last(logits)
        else:
            scores = _sigmoid(logits.reshape(-1))
        return [float(s) for s in scores]

    def __repr__(self) -> str:
        return f"CrossEncoderReranker(path={self.path!r})"


class _Identity:
    """Activation that returns its input (torch.nn.Identity without importing torch here)."""

    def __call__(self, x):  # type: ignore[no-untyped-def]
        return x


_CACHE: dict[str, Reranker] = {}
_CACHE_LOCK = threading.Lock()


def load_reranker(path: str | None) -> Reranker | None:
    """The configured reranker, or None when no model path is set.

    Memoised per resolved path: the app, the scheduler and tests share one loaded model.
    """
    if path is None or not str(path).strip():
        return None
    key = str(Path(str(path).strip()).expanduser().resolve())
    with _CACHE_LOCK:
        reranker = _CACHE.get(key)
        if reranker is None:
            reranker = CrossEncoderReranker(key)
            _CACHE[key] = reranker
    return reranker
