"""What the panel under a chat reply shows, and how it is kept with the reply so a reopened
session can show it again.

The reply's message row keeps, in ``messages.meta``, the ids of the memories the reply used
with their scores at the time (and a short hash of each memory's text), never the text itself: a
memory the user later deleted ("forget that", Undo, an erasure) must not live on in the message
log. When the session is reopened, the texts are read again by id, under the user's own id (an id
of someone else's memory reads as missing), and each memory says how it stands now: unchanged,
edited, expired, replaced, archived or deleted since the reply.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Mapping

from memory_core.lifecycle import fades
from memory_core.text.pii import masked

if TYPE_CHECKING:
    from memory_core import MemoryRecord, SearchResponse

PANEL_KEY = "panel"  # the key of the panel in a message's meta
PANEL_VERSION = 1

# A memory's state now, as the reopened panel says it ("" = as it was when the reply used it).
EDITED = "edited since (current text shown)"
EXPIRED = "expired since"
FADED = "faded since (found again when relevant)"
REPLACED = "replaced since by a newer memory"
ARCHIVED = "archived since"
DELETED = "deleted since"


@dataclass(frozen=True)
class UsedMemory:
    """A retrieved memory as the expander under a reply shows it."""

    memory_id: str
    content: str
    created_at: datetime | None  # None only for a memory deleted since (nothing left to date)
    score: float
    relevance: float  # relative to this query's best hit (1.0 = best)
    importance: int  # 1-5, the scale Admin shows
    recency: float
    absolute: float = 0.0  # calibrated relevance, comparable across queries
    # How the memory stands now, for a reopened session ("" = unchanged since the reply).
    now: str = ""
    # ``text_hash`` of the text as stored, when ``content`` is shown revealed (the user's own
    # phone numbers put back, ``engine.reveal``): an edit since is told from the stored text.
    stored_hash: str = ""

    @classmethod
    def of(cls, result: Any, stored: Any | None = None) -> "UsedMemory":
        """``stored``: the same result before ``engine.reveal``, when ``result`` is revealed."""
        return cls(result.memory_id, result.content, result.created_at, result.score, result.parts.relevance,
                   int(result.importance), result.parts.recency, float(result.parts.absolute or 0.0),
                   stored_hash=text_hash((stored or result).content))


@dataclass(frozen=True)
class TurnInfo:
    """What the page shows under a reply: the memories used and how long retrieval took."""

    used: list[UsedMemory]
    context_block: str
    retrieval_ms: float
    cache_hit: bool
    degraded: bool
    notices: list[str]
    reranker: str | None
    llm_name: str
    llm_offline: bool
    # The user's constraints that bear on the message (allergies, diets, "never ..."), passed to
    # the reply as constraints whatever their rank.
    constraints: list[UsedMemory] = field(default_factory=list)
    constraint_block: str = ""
    min_relevance: float = 0.0
    # Read back from the message log (a reopened session): scores as at the reply, memories as now.
    reopened: bool = False

    @classmethod
    def from_search(cls, response: "SearchResponse", llm_name: str, llm_offline: bool,
                    stored: "SearchResponse | None" = None) -> "TurnInfo":
        """``response`` as shown (revealed, ``engine.reveal``); ``stored``: the same response before
        it was revealed, whose texts the panel's hashes are of (default: ``response`` itself)."""
        stored = stored or response
        return cls(used=[UsedMemory.of(r, s) for r, s in zip(response.results, stored.results)],
                   context_block=response.context_block,
                   retrieval_ms=float(response.timings_ms.get("total", 0.0)), cache_hit=response.cache_hit,
                   degraded=response.degraded, notices=list(response.notices), reranker=response.reranker,
                   llm_name=llm_name, llm_offline=llm_offline,
                   constraints=[UsedMemory.of(r, s) for r, s in zip(response.constraints, stored.constraints)],
                   constraint_block=response.constraint_block, min_relevance=response.min_relevance)


def text_hash(content: str) -> str:
    """A short fingerprint of a memory's text: enough to tell that it was edited since."""
    return hashlib.sha256(content.encode("utf-8")).hexdigest()[:16]


def _entry(memory: UsedMemory) -> dict[str, Any]:
    return {"id": memory.memory_id, "hash": memory.stored_hash or text_hash(memory.content),
            "score": round(memory.score, 6),
            "relevance": round(memory.relevance, 6), "importance": memory.importance,
            "recency": round(memory.recency, 6), "absolute": round(memory.absolute, 6)}


