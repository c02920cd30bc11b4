"""Streamlit helpers shared by the landing page and the pages: sign-in state, the engine, the
sidebar. Kept out of ``services/`` because it is the one place that must import Streamlit.
"""
from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any

import streamlit as st

from services import runtime
from services.auth import (
    Authenticator,
    LoginThrottle,
    Principal,
    accounts_configured,
    demo_available,
    demo_principals,
    load_accounts,
    oidc_principal,
)
from services.demo_data import demo_user_choices
from services.safe_text import md_escape
from services.settings import AppSettings
from ui.nav import HOME_PAGE, sidebar_nav

if TYPE_CHECKING:
    from memory_core import MemoryEngine

log = logging.getLogger(__name__)
PRINCIPAL_KEY = "principal"
TOKEN_KEY = "session_token"  # this browser session's sign-in token ("" once signed out)
_THROTTLE: tuple[object, LoginThrottle] | None = None
_REVOCATIONS: tuple[object, Any] | None = None


def throttle(settings: AppSettings) -> LoginThrottle:
    """One throttle per engine, counting in the engine's SQL database: every app process (and
    replica) sees the same failures, and a new tab or a restart does not reset them."""
    global _THROTTLE
    from services.throttle import SqlThrottleStore

    sql = _ready_engine().sql_database
    if _THROTTLE is None or _THROTTLE[0] is not sql:
        _THROTTLE = (sql, LoginThrottle(SqlThrottleStore(sql), settings.throttle_policy()))
    return _THROTTLE[1]


def revocations() -> Any:
    """The sign-out list (services.session_token.SqlRevocations) in the engine's SQL database."""
    global _REVOCATIONS
    from services.session_token import SqlRevocations

    sql = _ready_engine().sql_database
    if _REVOCATIONS is None or _REVOCATIONS[0] is not sql:
        _REVOCATIONS = (sql, SqlRevocations(sql))
    return _REVOCATIONS[1]


def _session_key(settings: AppSettings) -> bytes:
    from services.session_token import load_key

    return load_key(settings.session_secret, settings.data_dir)


def keep_signed_in(principal: Principal, settings: AppSettings, password_hash: str = "") -> None:
    """After a sign-in: a token for the cookie that signs this person in again after a reload."""
    from services.session_token import issue

    if settings.session_hours > 0:
        token = issue(principal, _session_key(settings), settings.session_hours * 3600, password_hash=password_hash)
        if token:
            st.session_state[TOKEN_KEY] = token


def _cookie_token() -> str:
    from services.session_token import COOKIE

    try:
        value = st.context.cookies.get(COOKIE)
    except Exception:  # no browser context (tests, bare scripts)
        return ""
    return value if isinstance(value, str) else ""


def _restore_from_cookie(settings: AppSettings) -> Principal | None:
    """A new browser session (reload, typed URL) signed in again from a valid, unrevoked token."""
    from services.session_token import read, restore

    token = _cookie_token()
    if not token or settings.session_hours <= 0 or st.session_state.get(TOKEN_KEY) == "":
        return None  # no cookie, the feature off, or signed out in this very session
    claims = read(token, _session_key(settings))
    if claims is None:
        return None
    try:
        accounts = load_accounts(settings.resolved_accounts_file, settings.accounts_json)
    except (OSError, ValueError):
        accounts = {}
    demo = (demo_principals(demo_user_choices(), include_staff=settings.demo_staff)
            if demo_enabled(settings) else None)
    try:
        principal = restore(claims, accounts, demo, revocations().is_revoked)
    except Exception as exc:  # the database is down: sign in by hand
        log.warning("could not check a sign-in token: %s", exc)
        return None
    if principal is not None:
        st.session_state[PRINCIPAL_KEY] = principal
        st.session_state[TOKEN_KEY] = token
    return principal


def _sync_cookie(principal: Principal | None, settings: AppSettings) -> None:
    """Sets the cookie while signed in with a token, deletes it once signed out or invalid."""
    from services.session_token import cookie_script, read

    token = st.session_state.get(TOKEN_KEY)
    if principal is not None and token:
        claims = read(token, _session_key(settings))
        if claims is None:
            return
        import time

        script = cookie_script(token, int(claims["exp"] - time.time()))
    elif principal is None and (token == "" or _cookie_token()):
        script = cookie_script(None, 0)
    else:
        return
    with st.sidebar:
        st.html(script, unsafe_allow_javascript=True)


def client_address(settings: AppSettings) -> str:
    """Who is signing in, as far as Streamlit can tell: the address of the browser's connection
    (``st.context.ip_address``; none for loopback), or, behind a trusted proxy, the last entry of
    the header it sets. "" when unknown: the throttle then counts per name only (see
    services/throttle.py). Addresses can be shared (NAT, proxies) and headers forged when the
    app is reachable without the proxy; that is the limit of what a Streamlit page can know."""
    try:
        if settings.trusted_proxy_header:
            forwarded = st.context.headers.get(settings.trusted_proxy_header)
            last = forwarded.split(",")[-1].strip() if isinstance(forwarded, str) else ""
            if last:
                return last
        address = st.context.ip_address
        return address if isinstance(address, str) else ""
    except Exception:  # no browser context (tests, bare scripts)
        return ""


