"""The LLM port: every job the design gives the LLM, each with an offline stand-in.

Providers return plain validated values; a provider that cannot answer raises, and the
fallback wrapper (``llm/fallback.py``) hands the call to the offline provider.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import datetime
from typing import Iterator, Sequence

from memory_core.types import Analysis


@dataclass(frozen=True)
class ChatMessage:
    role: str  # "system" | "user" | "assistant"
    content: str


@dataclass(frozen=True)
class MergeProposal:
    """A group of redundant memories and the single text that should replace them."""

    memory_ids: list[str]
    merged_text: str
    reason: str = ""


@dataclass(frozen=True)
class MemoryBrief:
    """What an LLM is shown of a stored memory."""

    memory_id: str
    content: str
    created_at: datetime
    entities: list[str] = field(default_factory=list)
    context: str | None = None  # the turn it answered ("Where do you live?" for "Porto")


class LLMProvider(ABC):
    name: str
    offline: bool

    @abstractmethod
    def analyze(self, text: str, now: datetime, context: str | None = None) -> Analysis:
        """Importance 1-5, memory type, entities and a one-line summary of ``text``. ``context`` is
        the turn ``text`` answered, if known: "Yes, peanuts" after "Any food allergies?" is an
        allergy, and must be kept like one."""

    @abstractmethod
    def rewrite_query(self, query: str, now: datetime) -> str:
        """A standalone search query: relative dates made absolute, filler removed."""

    @abstractmethod
    def reply(self, messages: Sequence[ChatMessage], memory_context: str, now: datetime,
              constraints: str = "") -> Iterator[str]:
        """Stream a chat reply (chunks of text) that uses ``memory_context`` (dated memory lines)
        and respects ``constraints`` (dated lines: allergies, diets, dislikes, "never ...")."""

    @abstractmethod
    def propose_merges(self, memories: Sequence[MemoryBrief]) -> list[MergeProposal]:
        """Groups of redundant memories among ``memories`` with merged texts (ids only from the input)."""

    @abstractmethod
    def supersedes(self, newer: MemoryBrief, older: MemoryBrief) -> bool:
        """True when ``newer`` contradicts and replaces ``older`` (same slot, new value)."""

    def may_contradict(self, text: str, context: str | None = None) -> bool:
        """False only when ``supersedes`` would answer False for every pair ``text`` (said in reply
        to ``context``) is part of, either side: the conflict check then skips that memory without
        loading a candidate.
        A model decides pairs it sees, so the default is True; rule-based providers know better."""
        return True
