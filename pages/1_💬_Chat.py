"""Chat: replies built from the user's memories, streamed; what the user says is remembered
after the reply, in the background, with an Undo.

A message the engine rejects (too long, empty) or one that cannot be sent because the memory
database is down is shown back to the user with the reason, kept in the session (``chat_unsent``)
to copy or resend, instead of a traceback."""
from __future__ import annotations

from typing import Any

import streamlit as st

from memory_core.errors import ValidationError
from services import runtime
from services.chat import (
    ChatService,
    DatabaseUnavailable,
    PreparedTurn,
    display_markdown,
    is_forget_request,
    new_session_id,
)
from services.demo_data import DEMO_USERS, seed_demo
from services.guided_demo import DemoStep, steps_for
from services.safe_text import md_escape, md_text
from ui.chat_view import NOTICE_SESSION, guided_demo, memory_notice, render_info
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
    """Switch to a session; past turns come from the message log, each reply with the panel of the
    memories it used (as they stand now) when its message kept one."""
    if session_id not in turns:
        try:
            transcript = chat.transcript(principal, session_id)
        except DatabaseUnavailable as exc:
            state["chat_notice"] = str(exc)
            return
        turns[session_id] = [{"role": m["role"], "content": m["content"], "info": m.get("info")} for m in transcript]
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
        label = f"{'▶ ' if current else ''}{md_escape(row['title'])}"  # the user's first message: as text
        if st.button(label, key=f"chat_open_{row['session_id']}", width="stretch",
                     help=f"{row['messages']} messages · last {row['last_at']:%Y-%m-%d %H:%M}"):
            open_session(row["session_id"])
            st.rerun()

session_id: str = state["chat_session"]
history = turns.setdefault(session_id, [])

offline = bool(getattr(engine.llm, "offline", False))
st.title("💬 Chat")
if offline:
    st.caption("📴 **Offline mode**: no language model is configured, so replies are composed directly from "
               "your memories.")
st.caption(f"Session `{session_id}` · memories of **{md_escape(principal.user_id)}**")
if state.get("chat_notice"):
    st.error(state.pop("chat_notice"))


def _has_memories() -> bool:
    try:
        return chat.has_memories(principal)
    except DatabaseUnavailable:
        return True  # no demo offer while the database is down: seeding would fail too


demo_user = DEMO_USERS.get(principal.user_id) if principal.via == "demo" else None
demo_loaded = demo_user is None or _has_memories()
if demo_user is not None and not demo_loaded:
    st.info(f"🧪 Demo: {demo_user.display_name} has no memories yet.")
    if st.button(f"Load {demo_user.display_name}'s demo history", key="chat_seed"):
        with st.spinner("Writing demo memories…"):
            seed_demo(engine, [principal.user_id])
        st.rerun()


def start_step(step: DemoStep) -> None:
    """A guided-demo button: its messages are sent on the next run (in a new session if asked)."""
    if step.new_session:
        state["chat_session"] = new_session_id()
    state["chat_guided"] = step.key
    state["chat_guided_open"] = True  # the panel stays open for the next step
    st.rerun()


demo_steps = steps_for(demo_user.language) if demo_user is not None else ()
if demo_steps:
    guided_demo(demo_steps, demo_user.language, expanded=not history or bool(state.get("chat_guided_open")),
                history_loaded=demo_loaded, start=start_step)


def show(role: str, content: str) -> None:
    """A message as text: the user's words, and replies composed from them offline, are never
    Markdown (a model's reply may use it)."""
    st.markdown(md_text(content) if role == "user" or offline else display_markdown(content))


# ---- the conversation ----------------------------------------------------------------------------------
for turn in history:
    with st.chat_message(turn["role"]):
        show(turn["role"], turn["content"])
        if turn.get("info") is not None:
            render_info(turn["info"])

# What the last message left in memory, right under the reply it belongs to.
pending_now = state.get("chat_pending") is not None
st.fragment(run_every=1.0 if pending_now else None)(memory_notice)(chat, principal, session_id)


def keep_unsent(text: str, reason: str, resendable: bool) -> None:
    """What the user typed but could not be sent: shown with the reason until resent or dismissed."""
    state["chat_unsent"] = {"text": text, "reason": reason, "resendable": resendable}
    if history and history[-1]["role"] == "user" and history[-1]["content"] == text:
        history.pop()  # it was not recorded: the transcript must not show it as sent


def take_turn(prompt: str) -> bool:
    """One turn; False when it could not be sent (the text is kept in ``chat_unsent``)."""
    with st.chat_message("user"):
        show("user", prompt)
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
        state["chat_unsent"] = None  # sent: an earlier "not sent" is stale now
        with st.chat_message("assistant"):
            show("assistant", reply)
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
    state["chat_unsent"] = None  # sent: an earlier "not sent" is stale now
    with st.chat_message("assistant"):
        if offline:  # composed from the user's words: streamed as text, recorded as composed
            st.write_stream(md_text(chunk) for chunk in prepared.stream())
            text = prepared.reply_text
        else:
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
    state[NOTICE_SESSION] = session_id
    return True


unsent: dict[str, Any] | None = state.get("chat_unsent")
resend: str | None = None
if unsent:
    st.error(unsent["reason"])  # the app's own words: the typed text is in the code box below
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
guided_key = state.pop("chat_guided", None)
guided = next((step for step in demo_steps if step.key == guided_key), None)
if prompt:
    take_turn(prompt)  # a message that could not be sent is kept, with its reason, for the next run
    st.rerun()
elif guided is not None:
    for message in guided.messages:  # as if typed, one after the other
        if not take_turn(message):
            break
    st.rerun()