FRIENDLY_ERROR = ("Something went wrong and this page could not finish. Nothing more was changed. "
                  "Please try again; if it keeps happening, give support this reference: {rid}")


def friendly_errors() -> None:
    """Any exception a page does not handle is shown as a plain message with a reference id,
    never as a traceback (which names source files, settings and data); the log gets the
    traceback under the same id. Streamlit calls this run's ``on_script_error`` handler; if that
    hook is ever missing, ``showErrorDetails = "none"`` in .streamlit/config.toml still hides
    the details. Call it at the top of every page, each run."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    def show(exc: Exception) -> bool:
        from memory_core.logs import request_context

        rid = uuid.uuid4().hex[:12]
        with request_context(rid):
            log.error("page failed: %s (reference %s)", type(exc).__name__, rid, exc_info=exc)
        st.error(FRIENDLY_ERROR.format(rid=rid), icon="⚠️")
        return True  # shown: Streamlit's own exception element is not

    ctx = get_script_run_ctx()
    if ctx is not None and hasattr(ctx, "on_script_error"):
        ctx.on_script_error = show


def oidc_configured() -> bool:
    """True when the operator put an ``[auth]`` section in ``.streamlit/secrets.toml``."""
    try:
        return "auth" in st.secrets
    except Exception:  # no secrets file at all
        return False


def demo_enabled(settings: AppSettings) -> bool:
    """Demo identities are offered (and honoured) only with ``DEMO_MODE`` on and no accounts
    or OIDC configured: see ``services.auth.demo_available``."""
    return demo_available(settings.demo_mode,
                          accounts_configured(settings.resolved_accounts_file, settings.accounts_json),
                          oidc_configured())


def current_principal(settings: AppSettings | None = None) -> Principal | None:
    principal = st.session_state.get(PRINCIPAL_KEY)
    if isinstance(principal, Principal):
        if principal.via == "demo" and not demo_enabled(settings or runtime.app_settings()):
            # Demo turned off, or accounts added, since this session picked a demo identity.
            st.session_state.pop(PRINCIPAL_KEY, None)
            return None
        return principal
    restored = _restore_from_cookie(settings or runtime.app_settings())
    if restored is not None:
        return restored
    if oidc_configured():
        try:
            user = st.user
            if user.get("is_logged_in"):
                settings = settings or runtime.app_settings()
                principal = oidc_principal(str(user.get("email") or ""), str(user.get("name") or ""),
                                           settings.staff_emails)
                st.session_state[PRINCIPAL_KEY] = principal
                return principal
        except Exception:
            return None
    return None


def sign_out() -> None:
    from services.session_token import read

    token = st.session_state.get(TOKEN_KEY)
    if token:  # the cookie must not sign anyone in again, whatever the browser keeps
        claims = read(token, _session_key(runtime.app_settings()))
        if claims is not None:
            revocations().revoke(str(claims["n"]), float(claims["exp"]))
    st.session_state[TOKEN_KEY] = ""  # signed out: the next runs delete the cookie
    principal = st.session_state.pop(PRINCIPAL_KEY, None)
    for key in [k for k in st.session_state.keys() if str(k).startswith(("chat_", "admin_"))]:
        del st.session_state[key]
    if isinstance(principal, Principal) and principal.via == "oidc":
        st.logout()


WARMING_UP = ("⏳ **Warming up**: the memory engine is loading the embedding model (only after the server "
              "starts). This page continues by itself in a moment.")


def _poll_until_ready() -> None:
    """Rerun the whole page once the warm-up is over (ready or failed): a fragment that checks
    every two seconds, so the visitor does nothing and the page does not block meanwhile. Not
    more often: each check is a script run, and checks twice a second slowed the warm-up they
    wait for by a third on 2 cores (the model conversion of a first start, 24 s -> 35 s)."""
    if runtime.engine_ready() or not runtime.warming_up():
        st.rerun(scope="app")


def warming_notice(message: str = WARMING_UP) -> None:
    """Say that the engine is warming up, and come back to this page when it is ready."""
    st.info(message)
    st.fragment(run_every=2.0)(_poll_until_ready)()


def _ready_engine() -> "MemoryEngine":
    """The engine, waiting (with a word on screen) for a warm-up in progress."""
    if runtime.engine_ready():
        return runtime.get_engine()
    with st.spinner("Warming up: loading the memory engine…"):
        return runtime.get_engine()


def engine_if_ready() -> "MemoryEngine | None":
    """The engine when it is open, else None while a warm-up opens it (started here if nothing
    started one): the home page shows its sign-in instead of waiting for the model. A warm-up that
    failed is tried again here, and its error shown (``engine_or_stop``)."""
    if not runtime.engine_ready():
        runtime.start_warm_up()
        if runtime.warming_up():
            return None
    return engine_or_stop()


def engine_or_stop() -> "MemoryEngine":
    """The process-wide engine (and scheduler); a clear error and a stop when it cannot open.
    While a warm-up is opening it, the page says so and stops, and comes back when it is ready
    (the chat says "warming up" instead of hanging on its first request)."""
    if not runtime.engine_ready() and runtime.warming_up():
        warming_notice()
        st.stop()
    try:
        with st.spinner("Opening the memory engine (the first start loads the embedding model)…"):
            engine = runtime.get_engine()
    except Exception as exc:
        st.error(f"The memory engine could not start: {type(exc).__name__}: {exc}")
        st.stop()
    try:
        runtime.start_background(engine)
    except Exception as exc:  # the app works without the scheduler; say so
        st.warning(f"The maintenance scheduler did not start: {exc}")
    return engine


def database_or_stop(engine: "MemoryEngine") -> None:
    """Staff pages read the database on every widget: when it cannot be reached, one clear
    notice and a stop instead of a driver traceback under the first table (nothing is lost:
    the pages only read until a staff member acts)."""
    if not runtime.database_ok(engine):
        st.error("The memory database is unavailable right now, so this page cannot show or change "
                 "anything. Try again shortly; the engine reconnects on its own.")
        st.stop()


def link_home(label: str) -> None:
    """A link to the landing page; a plain hint when this page runs without it (AppTest runs a
    page as its own entrypoint, where Streamlit knows no ``app.py``)."""
    try:
        st.page_link(HOME_PAGE, label=label, icon="🔑")
    except Exception:
        st.markdown(f"🔑 {label}: open the home page.")


def sidebar_identity(principal: Principal | None) -> None:
    _sync_cookie(principal, runtime.app_settings())
    sidebar_nav(principal)
    with st.sidebar:
        if principal is None:
            st.caption("Not signed in.")
            link_home("Sign in on the home page")
            return
        label = {"staff": "support staff", "analyst": "analyst", "user": "user"}[principal.role]
        demo = " · demo" if principal.via == "demo" else ""
        st.markdown(f"**{md_escape(principal.display_name)}**  \n{label}{demo}")  # a name from SSO: as text
        if st.button("Sign out", key="sign_out"):
            sign_out()
            st.rerun()


def require_principal() -> Principal:
    principal = current_principal()
    sidebar_identity(principal)
    if principal is None:
        st.info("Please sign in first.")
        link_home("Go to sign-in")
        st.stop()
    return principal


def sign_in_panel(settings: AppSettings) -> None:
    """Account sign-in, the demo picker (demo mode only) and SSO (when configured)."""
    demo = demo_enabled(settings)
    tabs = ["Account"] + (["Demo"] if demo else []) + (["Single sign-on"] if oidc_configured() else [])
    panes = dict(zip(tabs, st.tabs(tabs)))
    with panes["Account"]:
        with st.form("login"):
            username = st.text_input("Username", key="login_username")
            password = st.text_input("Password", type="password", key="login_password")
            submitted = st.form_submit_button("Sign in")
        if submitted:
            try:
                accounts = load_accounts(settings.resolved_accounts_file, settings.accounts_json)
            except (OSError, ValueError) as exc:
                st.error(f"The accounts configuration is invalid: {exc}")
                accounts = {}
            if not accounts:
                st.warning("No accounts are configured. The operator adds them with "
                           "`python -m services.auth add NAME --role staff`" +
                           (" — or use the demo tab." if demo else "."))
            outcome = Authenticator(accounts, throttle(settings)).login(username, password,
                                                                       client_address(settings))
            if outcome.principal is not None:
                st.session_state[PRINCIPAL_KEY] = outcome.principal
                account = accounts.get(outcome.principal.username)
                keep_signed_in(outcome.principal, settings, account.password_hash if account else "")
                st.rerun()
            elif accounts:
                st.error(outcome.message)
    if "Demo" in panes:
        with panes["Demo"]:
            st.warning("**Demo mode** — for trying the product. Anyone who can open this page may use these "
                       "demo identities (demo staff sees demo users only); it is off unless `DEMO_MODE=true`, "
                       "and never offered once accounts or single sign-on are configured.", icon="🧪")
            choices = demo_principals(demo_user_choices(), include_staff=settings.demo_staff)
            labels = [f"{p.display_name} — {'support staff' if p.is_staff else 'chat user'}" for p in choices]
            index = st.selectbox("Demo identity", range(len(choices)), format_func=lambda i: labels[i],
                                 key="demo_pick")
            if st.button("Enter as demo identity", key="demo_enter", type="primary"):
                st.session_state[PRINCIPAL_KEY] = choices[int(index)]
                keep_signed_in(choices[int(index)], settings)
                st.rerun()
    if "Single sign-on" in panes:
        with panes["Single sign-on"]:
            st.caption("Sign in with your organisation's identity provider.")
            if st.button("Sign in with SSO", key="sso"):
                st.login()
