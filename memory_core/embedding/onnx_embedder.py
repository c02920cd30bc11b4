"""The Embedder port on ONNX Runtime: the default backend for local model folders.

Same model, same vectors as the sentence-transformers adapter (the folder's prompts, truncation
and pooling are read from its sentence-transformers configs), but faster on a small CPU and
without a global lock: ``InferenceSession.run`` and the Rust tokenizer are safe to call from
several threads, so a chat search never waits behind a bulk import's whole batch.

Batches are cut from texts sorted by token length, so padding (wasted compute) stays small.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np

from memory_core.embedding.base import Embedder
from memory_core.errors import ModelLoadError

if TYPE_CHECKING:
    import onnxruntime
    from tokenizers import Tokenizer

SUPPORTED_POOLING = ("mean", "cls")


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text("utf-8")) if path.is_file() else {}
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"unreadable model config {path}: {exc}") from exc


def folder_pooling(folder: Path) -> str | None:
    """The folder's pooling mode if the ONNX backend can reproduce it, else ``None``."""
    modules = _read_json(folder / "modules.json")
    pooling_path = next((m.get("path", "") for m in modules if str(m.get("type", "")).endswith(".Pooling")), None)
    if pooling_path is None:
        return None
    config = _read_json(folder / pooling_path / "config.json")
    if not config.get("include_prompt", True):
        return None
    active = [key for key, on in config.items() if key.startswith("pooling_mode_") and on]
    mode = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls"}.get(active[0]) if len(active) == 1 else None
    return mode if mode in SUPPORTED_POOLING else None