def panel_meta(info: TurnInfo) -> dict[str, Any]:
    """The panel as kept in the reply's ``messages.meta``: ids, hashes and numbers, no memory text
    and no context block (both hold the user's words; the texts are read again when reopened)."""
    return {PANEL_KEY: {
        "v": PANEL_VERSION,
        "used": [_entry(u) for u in info.used],
        "constraints": [_entry(c) for c in info.constraints],
        "retrieval_ms": round(info.retrieval_ms, 3), "cache_hit": info.cache_hit, "degraded": info.degraded,
        "notices": list(info.notices), "reranker": info.reranker, "llm_name": info.llm_name,
        "llm_offline": info.llm_offline, "min_relevance": round(info.min_relevance, 6),
    }}


def panel_ids(meta: Mapping[str, Any] | None) -> list[str]:
    """Every memory id a kept panel names (used and constraints), for one look-up per session."""
    panel = _panel(meta)
    if panel is None:
        return []
    return [str(e["id"]) for key in ("used", "constraints") for e in panel.get(key) or []
            if isinstance(e, dict) and isinstance(e.get("id"), str)]


def _panel(meta: Mapping[str, Any] | None) -> dict[str, Any] | None:
    panel = (meta or {}).get(PANEL_KEY)
    return panel if isinstance(panel, dict) and panel.get("v") == PANEL_VERSION else None


def state_now(entry: Mapping[str, Any], record: "MemoryRecord | None", now: datetime,
              fade_from: int = 0) -> str:
    """How a memory the reply used stands now, in words ("" = unchanged). ``record`` is None when
    it is gone (deleted, erased) or is not the user's: both read as deleted, so nothing about
    another user's memory shows. Past its date, a memory of importance >= ``fade_from`` (> 0)
    has faded, not expired."""
    if record is None:
        return DELETED
    status = getattr(record.status, "value", record.status)
    if status == "deleted":
        return DELETED
    if status == "active" and record.expires_at is not None and record.expires_at <= now:
        return FADED if fades(record.importance, fade_from) else EXPIRED
    if status == "expired":
        return EXPIRED
    if status == "superseded":
        return REPLACED
    if status == "archived":
        return ARCHIVED
    if entry.get("hash") != text_hash(record.content):
        return EDITED
    return ""


def _reopened_memory(entry: Mapping[str, Any], record: "MemoryRecord | None", now: datetime,
                     fade_from: int) -> UsedMemory:
    state = state_now(entry, record, now, fade_from)
    shown = record is not None and state != DELETED

    def number(key: str) -> float:
        value = entry.get(key)
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0

    return UsedMemory(memory_id=str(entry.get("id", "")), content=masked(record.content) if shown and record else "",
                      created_at=record.created_at if shown and record else None, score=number("score"),
                      relevance=number("relevance"), importance=int(number("importance")),
                      recency=number("recency"), absolute=number("absolute"), now=state)


def info_from_meta(meta: Mapping[str, Any] | None, records: Mapping[str, "MemoryRecord"],
                   now: datetime, fade_from: int = 0) -> TurnInfo | None:
    """The panel of a reopened reply, or None when its message kept none (older messages, a
    forget reply). ``records`` must be the user's own memories (``get_many(ids, user_id=...)``):
    a memory missing from it shows as deleted, without text. ``fade_from``: see ``state_now``."""
    panel = _panel(meta)
    if panel is None:
        return None

    def memories(key: str) -> list[UsedMemory]:
        entries = [e for e in panel.get(key) or [] if isinstance(e, dict) and isinstance(e.get("id"), str)]
        return [_reopened_memory(e, records.get(e["id"]), now, fade_from) for e in entries]

    notices = panel.get("notices") or []
    return TurnInfo(used=memories("used"), context_block="", retrieval_ms=float(panel.get("retrieval_ms") or 0.0),
                    cache_hit=bool(panel.get("cache_hit")), degraded=bool(panel.get("degraded")),
                    notices=[str(n) for n in notices if isinstance(n, str)],
                    reranker=panel.get("reranker") if isinstance(panel.get("reranker"), str) else None,
                    llm_name=str(panel.get("llm_name") or ""), llm_offline=bool(panel.get("llm_offline")),
                    constraints=memories("constraints"), min_relevance=float(panel.get("min_relevance") or 0.0),
                    reopened=True)
