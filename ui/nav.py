"""The sidebar's page menu. Streamlit's own menu (turned off in .streamlit/config.toml,
``client.showSidebarNavigation``) names the entry page after its file, "app", and lists Admin to
every visitor; this one says "Home" and lists only the pages the signed-in role may open. Pages
are still discovered the classic way, from ``pages/``."""
from __future__ import annotations

import streamlit as st
from streamlit.errors import StreamlitPageNotFoundError

from services.auth import Principal

HOME_PAGE = "app.py"
CHAT_PAGE = "pages/1_💬_Chat.py"
ADMIN_PAGE = "pages/2_🛠️_Admin.py"
ANALYTICS_PAGE = "pages/3_📊_Analytics.py"


def nav_entries(principal: Principal | None) -> list[tuple[str, str, str]]:
    """(page, label, icon) of each page the sidebar offers to ``principal``: everyone gets Home;
    a signed-in visitor gets Chat; staff get Admin; staff and analysts get Analytics."""
    entries = [(HOME_PAGE, "Home", "🏠")]
    if principal is not None:
        entries.append((CHAT_PAGE, "Chat", "💬"))
        if principal.is_staff:
            entries.append((ADMIN_PAGE, "Admin", "🛠️"))
        if principal.can_view_analytics:
            entries.append((ANALYTICS_PAGE, "Analytics", "📊"))
    return entries


def sidebar_nav(principal: Principal | None) -> None:
    """The page menu at the top of the sidebar. AppTest runs a page as its own entrypoint, where
    Streamlit knows no other page: the menu is left out there rather than failing the page."""
    with st.sidebar:
        for page, label, icon in nav_entries(principal):
            try:
                st.page_link(page, label=label, icon=icon)
            except StreamlitPageNotFoundError:  # a page run as its own entrypoint (AppTest)
                return
        st.divider()
