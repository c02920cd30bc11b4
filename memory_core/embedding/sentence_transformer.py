"""The Embedder port implemented with a local sentence-transformers model.

One loaded model serves the Streamlit threads, the scheduler and tests, so encoding is
serialised with a lock (torch modules and the HF fast tokenizer are not safe to drive from
several threads at once). Token counting uses a private, never-mutated copy of the tokenizer
so the chunker can count while an encode runs.
"""
from __future__ import annotations

import copy
import os
import threading
from typing import TYPE_CHECKING, Sequence

import numpy as np

from memory_core.embedding.base import Embedder
from memory_core.errors import ModelLoadError

if TYPE_CHECKING:  # heavy imports stay lazy so importing memory_core is cheap
    from sentence_transformers import SentenceTransformer
    from tokenizers import Tokenizer


def set_offline_env() -> None:
    """Make every HF library refuse the network: no hub is reachable here, and a retrying
    download would hang a request instead of failing fast."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # much faster on a busy 2-core box


def limit_torch_threads() -> None:
    """At most two intra-op threads: more only fight the app and the vector store for cores."""
    import torch

    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))


def _non_empty(prompts: dict[str, str], *names: str) -> str | None:
    for name in names:
        value = prompts.get(name)
        if value:
            return value
    return None


class SentenceTransformerEmbedder(Embedder):
    """Wraps ``sentence_transformers.SentenceTransformer`` behind the Embedder port."""

    def __init__(
        self,
        model: "SentenceTransformer",
        *,
        name: str,
        batch_size: int = 32,
    ) -> None:
        if batch_size <= 0:
            raise ValueError("batch_size must be positive")
        self._model = model
        self._lock = threading.Lock()
        self.name = name
        self.batch_size = batch_size
        get_dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        dim = get_dim()
        if not dim:
            raise ModelLoadError(f"embedding model {name!r} does not report its output dimension")
        self.dim = int(dim)
        prompts = dict(model.prompts or {})
        self.query_prompt = _non_empty(prompts, "query")
        self.passage_prompt = _non_empty(prompts, "passage", "document")
        self._counter = self._private_tokenizer(model)
        # count_tokens excludes <s>/</s> and the prompt, so subtract them from the model limit:
        # a chunk of max_tokens tokens then always fits without truncation.
        limit = int(model.max_seq_length or 512)
        overhead = self._special_count() + max(
            (self.count_tokens(p) for p in (self.query_prompt, self.passage_prompt) if p), default=0
        )
        self.max_tokens = max(1, limit - overhead)

    @classmethod
    def load(cls, path_or_name: str, *, name: str | None = None, batch_size: int = 32) -> "SentenceTransformerEmbedder":
        """Load a model folder, or a sentence-transformers name already in the local HF cache."""
        set_offline_env()
        try:
            from sentence_transformers import SentenceTransformer

            limit_torch_threads()
            model = SentenceTransformer(
                str(path_or_name), device="cpu", local_files_only=True, trust_remote_code=False
            )
        except Exception as exc:  # any loader failure means the same thing to the caller
            raise ModelLoadError(
                f"could not load embedding model {path_or_name!r} offline (tried it as a local folder "
                f"and in the local Hugging Face cache; no model hub is reachable): {exc}"
            ) from exc
        model.eval()
        return cls(model, name=name or str(path_or_name), batch_size=batch_size)

    def with_batch_size(self, batch_size: int) -> "SentenceTransformerEmbedder":
        """The same loaded model (and lock) with another batch size."""
        if batch_size == self.batch_size:
            return self
        if batch_size <= 0:
            raise ValueError("batch_size must be positive")
        clone = copy.copy(self)  # shares model, lock and counting tokenizer
        clone.batch_size = batch_size
        return clone

    @staticmethod
    def _private_tokenizer(model: "SentenceTransformer") -> "Tokenizer | None":
        """A copy of the fast tokenizer without truncation/padding, used only for counting."""
        from tokenizers import Tokenizer

        backend = getattr(model.tokenizer, "backend_tokenizer", None)
        if backend is None:
            return None
        counter = Tokenizer.from_str(backend.to_str())
        counter.no_truncation()
        counter.no_padding()
        return counter

    def _special_count(self) -> int:
        if self._counter is not None:
            return self._counter.post_processor.num_special_tokens_to_add(False) if self._counter.post_processor else 0
        return 2

    def count_tokens(self, text: str) -> int:
        """Model tokens in ``text``, without special tokens or prompt (not truncated)."""
        if self._counter is not None:
            return len(self._counter.encode(text, add_special_tokens=False).ids)
        with self._lock:  # slow tokenizers share state with encode
            return len(self._model.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _encode(self, texts: Sequence[str], prompt: str | None) -> np.ndarray:
        items = [texts] if isinstance(texts, str) else list(texts)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            vectors = self._model.encode(
                items,
                prompt=prompt,
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, 1e-12)  # cheap insurance: the port promises unit length

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, self.passage_prompt)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, self.query_prompt)

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder(name={self.name!r}, dim={self.dim}, max_tokens={self.max_tokens})"

