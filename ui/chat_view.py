"""Pieces of the chat page: the panel under a reply, the "remembered" notice and the guided demo.

Kept apart from ``pages/1_💬_Chat.py`` so the page reads as the order of a turn. User text (the
messages, the memories, replies composed from them) is shown as text: ``md_text`` /
``md_escape`` for Markdown, tables for memories.
"""
from __future__ import annotations

from concurrent.futures import Future
from typing import Any, Callable, Sequence

import pandas as pd
import streamlit as st

from services.chat import ChatService, DatabaseUnavailable, Remembered, TurnInfo, UsedMemory
from services.guided_demo import NEW_SESSION_NOTE, DemoStep
from services.safe_text import md_escape

NOTICE_SESSION = "chat_notice_session"  # the session whose last reply the notice belongs to


def _date(memory: UsedMemory) -> str:
    return memory.created_at.strftime("%Y-%m-%d") if memory.created_at is not None else "—"


def _shown(memory: UsedMemory) -> str:
    return memory.content if memory.content or not memory.now else "(no longer available)"


def render_info(info: TurnInfo) -> None:
    """The expander under a reply: the memories used, their dates and score parts, the timing.
    For a reopened session, a "now" column says how each memory stands today (edited, expired,
    deleted since ...): the reply was built from what it was then."""
    title = f"🧠 {len(info.used)} memories used · retrieval {info.retrieval_ms:.0f} ms"
    changed = any(m.now for m in info.used + info.constraints)
    with st.expander(title, expanded=False):
        if info.reopened:
            st.caption("From an earlier session: scores as they were for this reply, memories as they are now"
                       + (" (some changed since)." if changed else "."))
        if info.degraded:
            st.warning("Degraded: the vector store was unavailable, so memories were found by keyword search "
                       "only. " + md_escape(" ".join(info.notices)))
        elif info.notices:
            st.caption(md_escape(" ".join(info.notices)))
        if info.constraints:
            st.caption("Constraints applied to this reply:")
            st.table(pd.DataFrame([{"date": _date(c), "constraint": _shown(c)} | ({"now": c.now} if changed else {})
                                   for c in info.constraints]), hide_index=True)
        if info.used:
            st.table(pd.DataFrame([{
                "date": _date(u), "memory": _shown(u), "score": f"{u.score:.3f}",
                "relevance": f"{u.absolute:.2f}", "importance (1-5)": u.importance,
                "recency": f"{u.recency:.3f}"} | ({"now": u.now} if changed else {}) for u in info.used]),
                hide_index=True)
        else:
            st.caption(f"No stored memory was relevant enough to this message (threshold {info.min_relevance:.2f}).")
        st.caption(f"Retrieval {info.retrieval_ms:.1f} ms · {'cache hit' if info.cache_hit else 'cache miss'} · "
                   f"reranker: {md_escape(info.reranker or 'none (fused hybrid ranking)')} · "
                   f"LLM: {md_escape(info.llm_name)}{' (offline)' if info.llm_offline else ''}")


def _fragment_rerun() -> bool:
    """True while only a fragment reruns (its timer), not the whole page."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    return bool(getattr(get_script_run_ctx(), "fragment_ids_this_run", None))


def memory_notice(chat: ChatService, principal: Any, session_id: str) -> None:
    """What was remembered from the last message, with Undo, shown under the reply it belongs to
    (only in that reply's session). Polls the background write while it runs."""
    state = st.session_state
    if state.get(NOTICE_SESSION) != session_id:
        return
    pending: Future[Remembered] | None = state.get("chat_pending")
    if pending is not None:
        if not pending.done():
            st.caption("⏳ Remembering your last message…")
            return
        state["chat_last_remembered"] = pending.result()
        state["chat_pending"] = None
        if _fragment_rerun():  # the poll found it done: a full run stops the polling
            st.rerun(scope="app")
        # In a full run, go on: rerunning here would drop a message sent in this very run.
    remembered: Remembered | None = state.get("chat_last_remembered")
    if remembered is None:
        return
    if remembered.error:
        st.warning(f"Your last message could not be remembered: {md_escape(remembered.error)}")
    elif remembered.created:
        shown = md_escape("; ".join(c[:80] for c in remembered.created_contents))
        replaced = md_escape("; ".join(c[:80] for c in remembered.replaced_contents))
        cols = st.columns([8, 1])
        cols[0].success(f"🧠 Remembered: {shown}" + (f" — this replaces what you said before: {replaced}"
                                                       if replaced else ""), icon="💾")
        if cols[1].button("Undo", key="chat_undo", help="Delete what was just remembered"):
            try:
                deleted = chat.forget(principal, remembered)
            except DatabaseUnavailable as exc:  # kept: the Undo can be tried again
                st.error(f"Nothing was undone: {md_escape(exc)}")
                return
            state["chat_last_remembered"] = None
            st.toast(f"Forgot {len(deleted)} memory item(s).")
            st.rerun(scope="app")
    elif remembered.deduplicated:
        st.caption("🧠 Already known — nothing new was stored.")
    elif remembered.skipped:
        st.caption(f"🧠 Nothing stored: {md_escape(remembered.skipped)}.")


def guided_demo(steps: Sequence[DemoStep], language: str, expanded: bool, history_loaded: bool,
                start: Callable[[DemoStep], None]) -> None:
    """The "try this" panel of demo mode: one button per step; ``start`` plays the step."""
    with st.expander("🧪 Try this: a guided demo", expanded=expanded):
        st.caption("Each button sends the message(s) shown, as if you typed them. Offline mode answers from "
                   "your memories in one sentence.")
        if not history_loaded:
            st.caption("Step ③ changes an address from the demo history: load it first (button above).")
        for step in steps:
            left, right = st.columns([2, 5])
            if left.button(step.title, key=f"chat_try_{step.key}", width="stretch"):
                start(step)
            said = " → ".join(f"“{md_escape(m)}”" for m in step.messages)
            note = NEW_SESSION_NOTE.get(language, NEW_SESSION_NOTE["en"]) if step.new_session else ""
            right.caption(f"{note}{said}  \n{md_escape(step.hint)}")
