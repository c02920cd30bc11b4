"""Wraps a remote provider so that any failure (down, timeout, malformed answer) falls back
to the offline provider for that call, is logged, and leaves nothing half-done."""
from __future__ import annotations

import logging
import threading
from datetime import datetime
from typing import Callable, Iterator, Sequence, TypeVar

from memory_core.llm.base import ChatMessage, LLMProvider, MemoryBrief, MergeProposal
from memory_core.types import Analysis

log = logging.getLogger(__name__)
T = TypeVar("T")


class FallbackLLM(LLMProvider):
    def __init__(self, primary: LLMProvider, offline: LLMProvider) -> None:
        self.primary = primary
        self.fallback = offline
        self.name = primary.name
        self.offline = False
        self.failures = 0
        self.last_error: str | None = None
        self._lock = threading.Lock()

    def _note_failure(self, job: str, exc: Exception) -> None:
        with self._lock:
            self.failures += 1
            self.last_error = f"{job}: {type(exc).__name__}: {str(exc)[:200]}"
        log.warning("LLM %s failed on %s, using the offline provider: %s", self.primary.name, job, self.last_error)

    def _call(self, job: str, primary: Callable[[], T], offline: Callable[[], T]) -> T:
        try:
            return primary()
        except Exception as exc:  # any provider failure: the offline provider answers instead
            self._note_failure(job, exc)
            return offline()

    def analyze(self, text: str, now: datetime, context: str | None = None) -> Analysis:
        return self._call("analyze", lambda: self.primary.analyze(text, now, context),
                          lambda: self.fallback.analyze(text, now, context))

    def rewrite_query(self, query: str, now: datetime) -> str:
        return self._call("rewrite_query", lambda: self.primary.rewrite_query(query, now),
                          lambda: self.fallback.rewrite_query(query, now))

    def reply(self, messages: Sequence[ChatMessage], memory_context: str, now: datetime,
              constraints: str = "") -> Iterator[str]:
        produced = False
        try:
            for chunk in self.primary.reply(messages, memory_context, now, constraints):
                produced = True
                yield chunk
        except Exception as exc:
            self._note_failure("reply", exc)
            if produced:
                yield "\n\n(The language model stopped answering; the reply above may be incomplete.)"
                return
            yield from self.fallback.reply(messages, memory_context, now, constraints)

    def propose_merges(self, memories: Sequence[MemoryBrief]) -> list[MergeProposal]:
        return self._call("propose_merges", lambda: self.primary.propose_merges(memories),
                          lambda: self.fallback.propose_merges(memories))

    def supersedes(self, newer: MemoryBrief, older: MemoryBrief) -> bool:
        return self._call("supersedes", lambda: self.primary.supersedes(newer, older),
                          lambda: self.fallback.supersedes(newer, older))

    def may_contradict(self, text: str, context: str | None = None) -> bool:
        # Either side may answer a pair (the primary, or the fallback when it fails).
        return self.primary.may_contradict(text, context) or self.fallback.may_contradict(text, context)