class OnnxEmbedder(Embedder):
    """Runs a sentence-transformers folder's encoder exported to ONNX (see ``onnx_export``)."""

    def __init__(
        self,
        session: "onnxruntime.InferenceSession",
        tokenizer: "Tokenizer",
        *,
        name: str,
        max_seq_length: int,
        pooling: str,
        query_prompt: str | None,
        passage_prompt: str | None,
        batch_size: int = 16,
    ) -> None:
        if batch_size <= 0:
            raise ValueError("batch_size must be positive")
        if pooling not in SUPPORTED_POOLING:
            raise ModelLoadError(f"pooling {pooling!r} is not supported by the ONNX backend")
        self._session = session
        self.name = name
        self.batch_size = batch_size
        self.pooling = pooling
        self.query_prompt = query_prompt
        self.passage_prompt = passage_prompt
        output = session.get_outputs()[0].shape
        self.dim = int(output[-1]) if isinstance(output[-1], int) else 0
        # Two private copies: one truncating for encoding, one not for counting. Neither is
        # mutated after this, which is what makes concurrent use safe.
        self._encoder = tokenizer
        self._encoder.no_padding()
        self._encoder.enable_truncation(max_length=max_seq_length)
        from tokenizers import Tokenizer

        self._counter = Tokenizer.from_str(tokenizer.to_str())
        self._counter.no_truncation()
        self._counter.no_padding()
        pad = tokenizer.token_to_id("<pad>")  # masked out either way; the model's own id is tidiest
        self._pad_id = int(pad) if pad is not None else 0
        special = self._counter.post_processor.num_special_tokens_to_add(False) if self._counter.post_processor else 2
        overhead = special + max((self.count_tokens(p) for p in (query_prompt, passage_prompt) if p), default=0)
        self.max_tokens = max(1, max_seq_length - overhead)
        if not self.dim:
            self.dim = self._probe_dim()

    @classmethod
    def load(cls, folder: Path, *, name: str | None = None, batch_size: int = 16,
             threads: int | None = None, precision: str = "fp32", spin: bool = False) -> "OnnxEmbedder":
        """Load ``folder`` (a sentence-transformers folder), exporting its ONNX graph if needed.

        A non-fp32 precision is part of the name (``model@int8``): its vectors differ slightly,
        so content hashes and caches keyed by the name must not mix the two.

        ``spin`` lets ONNX Runtime's worker threads busy-wait between operators. Off by default:
        on two cores the spinning threads took a core from everything else (`bench.latency` at
        10k: load 1.79 -> 0.62, cache-hit p95 2.62 -> 0.38 ms, cache-miss p95 37.0 -> 28.1 ms),
        at the price of about 1 ms on a single query's embedding p50."""
        from memory_core.embedding.onnx_export import export_onnx

        folder = Path(folder)
        pooling = folder_pooling(folder)
        if pooling is None:
            raise ModelLoadError(f"{folder}: its pooling is not one the ONNX backend reproduces ({SUPPORTED_POOLING})")
        if not (folder / "tokenizer.json").is_file():
            raise ModelLoadError(f"{folder}: no tokenizer.json (a fast tokenizer is needed for the ONNX backend)")
        onnx_path = export_onnx(folder, precision)
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer

            options = ort.SessionOptions()
            options.intra_op_num_threads = threads or max(1, min(2, os.cpu_count() or 1))
            options.inter_op_num_threads = 1
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
            session = ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
            tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        except Exception as exc:
            raise ModelLoadError(f"could not start ONNX Runtime on {onnx_path}: {exc}") from exc
        st_config = _read_json(folder / "config_sentence_transformers.json")
        prompts = {k: v for k, v in (st_config.get("prompts") or {}).items() if v}
        max_seq = int(_read_json(folder / "sentence_bert_config.json").get("max_seq_length") or 512)
        label = name or str(folder)
        return cls(session, tokenizer, name=label if precision == "fp32" else f"{label}@{precision}", max_seq_length=max_seq, pooling=pooling,
                   query_prompt=prompts.get("query"),
                   passage_prompt=prompts.get("passage") or prompts.get("document"), batch_size=batch_size)

    def with_batch_size(self, batch_size: int) -> "OnnxEmbedder":
        """The same session and tokenizers with another batch size."""
        if batch_size == self.batch_size:
            return self
        if batch_size <= 0:
            raise ValueError("batch_size must be positive")
        import copy

        clone = copy.copy(self)
        clone.batch_size = batch_size
        return clone

    def count_tokens(self, text: str) -> int:
        """Model tokens in ``text``, without special tokens or prompt (not truncated)."""
        return len(self._counter.encode(text, add_special_tokens=False).ids)

    def _probe_dim(self) -> int:
        return int(self._encode(["dimension probe"], None).shape[1])

    def _pool(self, hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
        if self.pooling == "cls":
            return hidden[:, 0, :]
        weights = mask[..., None].astype(np.float32)
        return (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)

    def _encode(self, texts: Sequence[str], prompt: str | None) -> np.ndarray:
        items = [texts] if isinstance(texts, str) else list(texts)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        encodings = self._encoder.encode_batch([(prompt or "") + t for t in items])
        order = sorted(range(len(items)), key=lambda i: len(encodings[i].ids))
        out: np.ndarray | None = None
        for start in range(0, len(order), self.batch_size):
            rows = order[start:start + self.batch_size]
            width = max(len(encodings[i].ids) for i in rows)
            ids = np.full((len(rows), width), self._pad_id, dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for r, i in enumerate(rows):
                seq = encodings[i].ids
                ids[r, :len(seq)] = seq
                mask[r, :len(seq)] = 1
            hidden = self._session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
            pooled = self._pool(hidden, mask)
            if out is None:
                out = np.zeros((len(items), pooled.shape[1]), dtype=np.float32)
            out[rows] = pooled
        assert out is not None
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return np.ascontiguousarray(out / np.maximum(norms, 1e-12), dtype=np.float32)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, self.passage_prompt)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, self.query_prompt)

    def __repr__(self) -> str:
        return f"OnnxEmbedder(name={self.name!r}, dim={self.dim}, max_tokens={self.max_tokens})"
