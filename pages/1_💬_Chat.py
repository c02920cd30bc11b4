"""Chat: replies built from the user's memories, streamed; what the user says is remembered
after the reply, in the background, with an Undo.

A message the engine rejects (too long, empty) or one that cannot be sent because the memory
database is down is shown back to the user with the reason, kept in the session (``chat_unsent``)
to copy or resend, instead of a traceback."""
from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import pandas as pd
import streamlit as st

from memory_core.errors import ValidationError
from services import runtime
from services.chat import (
    ChatService,
    DatabaseUnavailable,
    PreparedTurn,
    Remembered,
    TurnInfo,
    display_markdown,
    is_forget_request,
    new_session_id,
)
from services.demo_data import DEMO_USERS, seed_demo
from services.safe_text import md_escape
from ui.common import engine_or_stop, friendly_errors, require_principal

st.set_page_config(page_title="Chat · Long-term memory", page_icon="💬", layout="wide")
friendly_errors()  # no traceback is ever shown: a reference id, and the traceback in the log
principal = require_principal()
settings = runtime.app_settings()
engine = engine_or_stop()
chat = ChatService(engine, top_k=settings.chat_top_k, history_turns=settings.chat_history_turns)
state = st.session_state
chat.prepare(principal)  # loads the user's vectors in the background while they type

if "chat_session" not in state:
    state["chat_session"] = new_session_id()
    state["chat_turns"] = {}
turns: dict[str, list[dict[str, Any]]] = state.setdefault("chat_turns", {})


def open_session(session_id: str) -> None:
    """Switch to a session; past turns come from the message log (their memory details are not kept)."""
    if session_id not in turns:
        try:
            transcript = chat.transcript(principal, session_id)
        except DatabaseUnavailable as exc:
            state["chat_notice"] = str(exc)
            return
        turns[session_id] = [{"role": m["role"], "content": m["content"], "info": None} for m in transcript]
    state["chat_session"] = session_id


# ---- sidebar: sessions -------------------------------------------------------------------------
with st.sidebar:
    st.subheader("Sessions")
    if st.button("➕ New session", key="chat_new_session", width="stretch"):
        state["chat_session"] = new_session_id()
        st.rerun()
    try:
        past_sessions = chat.sessions(principal)
    except DatabaseUnavailable as exc:
        past_sessions = []
        st.warning(f"Past sessions cannot be listed: {exc}")
    for row in past_sessions:
        current = row["session_id"] == state["chat_session"]
        label = f"{'▶ ' if current else ''}{row['title']}"
        if st.button(label, key=f"chat_open_{row['session_id']}", width="stretch",
                     help=f"{row['messages']} messages · last {row['last_at']:%Y-%m-%d %H:%M}"):
            open_session(row["session_id"])
            st.rerun()

session_id: str = state["chat_session"]
history = turns.setdefault(session_id, [])

st.title("💬 Chat")
if getattr(engine.llm, "offline", False):
    st.caption("📴 **Offline mode**: no language model is configured, so replies are composed directly from "
               "your memories.")
st.caption(f"Session `{session_id}` · memories of **{principal.user_id}**")
if state.get("chat_notice"):
    st.error(state.pop("chat_notice"))


def _has_memories() -> bool:
    try:
        return chat.has_memories(principal)
    except DatabaseUnavailable:
        return True  # no demo offer while the database is down: seeding would fail too


demo_user = DEMO_USERS.get(principal.user_id)
if principal.via == "demo" and demo_user is not None and not _has_memories():
    st.info(f"🧪 Demo: {demo_user.display_name} has no memories yet.")
    if st.button(f"Load {demo_user.display_name}'s demo history", key="chat_seed"):
        with st.spinner("Writing demo memories…"):
            seed_demo(engine, [principal.user_id])
        st.rerun()


# ---- what was remembered from the last message ------------------------------------------------------
def render_memory_notice() -> None:
    pending: Future[Remembered] | None = state.get("chat_pending")
    if pending is not None:
        if not pending.done():
            st.caption("⏳ Remembering your last message…")
            return
        state["chat_last_remembered"] = pending.result()
        state["chat_pending"] = None
        st.rerun(scope="app")
    remembered: Remembered | None = state.get("chat_last_remembered")
    if remembered is None:
        return
    if remembered.error:
        st.warning(f"Your last message could not be remembered: {remembered.error}")
    elif remembered.created:
        shown = md_escape("; ".join(c[:80] for c in remembered.created_contents))
        cols = st.columns([8, 1])
        replaced = md_escape("; ".join(c[:80] for c in remembered.replaced_contents))
        cols[0].success(f"🧠 Remembered: {shown}" + (f" — this replaces what you said before: {replaced}"
                                                       if replaced else ""), icon="💾")
        if cols[1].button("Undo", key="chat_undo", help="Delete what was just remembered"):
            try:
                deleted = chat.forget(principal, remembered)
            except DatabaseUnavailable as exc:  # kept: the Undo can be tried again
                st.error(f"Nothing was undone: {exc}")
                return
            state["chat_last_remembered"] = None
            st.toast(f"Forgot {len(deleted)} memory item(s).")
            st.rerun(scope="app")
    elif remembered.deduplicated:
        st.caption("🧠 Already known — nothing new was stored.")
    elif remembered.skipped:
        st.caption(f"🧠 Nothing stored: {remembered.skipped}.")


