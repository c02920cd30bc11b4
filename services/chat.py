"""The chat turn: record the message, retrieve memories, stream the reply, then remember.

Order matters for the user: the reply is built from the retrieved, compressed memories
(``SearchResponse.context_block``) and streamed first; only after it has been shown is the
user's message handed to the write pipeline, on a background executor, so writing (analysis,
embedding, dedup, dual write) never delays the answer. The page polls the returned future on its
next rerun and shows what was remembered, with an Undo (a hard delete by the user).

When the SQL database cannot be reached, the calls the page makes raise ``DatabaseUnavailable``
(a ``BackendUnavailable`` with a message fit to show) instead of a driver error, so the page can
say so and keep what the user typed.
"""
from __future__ import annotations

import contextlib
import logging
import re
import threading
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from memory_core.text.intent import (
    asked_question,
    closes_advice,
    general_request,
    is_small_talk,
    mixes_a_question,
    statement_part,
)
from services.auth import Principal
# DATABASE_UNAVAILABLE and DatabaseUnavailable are re-exported: the chat page and its tests take them from here.
from services.outage import DATABASE_UNAVAILABLE, DatabaseUnavailable, database_guard  # noqa: F401
# UsedMemory and TurnInfo are re-exported: the chat page's panel takes them from here.
from services.turn_info import TurnInfo, UsedMemory, info_from_meta, panel_ids, panel_meta  # noqa: F401

if TYPE_CHECKING:
    from memory_core import MemoryEngine

log = logging.getLogger(__name__)

# Whole-message requests to forget what was just remembered (en and zh), not any sentence
# that happens to contain "forget".
_FORGET = re.compile(
    r"^\s*(please\s+)?(forget|delete|remove|don'?t remember)\s+(that|this|it|what i (just )?said)\s*(please)?[.!。！]*\s*$"
    r"|^\s*(请)?(忘掉|忘记|忘了|删掉|删除|别记住?|不要记住?)(这个|这条|那个|那条|刚才(说的|那句)?(话)?)(吧)?[.!。！]*\s*$",
    re.IGNORECASE,
)

_executor_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None


def _writes() -> ThreadPoolExecutor:
    """One small process-wide pool for memory writes (the embedder is CPU-bound: 2 workers)."""
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="memory-write")
        return _executor


def _database(operation: str) -> "contextlib.AbstractContextManager[None]":
    """Turn a driver's "cannot reach the server" into ``DatabaseUnavailable`` (``services.outage``)."""
    return database_guard(f"chat {operation}")


def is_forget_request(text: str) -> bool:
    """True for "forget that" / "忘掉这个" and close variants (the whole message)."""
    return bool(_FORGET.match(text or ""))


def new_session_id() -> str:
    return uuid.uuid4().hex[:16]


@dataclass
class PreparedTurn:
    """A user turn recorded and its memories retrieved; ``stream()`` yields the reply."""

    principal: Principal
    session_id: str
    user_text: str
    user_message_id: str
    info: TurnInfo
    _chunks: Iterator[str] | None = None
    answered: str | None = None  # the assistant message the user replied to (indexed with the memory)
    reply_parts: list[str] = field(default_factory=list)

    def stream(self) -> Iterator[str]:
        """The LLM's reply chunks, kept so ``finish_turn`` can record the whole reply."""
        if self._chunks is None:
            return
        for chunk in self._chunks:
            self.reply_parts.append(chunk)
            yield chunk

    @property
    def reply_text(self) -> str:
        return "".join(self.reply_parts)


@dataclass(frozen=True)
class Remembered:
    """The outcome of one background write, for the notice after the next rerun."""

    message_id: str
    memory_ids: list[str]
    created: list[str]
    deduplicated: list[str]
    contents: list[str]  # follows ``memory_ids``: created and deduplicated chunks, in message order
    redactions: list[str]
    error: str | None = None
    skipped: str | None = None  # why nothing was written (not an error)
    # The stored text of each memory in ``created``, same order: what the notice shows and Undo deletes.
    created_contents: list[str] = field(default_factory=list)
    # Older memories the new ones replaced (newer wins), so the notice can say what changed.
    replaced_contents: list[str] = field(default_factory=list)


