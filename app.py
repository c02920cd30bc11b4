"""Landing page: what the product is, sign-in, and the status of every backing service.

Run with ``scripts/start-app.sh`` (``python -m ui.serve app.py``: ``streamlit run`` with the memory
engine warming up from server start) or ``streamlit run app.py`` (flags in
``.streamlit/config.toml``: bound to 127.0.0.1, no usage statistics). The sign-in never waits for
the engine: while it warms up, this page says so where the status and demo data go, and fills
them in by itself. The pages in ``pages/`` are discovered by Streamlit's classic multipage mode;
each checks the signed-in principal itself.
"""
from __future__ import annotations

import streamlit as st

from services import runtime
from services.demo_data import DEMO_USERS, seed_demo
from ui.common import (
    current_principal,
    demo_enabled,
    engine_if_ready,
    friendly_errors,
    sidebar_identity,
    sign_in_panel,
    warming_notice,
)
from ui.nav import ADMIN_PAGE, ANALYTICS_PAGE, CHAT_PAGE

st.set_page_config(page_title="Long-term memory", page_icon="🧠", layout="wide")
friendly_errors()  # no traceback is ever shown: a reference id, and the traceback in the log
settings = runtime.app_settings()
principal = current_principal(settings)
sidebar_identity(principal)
demo = demo_enabled(settings)

st.title("🧠 Long-term memory for AI assistants")
st.markdown(
    "An assistant that **remembers what matters** across conversations: what you tell it becomes "
    "memories (PII redacted, rated for importance, deduplicated, dated), and every reply is built "
    "from the few memories that fit the question best — ranked by relevance, importance and recency. "
    "Support staff can inspect, correct and erase memories with a full audit trail."
)
if demo:
    st.caption("🧪 Demo mode is on: demo identities and demo data are offered below.")

engine = engine_if_ready()  # None while the engine warms up: the sign-in does not wait for it

left, right = st.columns([3, 2], gap="large")
with left:
    if principal is None:
        st.subheader("Sign in")
        sign_in_panel(settings)
    else:
        st.subheader(f"Welcome, {principal.display_name}")
        st.page_link(CHAT_PAGE, label="Chat with your assistant", icon="💬")
        if principal.is_staff:
            st.page_link(ADMIN_PAGE, label="Admin: browse and manage memories", icon="🛠️")
        if principal.can_view_analytics:
            st.page_link(ANALYTICS_PAGE, label="Analytics", icon="📊")
    if demo and engine is None:
        st.subheader("Demo data")
        st.caption("The demo users and their memories appear here once the memory engine is ready.")
    if demo and engine is not None:
        st.subheader("Demo data")
        if st.session_state.get("home_seeded"):  # said after the rerun that refreshed the counts below
            st.success(st.session_state.pop("home_seeded"))
        existing = dict(engine.users())
        for user in DEMO_USERS.values():
            count = existing.get(user.user_id, 0)
            stored = f"{count} memories stored" if count else "no memories yet"
            st.markdown(f"**{user.display_name}** — {user.blurb}  \n{stored}")
        if st.button("Load demo data (a few weeks of history)", key="seed_demo"):
            bar = st.progress(0.0, text="Writing demo memories through the write pipeline…")
            reports = seed_demo(engine, progress=lambda done, total: bar.progress(done / total))
            written = sum(r.written for r in reports)
            skipped = [r.user_id for r in reports if r.skipped]
            st.session_state["home_seeded"] = (f"Loaded {written} memories." +
                                               (f" Already loaded: {', '.join(skipped)}." if skipped else ""))
            st.rerun()  # the counts above were read before the load

with right:
    st.subheader("Status")
    if engine is None:
        warming_notice("⏳ **Warming up**: the memory engine is loading the embedding model (only after the server "
                       "starts). You can sign in meanwhile; the status appears here by itself.")
        st.stop()
    health = engine.health()

    def line(ok: bool, name: str, detail: str) -> None:
        (st.success if ok else st.error)(f"**{name}** — {detail}", icon="✅" if ok else "🛑")

    line(bool(health.get("sql")), "SQL database", "up" if health.get("sql") else "DOWN: memories cannot be read or saved")
    if health.get("vectors_rebuilding"):
        st.warning("**Milvus vector store** — rebuilding from the database (the Milvus Lite file was damaged and "
                   "kept aside); until then search uses keyword matching in SQL (degraded).", icon="🛠️")
    else:
        line(bool(health.get("vectors")), "Milvus vector store",
             "up" if health.get("vectors") else "DOWN: search falls back to keyword matching in SQL (degraded)")
    line(bool(health.get("cache")), f"Cache ({health.get('cache_backend', '?')})",
         "up" if health.get("cache") else "DOWN: searches are not cached (slower, still correct)")
    if health.get("llm_offline"):
        st.warning(f"**LLM** — offline mode ({health.get('llm')}): replies are composed from memory "
                   "without a language model.", icon="📴")
    else:
        st.success(f"**LLM** — online: {health.get('llm')}", icon="✅")
    reranker = health.get("reranker")
    st.info(f"**Reranker** — {reranker}" if reranker else
            "**Reranker** — not used: the fused hybrid ranking (dense + keyword) stands.", icon="ℹ️")
    st.caption(f"Embedding model: {health.get('embedding_model')}")