pending_now = state.get("chat_pending") is not None
st.fragment(run_every=1.0 if pending_now else None)(render_memory_notice)()


# ---- the conversation ----------------------------------------------------------------------------------
def render_info(info: TurnInfo) -> None:
    """The expander under a reply: the memories used, their dates and score parts, the timing."""
    title = f"🧠 {len(info.used)} memories used · retrieval {info.retrieval_ms:.0f} ms"
    with st.expander(title, expanded=False):
        if info.degraded:
            st.warning("Degraded: the vector store was unavailable, so memories were found by keyword search "
                       "only. " + " ".join(info.notices))
        elif info.notices:
            st.caption(" ".join(info.notices))
        if info.constraints:
            st.caption("Constraints applied to this reply:")
            st.table(pd.DataFrame([{"date": c.created_at.strftime("%Y-%m-%d"), "constraint": c.content}
                                   for c in info.constraints]), hide_index=True)
        if info.used:
            st.table(pd.DataFrame([{
                "date": u.created_at.strftime("%Y-%m-%d"), "memory": u.content, "score": f"{u.score:.3f}",
                "relevance": f"{u.absolute:.2f}", "importance (1-5)": u.importance,
                "recency": f"{u.recency:.3f}"} for u in info.used]), hide_index=True)
        else:
            st.caption(f"No stored memory was relevant enough to this message (threshold {info.min_relevance:.2f}).")
        st.caption(f"Retrieval {info.retrieval_ms:.1f} ms · {'cache hit' if info.cache_hit else 'cache miss'} · "
                   f"reranker: {info.reranker or 'none (fused hybrid ranking)'} · LLM: {info.llm_name}"
                   f"{' (offline)' if info.llm_offline else ''}")


for turn in history:
    with st.chat_message(turn["role"]):
        st.markdown(display_markdown(turn["content"]))
        if turn.get("info") is not None:
            render_info(turn["info"])

def keep_unsent(text: str, reason: str, resendable: bool) -> None:
    """What the user typed but could not be sent: shown with the reason until resent or dismissed."""
    state["chat_unsent"] = {"text": text, "reason": reason, "resendable": resendable}
    if history and history[-1]["role"] == "user" and history[-1]["content"] == text:
        history.pop()  # it was not recorded: the transcript must not show it as sent


def take_turn(prompt: str) -> bool:
    """One turn; False when it could not be sent (the text is kept in ``chat_unsent``)."""
    with st.chat_message("user"):
        st.markdown(prompt)
    history.append({"role": "user", "content": prompt, "info": None})
    if is_forget_request(prompt):
        pending = state.get("chat_pending")
        if pending is not None:  # the write of the message to forget may still be running
            state["chat_last_remembered"] = pending.result(timeout=120)
            state["chat_pending"] = None
        last = state.get("chat_last_remembered")
        try:
            reply, deleted = chat.forget_turn(principal, session_id, prompt, last)
        except DatabaseUnavailable as exc:  # chat_last_remembered is kept for another try
            keep_unsent(prompt, f"Your message was not sent: {exc}", resendable=True)
            return False
        state["chat_last_remembered"] = None
        with st.chat_message("assistant"):
            st.markdown(reply)
        history.append({"role": "assistant", "content": reply, "info": None})
        return True
    try:
        prepared: PreparedTurn = chat.prepare_turn(principal, session_id, prompt)
    except ValidationError as exc:  # rejected before anything was stored (too long, empty)
        keep_unsent(prompt, f"Your message was not sent: {exc}.", resendable=False)
        return False
    except DatabaseUnavailable as exc:
        keep_unsent(prompt, f"Your message was not sent: {exc}", resendable=True)
        return False
    with st.chat_message("assistant"):
        reply = st.write_stream(prepared.stream())
        text = reply if isinstance(reply, str) else prepared.reply_text
        render_info(prepared.info)
    history.append({"role": "assistant", "content": text, "info": prepared.info})
    try:
        chat.finish_turn(prepared, text)
    except DatabaseUnavailable as exc:
        state["chat_notice"] = f"The reply could not be saved to this session's history: {exc}"
    # Only now, after the reply is on screen, is the message handed to the write pipeline.
    state["chat_pending"] = chat.remember_async(prepared)
    state["chat_last_remembered"] = None
    return True


unsent: dict[str, Any] | None = state.get("chat_unsent")
resend: str | None = None
if unsent:
    st.error(unsent["reason"])
    with st.expander("Your unsent message (copy it from here)", expanded=False):
        st.code(unsent["text"], language=None, wrap_lines=True)
    cols = st.columns([1, 1, 6])
    if unsent["resendable"] and cols[0].button("Resend", key="chat_resend", type="primary"):
        resend = unsent["text"]
    if cols[1].button("Dismiss", key="chat_dismiss"):
        state["chat_unsent"] = None
        st.rerun()

prompt = st.chat_input("Tell me something about you, or ask a question…  (say “forget that” to undo)",
                       max_chars=engine.settings.max_input_chars)
if resend is not None and not prompt:
    state["chat_unsent"] = None  # taken back; kept again below if it fails once more
    prompt = resend
if prompt:
    take_turn(prompt)  # a message that could not be sent is kept, with its reason, for the next run
    st.rerun()
