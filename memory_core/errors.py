"""Errors the public API raises. Each carries a message fit to show a user."""
from __future__ import annotations


class MemoryEngineError(Exception):
    """Base class for errors raised by the memory engine."""


class ValidationError(MemoryEngineError, ValueError):
    """Input was rejected before anything was stored (empty text, bad id, bad filter)."""


class NotFoundError(MemoryEngineError, KeyError):
    """The memory does not exist (or does not belong to the caller)."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else "not found"


class ModelLoadError(MemoryEngineError, RuntimeError):
    """A configured model could not be loaded offline."""


class BackendUnavailable(MemoryEngineError, RuntimeError):
    """A backing service (Milvus, Redis, the LLM endpoint) is down or timed out."""


class RateLimited(ValidationError):
    """A user wrote more than the per-user write limit allows; nothing was stored. A
    ``ValidationError``, so every caller that shows bad input plainly shows this too."""

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s