class ChatService:
    """Chat turns for one engine. Stateless: the page keeps the session id and futures."""

    def __init__(self, engine: "MemoryEngine", top_k: int = 5, history_turns: int = 6) -> None:
        self.engine = engine
        self.top_k = top_k
        self.history_turns = history_turns

    # ---- sessions --------------------------------------------------------------------------
    def prepare(self, principal: Principal) -> None:
        """Warm the user's retrieval (their vectors) without blocking the page: a person takes
        seconds to type the first message, the load takes a fraction of a second."""
        self.engine.prepare_user(principal.user_id)

    def sessions(self, principal: Principal, limit: int = 30) -> list[dict[str, Any]]:
        """The user's past sessions, most recent first, with a short title from the first message."""
        out = []
        with _database("sessions"):
            for row in self.engine.sessions(principal.user_id, limit=limit):
                first = self.engine.session_messages(principal.user_id, row["session_id"], limit=1)
                title = first[0]["content"] if first else row["session_id"]
                out.append({**row, "title": title[:40] + ("…" if len(title) > 40 else "")})
        return out

    def transcript(self, principal: Principal, session_id: str) -> list[dict[str, Any]]:
        """A session's messages, oldest first; each assistant reply that kept its panel has it
        back as ``info`` (a ``TurnInfo``, else None): the memories it used, read again under this
        user's id and marked with how they stand now (edited, expired, deleted since ...)."""
        with _database("transcript"):
            messages = self.engine.session_messages(principal.user_id, session_id, limit=500)
            ids = list(dict.fromkeys(mid for m in messages for mid in panel_ids(m.get("meta"))))
            records = self.engine.get_many(ids, user_id=principal.user_id) if ids else {}
        now, fade_from = self.engine.clock.now(), self.engine.settings.fade_from_importance
        return [{**m, "info": info_from_meta(m.get("meta"), records, now, fade_from) if m["role"] == "assistant"
                 else None} for m in messages]

    def has_memories(self, principal: Principal) -> bool:
        """True when the user has at least one active memory (the page offers demo data otherwise)."""
        with _database("has_memories"):
            return bool(dict(self.engine.users()).get(principal.user_id))

    # ---- a turn ------------------------------------------------------------------------------
    def prepare_turn(self, principal: Principal, session_id: str, text: str) -> PreparedTurn:
        """Record the user's message, retrieve memories with recent turns as context, start the reply.

        Raises ``ValidationError`` (nothing stored) for a message the engine rejects, e.g. one over
        ``Settings.max_input_chars``, and ``DatabaseUnavailable`` when the SQL database is down."""
        from memory_core.llm.base import ChatMessage

        engine = self.engine
        now = engine.clock.now()
        with _database("prepare_turn"):
            earlier = engine.session_messages(principal.user_id, session_id,
                                              limit=500)[-2 * self.history_turns:]
            message_id = uuid.uuid4().hex
            engine.record_message(message_id=message_id, user_id=principal.user_id, session_id=session_id,
                                  role="user", content=text, at=now)
            context = [m["content"] for m in earlier if m["role"] == "user"][-3:]
            # Small talk ("haha thanks", "好的") and requests whose answer is the same for anyone
            # ("tell me a joke") ask for nothing of the user: no memory is brought in.
            nothing = is_small_talk(text) or general_request(text)
            stored = engine.search(principal.user_id, text, top_k=self.top_k, context=context or None,
                                   min_relevance=1.0 if nothing else None)
        # The user's own phone numbers and e-mail addresses, kept sealed, are put back for the
        # reply and the panel (the user's own read); the panel's hashes are of the stored texts.
        response = engine.reveal(stored)
        info = TurnInfo.from_search(response, engine.llm.name, bool(getattr(engine.llm, "offline", False)), stored)
        messages = [ChatMessage(m["role"], m["content"]) for m in earlier] + [ChatMessage("user", text)]
        if info.llm_offline:
            # The offline reply says a memory back to the user: it gets the words as stored, not
            # the context block's ("lovely today" must not come back as "lovely 2026-12-05").
            chunks = engine.llm.reply(messages, stored_lines(response.results), now, stored_lines(response.constraints))
        else:  # a model reads the block, whose relative dates are resolved against each memory's day
            chunks = engine.llm.reply(messages, response.context_block, now, response.constraint_block)
        last_reply = next((m["content"] for m in reversed(earlier) if m["role"] == "assistant"), None)
        # Only a question is answered: indexing every reply with the assistant message before it
        # made "The weather is lovely" findable by the memories that message listed.
        if last_reply is not None and not asked_question(last_reply):
            last_reply = None
        return PreparedTurn(principal, session_id, text, message_id, info, _chunks=iter(chunks),
                            answered=last_reply)

    def finish_turn(self, turn: PreparedTurn, reply_text: str | None = None) -> str:
        """Record the assistant's reply (after it was shown), with the panel of memories it used
        (ids and scores, ``services.turn_info``) for when the session is reopened; returns its
        message id."""
        text = reply_text if reply_text is not None else turn.reply_text
        message_id = uuid.uuid4().hex
        with _database("finish_turn"):
            self.engine.record_message(message_id=message_id, user_id=turn.principal.user_id,
                                       session_id=turn.session_id, role="assistant",
                                       content=text or "(empty reply)", meta=panel_meta(turn.info))
        return message_id

    def remember_async(self, turn: PreparedTurn) -> "Future[Remembered]":
        """Hand the user's message to the write pipeline without waiting for it."""
        return _writes().submit(self.remember, turn.principal, turn.session_id, turn.user_text, turn.user_message_id,
                                turn.answered)

    def remember(self, principal: Principal, session_id: str, text: str, message_id: str,
                 answered: str | None = None) -> Remembered:
        """Write what ``text`` states as memories of the user, with the message id as provenance and
        the assistant message it replied to as context ("yes, two cats" answers "any pets?"). A
        question or request ("给我推荐点零食", "我住在哪里") states nothing about the user and is not
        stored; a message that mixes both ("我搬到上海了，附近有什么好吃的？") stores its statement."""
        statement = statement_part(text)
        if not statement:
            return Remembered(message_id, [], [], [], [], [], skipped="a question or request, nothing to remember")
        if (answered is None and is_small_talk(statement)) or closes_advice(statement):
            # An answer to a question is never small talk; thanks for advice, with how it went, is.
            return Remembered(message_id, [], [], [], [], [], skipped="small talk, nothing to remember")
        if answered is None and mixes_a_question(text) and self._passing(statement):
            # Said as the reason for a question ("...? The sink is leaking", "I have chicken and
            # rice, what can I cook?"): a passing state is context for the answer, not a memory.
            # A lasting fact or a plan said with a question is kept ("我搬到上海了，附近有什么好吃的？").
            return Remembered(message_id, [], [], [], [], [],
                              skipped="said only as the reason for a question, nothing to remember")
        try:
            with _database("remember"):
                result = self.engine.add(principal.user_id, statement, session_id=session_id, source=message_id,
                                         actor=f"chat:{principal.username}", context=answered)
                records = self.engine.get_many(result.memory_ids + result.superseded, user_id=principal.user_id)
        except DatabaseUnavailable as exc:
            return Remembered(message_id, [], [], [], [], [], error=str(exc))
        except Exception as exc:  # shown as a notice; the chat goes on
            log.warning("remembering a chat message failed: %s", exc)
            return Remembered(message_id, [], [], [], [], [], error=f"{type(exc).__name__}: {exc}")
        shown = {mid: self.engine.revealed_text(record) for mid, record in records.items()}  # the user's own
        contents = [shown[mid] for mid in result.memory_ids if mid in shown]
        # ``memory_ids`` mixes refreshed (deduplicated) and new chunks in message order: the
        # created ones' texts are looked up by id, never by position in ``contents``.
        created_contents = [shown.get(mid, "") for mid in result.created]
        replaced = [shown[mid] for mid in result.superseded if mid in shown]
        return Remembered(message_id, list(result.memory_ids), list(result.created), list(result.deduplicated),
                          contents, list(result.redactions), created_contents=created_contents,
                          replaced_contents=replaced)

    def forget_turn(self, principal: Principal, session_id: str, text: str,
                    remembered: Remembered | None) -> tuple[str, list[str]]:
        """A "forget that" message: recorded, answered, and never itself remembered."""
        with _database("forget_turn"):
            self.engine.record_message(message_id=uuid.uuid4().hex, user_id=principal.user_id,
                                       session_id=session_id, role="user", content=text)
        deleted = self.forget(principal, remembered)
        reply = forget_reply(deleted, text)
        with _database("forget_turn"):
            self.engine.record_message(message_id=uuid.uuid4().hex, user_id=principal.user_id,
                                       session_id=session_id, role="assistant", content=reply)
        return reply, deleted

    def _passing(self, statement: str) -> bool:
        """A remark the memory's own judge rates as passing (importance 1-2, gone within months)."""
        try:
            return self.engine.rate(statement) <= 2
        except Exception as exc:  # the judge failing must not lose the statement: keep it
            log.info("rating a statement failed, it is kept: %s", exc)
            return False

    def forget(self, principal: Principal, remembered: Remembered | None) -> list[str]:
        """Undo: hard-delete what the last message created (not older memories it merely matched).

        Raises ``DatabaseUnavailable`` when the database is down (nothing more can be undone now;
        the caller keeps ``remembered`` so the user can try again)."""
        if remembered is None:
            return []
        deleted = []
        for memory_id in remembered.created:
            try:
                with _database("forget"):
                    self.engine.delete(memory_id, actor=principal.actor, user_id=principal.user_id,
                                       note="user asked to forget it")
                deleted.append(memory_id)
            except DatabaseUnavailable:
                raise
            except Exception as exc:  # already gone (merged, deleted by staff): nothing to undo
                log.info("undo of %s skipped: %s", memory_id, exc)
        return deleted


def stored_lines(results: Sequence[Any]) -> str:
    """``[YYYY-MM-DD] content`` lines of the memories as stored (one line each), in retrieval order."""
    return "\n".join(f"[{r.created_at.date().isoformat()}] {' '.join(r.content.split())}" for r in results)


def forget_reply(deleted: Sequence[str], language_hint: str) -> str:
    """The assistant's answer to a forget request."""
    zh = bool(re.search(r"[\u4e00-\u9fff]", language_hint))
    if deleted:
        return "好的，我已经忘掉刚才记住的内容。" if zh else "Done: I have forgotten what I had just remembered."
    return "没有可以忘掉的新记忆。" if zh else "There is nothing new to forget."


_LIST_ITEM = re.compile(r"^\s*([-*+]|\d+[.)])\s")


def display_markdown(text: str) -> str:
    """Reply text as Markdown that renders as written: a plain line right after a list item
    would otherwise be glued into that item (the offline replies end a list with a sentence)."""
    lines = text.split("\n")
    out: list[str] = []
    for index, line in enumerate(lines):
        if index and line.strip() and not _LIST_ITEM.match(line) and _LIST_ITEM.match(lines[index - 1]):
            out.append("")
        out.append(line)
    return "\n".join(out)
