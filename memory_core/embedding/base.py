"""The embedding port. Vectors are L2-normalised float32, so cosine == dot product."""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Sequence

import numpy as np


class Embedder(ABC):
    """Turns text into vectors. Queries and passages may be embedded differently (e5 prompts)."""

    name: str
    dim: int
    max_tokens: int  # the model's input limit; the chunker stays under it

    @abstractmethod
    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts to be stored; shape (len(texts), dim), float32, unit length. Batched."""

    @abstractmethod
    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed search queries; shape (len(texts), dim), float32, unit length."""

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_queries([text])[0]

    @abstractmethod
    def count_tokens(self, text: str) -> int:
        """Number of model tokens in ``text`` (without special tokens)."""
