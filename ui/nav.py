"""The app's pages for ``st.navigation``: labels, icons and links between pages.

Streamlit's classic ``pages/`` discovery labels the landing page after the entrypoint file
("app"); ``st.Page`` is the documented way to give it a title, so ``app.py`` declares every
page here (the files stay in ``pages/``; their URLs, /Chat, /Admin, /Analytics, are unchanged).
The page objects are kept so any page can link to another by name.
"""
from __future__ import annotations

from typing import Any, Callable

import streamlit as st

_PAGES: dict[str, Any] = {}


def register(home: Callable[[], None]) -> list[Any]:
    """The pages in menu order, the landing page first (and default)."""
    _PAGES.update(
        home=st.Page(home, title="Home", icon="🧠", default=True),
        chat=st.Page("pages/1_💬_Chat.py", title="Chat", icon="💬"),
        admin=st.Page("pages/2_🛠️_Admin.py", title="Admin", icon="🛠️"),
        analytics=st.Page("pages/3_📊_Analytics.py", title="Analytics", icon="📊"),
    )
    return list(_PAGES.values())


def link(name: str, label: str, icon: str) -> None:
    """A link to the page ``name``; a plain hint where that page is not in this run's navigation
    (AppTest runs a page file as its own entrypoint)."""
    try:
        st.page_link(_PAGES[name], label=label, icon=icon)
    except Exception:
        st.markdown(f"{icon} {label}: open it from the menu.")
