"""Each page through Streamlit's AppTest, against an engine in a temp store (the real parts in the
full run, the stand-ins in the fast lane: tests/lanes.py; the guided demo is in test_app_demo.py).

Covers: the landing page's status panel and sign-in (account with a scrypt hash, demo); the
chat round trip that writes a memory after the reply and uses it in a new session; the admin
page refusing an end user; an admin edit landing in the history with the staff actor; the
analytics page rendering its charts on seeded data.
"""
from __future__ import annotations

import json
import re
from concurrent.futures import Future
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from services import runtime
from services.auth import hash_password, save_account
from services.demo_data import seed_demo
from tests.app_support import ALICE, ANALYST, DEMO_ALICE, DEMO_STAFF, REPO_ROOT, STAFF, ZHANG  # app_env: a fixture, registered in conftest.py

CHAT = str(REPO_ROOT / "pages" / "1_💬_Chat.py")
ADMIN = str(REPO_ROOT / "pages" / "2_🛠️_Admin.py")
ANALYTICS = str(REPO_ROOT / "pages" / "3_📊_Analytics.py")
HOME = str(REPO_ROOT / "app.py")
TIMEOUT = 180


def _run(path: str, principal=None) -> AppTest:  # type: ignore[no-untyped-def]
    if path == HOME:  # as on a server whose warm-up is over (the home page does not wait for one)
        runtime.get_engine()
    at = AppTest.from_file(path, default_timeout=TIMEOUT)
    if principal is not None:
        at.session_state["principal"] = principal
    return at.run()


def _no_exceptions(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    # pages show an unhandled error as a friendly message with a reference (ui.common.friendly_errors)
    assert not [e.value for e in at.error if "give support this reference" in e.value]


def _wait_for_write(at: AppTest) -> None:
    pending = at.session_state["chat_pending"] if "chat_pending" in at.session_state else None
    if isinstance(pending, Future):
        pending.result(timeout=120)


def test_home_shows_status_and_signs_in_with_account(app_env: dict[str, str]) -> None:
    Path(app_env["ACCOUNTS_FILE"]).write_text(json.dumps({"accounts": [
        {"username": "lin", "display_name": "Lin", "role": "staff", "password_hash": hash_password("s3cret-pw")}]}))
    at = _run(HOME)
    _no_exceptions(at)
    status = " ".join(s.value for s in at.success)
    assert "SQL database** — up" in status and "Milvus vector store** — up" in status
    assert any("offline mode" in w.value for w in at.warning)  # no LLM configured: said plainly

    at.text_input(key="login_username").set_value("lin")
    at.text_input(key="login_password").set_value("wrong")
    at.button(key="FormSubmitter:login-Sign in").click().run()
    assert "principal" not in at.session_state
    assert any("Wrong username or password" in e.value for e in at.error)

    at.text_input(key="login_password").set_value("s3cret-pw")
    at.button(key="FormSubmitter:login-Sign in").click().run()
    _no_exceptions(at)
    assert at.session_state["principal"].role == "staff"
    assert at.session_state["principal"].username == "lin"


def test_the_home_page_offers_sign_in_while_the_engine_warms_up(app_env: dict[str, str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The first page after a start waited for the embedding model (issue 23: 28 s). While the
    engine warms up, the home page shows the sign-in and says it is warming up, the chat says so
    instead of hanging, and both carry on once the engine is open."""
    import threading
    import time

    import memory_core

    runtime.shutdown()
    gate = threading.Event()
    real_open = memory_core.open_memory

    def slow_open(*args, **kwargs):  # type: ignore[no-untyped-def]
        gate.wait(120)  # the model "loads" until the test lets it
        return real_open(*args, **kwargs)

    monkeypatch.setattr(memory_core, "open_memory", slow_open)
    try:
        started = time.monotonic()
        home = AppTest.from_file(HOME, default_timeout=TIMEOUT).run()
        assert time.monotonic() - started < 60  # it did not wait for the gate
        _no_exceptions(home)
        assert runtime.warming_up() and not runtime.engine_ready()
        assert home.text_input(key="login_username") is not None  # the sign-in is there
        assert any("Warming up" in i.value for i in home.info)
        assert not [s for s in home.success if "SQL database" in s.value]
        chat = _run(CHAT, ALICE)
        _no_exceptions(chat)
        assert any("Warming up" in i.value for i in chat.info) and not chat.chat_input
    finally:
        gate.set()
    deadline = time.monotonic() + 120
    while not runtime.engine_ready() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert runtime.engine_ready() and not runtime.warming_up()
    home.run()
    _no_exceptions(home)
    assert any("SQL database** — up" in s.value for s in home.success)
    assert not any("Warming up" in i.value for i in home.info)
    chat = _run(CHAT, ALICE)
    assert chat.chat_input and not any("Warming up" in i.value for i in chat.info)


def test_demo_picker_only_in_demo_mode(app_env: dict[str, str], monkeypatch: pytest.MonkeyPatch,
                                       tmp_path: Path) -> None:
    monkeypatch.setenv("ACCOUNTS_FILE", str(tmp_path / "no-accounts.json"))  # the demo needs no accounts
    at = _run(HOME)
    assert [t.label for t in at.tabs] == ["Account", "Demo"]
    at.selectbox(key="demo_pick").set_value(0)
    at.button(key="demo_enter").click().run()
    assert at.session_state["principal"].user_id == "demo:zhangsan"
    assert at.session_state["principal"].via == "demo"

    monkeypatch.setenv("DEMO_MODE", "false")
    at = _run(HOME)
    assert [t.label for t in at.tabs] == ["Account"]
    assert not [b for b in at.button if b.key in ("demo_enter", "seed_demo")]


def test_demo_mode_is_off_unless_asked_for(app_env: dict[str, str], monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    """Attack: a deployment that never mentions DEMO_MODE offered "Demo support staff" to anyone."""
    monkeypatch.setenv("ACCOUNTS_FILE", str(tmp_path / "no-accounts.json"))
    monkeypatch.delenv("DEMO_MODE")
    at = _run(HOME)
    _no_exceptions(at)
    assert [t.label for t in at.tabs] == ["Account"]
    assert not [b for b in at.button if b.key in ("demo_enter", "seed_demo")]
    admin_page = _run(ADMIN, DEMO_STAFF)  # a demo identity picked earlier is not honoured either
    assert any("sign in" in i.value.lower() for i in admin_page.info) and not admin_page.dataframe


def test_demo_staff_cannot_reach_real_accounts(app_env: dict[str, str], monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    """Attack (issue 19, 1): with an account "zoe" configured and DEMO_MODE on, another browser
    picked Demo -> "Demo support staff" -> Admin and read, exported and erased zoe's memories."""
    engine = runtime.get_engine()
    engine.add("zoe", "My bank card PIN is 4321, keep it secret", actor="test")
    accounts = tmp_path / "accounts.json"
    save_account(accounts, "zoe", "zoe-password-long", "user")
    monkeypatch.setenv("ACCOUNTS_FILE", str(accounts))

    home = _run(HOME)
    _no_exceptions(home)
    assert [t.label for t in home.tabs] == ["Account"]  # accounts configured: no demo at all
    assert not [b for b in home.button if b.key in ("demo_enter", "seed_demo")]
    admin_page = _run(ADMIN, DEMO_STAFF)
    assert any("sign in" in i.value.lower() for i in admin_page.info)
    assert not admin_page.dataframe and not admin_page.tabs

    # Even where the demo is on (no accounts), demo staff sees demo users only, never zoe.
    monkeypatch.setenv("ACCOUNTS_FILE", str(tmp_path / "none.json"))
    seed_demo(engine, ["demo:alice"])
    admin_page = _run(ADMIN, DEMO_STAFF)
    _no_exceptions(admin_page)
    shown = " ".join(str(df.value.to_dict()) for df in admin_page.dataframe)
    assert "demo:alice" in shown and "zoe" not in shown and "PIN is 4321" not in shown
    for box in admin_page.selectbox:
        assert "zoe" not in [str(o) for o in box.options], box.key
    assert engine.list_memories(__import__("memory_core").MemoryQuery(user_id="zoe")).total == 1


def test_wrong_guesses_do_not_lock_staff_out(app_env: dict[str, str], monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    """Attack (issue 19, 5): five wrong guesses in another browser locked the staff name for
    300 s, even against the right password."""
    accounts = tmp_path / "accounts.json"
    save_account(accounts, "kai", "kai-long-password", "staff")
    monkeypatch.setenv("ACCOUNTS_FILE", str(accounts))
    attacker = _run(HOME)
    for guess in ("123456", "password", "kai", "letmein", "qwerty"):
        attacker.text_input(key="login_username").set_value("kai")
        attacker.text_input(key="login_password").set_value(guess)
        attacker.button(key="FormSubmitter:login-Sign in").click().run()
        assert "principal" not in attacker.session_state
    staff = _run(HOME)
    staff.text_input(key="login_username").set_value("kai")
    staff.text_input(key="login_password").set_value("kai-long-password")
    staff.button(key="FormSubmitter:login-Sign in").click().run()
    _no_exceptions(staff)
    assert staff.session_state["principal"].username == "kai"


def test_no_traceback_reaches_the_page(app_env: dict[str, str], monkeypatch: pytest.MonkeyPatch,
                                        caplog: pytest.LogCaptureFixture) -> None:
    """Attack (issue 19, 7): an error in a page showed the full traceback with source paths. Now
    the visitor gets a reference id; the log has the traceback under that id."""
    import logging
    import tomllib

    from services import admin

    config = tomllib.loads((Path(REPO_ROOT) / ".streamlit" / "config.toml").read_text())
    assert config["client"]["showErrorDetails"] == "none"  # Streamlit's own backstop

    def broken(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("boom in /srv/app/services/admin.py with postgresql://ltm:pw@db/ltm")

    monkeypatch.setattr(admin, "users", broken)
    with caplog.at_level(logging.ERROR):
        at = _run(ADMIN, STAFF)
    assert not at.exception
    shown = " ".join(e.value for e in at.error)
    reference = re.search(r"reference: ([0-9a-f]{12})", shown)
    assert reference, shown
    assert "boom" not in shown and "/srv/app" not in shown and "RuntimeError" not in shown
    logged = [r for r in caplog.records if reference.group(1) in r.getMessage()]
    assert logged and logged[0].exc_info and "boom" in str(logged[0].exc_info[1])


def test_chat_answers_a_question_about_the_year_9999(app_env: dict[str, str]) -> None:
    """Attack (issue 19, 7): "what did I do on 9999-12-31?" raised OverflowError in chat."""
    at = _run(CHAT, ALICE)
    at.chat_input[0].set_value("what did I do on 9999-12-31?").run()
    _no_exceptions(at)
    assert at.chat_message[1].markdown[0].value  # a reply, not a crash
    _wait_for_write(at)


def test_pages_ask_for_sign_in(app_env: dict[str, str]) -> None:
    for page in (CHAT, ADMIN, ANALYTICS):
        at = _run(page)
        _no_exceptions(at)
        assert any("sign in" in i.value.lower() for i in at.info), page
        assert not at.chat_input and not at.tabs


def test_chat_round_trip_writes_and_uses_memories(app_env: dict[str, str]) -> None:
    at = _run(CHAT, ZHANG)
    _no_exceptions(at)
    at.chat_input[0].set_value("我对芒果过敏").run()
    _no_exceptions(at)
    assert any("我对芒果过敏" in m.value for m in at.chat_message[0].markdown)
    _wait_for_write(at)
    at.run()  # the next rerun shows what was remembered
    assert any("Remembered" in s.value and "芒果" in s.value for s in at.success)
    engine = runtime.get_engine()
    stored = engine.list_memories(__import__("memory_core").MemoryQuery(user_id="zhangsan")).items
    assert any("芒果" in r.content for r in stored)
    source_ids = next(r.source for r in stored if "芒果" in r.content)
    assert engine.messages(source_ids)[0]["content"] == "我对芒果过敏"  # provenance recorded

    first_session = at.session_state["chat_session"]
    at.button(key="chat_new_session").click().run()
    assert at.session_state["chat_session"] != first_session
    at.chat_input[0].set_value("给我推荐点好吃的零食").run()
    _no_exceptions(at)
    reply = at.chat_message[1].markdown[0].value
    assert "芒果" not in reply.replace("避开芒果", "").replace("芒果过敏", "")  # recommends no mango
    expander = at.chat_message[1].expander[0]
    assert "memories used" in expander.label and "retrieval" in expander.label
    tables = [t.value for t in expander.table]
    constraints = next(t for t in tables if "constraint" in t.columns)
    assert "我对芒果过敏" in set(constraints["constraint"])  # the allergy shaped the reply as a constraint
    for used in (t for t in tables if "memory" in t.columns):
        assert {"date", "relevance", "importance (1-5)", "recency"} <= set(used.columns)
        assert all(1 <= int(i) <= 5 for i in used["importance (1-5)"])
    _wait_for_write(at)
    # the past session is listed in the sidebar
    assert any(b.key == f"chat_open_{first_session}" for b in at.sidebar.button)


def test_a_reopened_session_shows_the_memories_each_reply_used(app_env: dict[str, str]) -> None:
    """Reopening an earlier session (here from a new browser session, as after a reload) lost the
    "memories used" panel under each reply; a memory expired since says so."""
    from services.auth import Principal

    hana = Principal("hana", "Hana", "user", "hana", via="password")
    engine = runtime.get_engine()
    for fact in ("My bike is a red Brompton", "I ride my bike to work every day", "我的自行车是红色的"):
        engine.add("hana", fact, actor="test")
    at = _run(CHAT, hana)
    at.chat_input[0].set_value("Tell me about my bike").run()
    _no_exceptions(at)
    session = at.session_state["chat_session"]
    live = at.chat_message[1].expander[0]
    used = next(v for v in (t.value for t in live.table) if "memory" in v.columns)
    assert len(used) >= 2 and "now" not in used.columns
    _wait_for_write(at)
    expired = next(m for m in engine.list_memories(__import__("memory_core").MemoryQuery(user_id="hana")).items
                   if m.content == used["memory"].iloc[0])
    engine.expire(expired.memory_id, actor="test", user_id="hana")

    later = _run(CHAT, hana)  # a new browser session: nothing of the first one in its state
    later.sidebar.button(key=f"chat_open_{session}").click().run()
    _no_exceptions(later)
    assert later.session_state["chat_session"] == session
    assert [m.name for m in later.chat_message] == ["user", "assistant"]
    panel = later.chat_message[1].expander[0]
    assert "memories used" in panel.label
    assert any("From an earlier session" in c.value and "changed since" in c.value for c in panel.caption)
    table = next(v for v in (t.value for t in panel.table) if "memory" in v.columns)
    assert list(table["memory"]) == list(used["memory"])
    assert list(table["now"]) == ["expired since"] + [""] * (len(table) - 1)


def test_chat_forget_that_deletes_the_last_memory(app_env: dict[str, str]) -> None:
    at = _run(CHAT, ALICE)
    at.chat_input[0].set_value("My locker code at the gym is 4411").run()
    _wait_for_write(at)
    at.run()
    remembered = at.session_state["chat_last_remembered"]
    assert remembered.created
    at.chat_input[0].set_value("forget that").run()
    _no_exceptions(at)
    engine = runtime.get_engine()
    for memory_id in remembered.created:
        with pytest.raises(Exception):
            engine.get(memory_id)
        assert engine.history(memory_id)[-1].action == "delete"
        assert engine.history(memory_id)[-1].actor == ALICE.actor


def test_admin_refuses_an_end_user(app_env: dict[str, str]) -> None:
    at = _run(ADMIN, ZHANG)
    _no_exceptions(at)
    assert any("support staff only" in e.value and "signed in as an end user" in e.value for e in at.error)
    assert not at.tabs and not at.dataframe


def test_admin_tells_an_analyst_their_role(app_env: dict[str, str]) -> None:
    """An analyst refused on Admin was told "You are signed in as an end user"."""
    at = _run(ADMIN, ANALYST)
    _no_exceptions(at)
    refused = " ".join(e.value for e in at.error)
    assert "signed in as an analyst" in refused and "end user" not in refused
    assert not at.tabs and not at.dataframe


def test_admin_edit_lands_in_history(app_env: dict[str, str]) -> None:
    engine = runtime.get_engine()
    added = engine.add("bob", "Bob's favourite colour is green", actor="test")
    memory_id = added.created[0]
    engine.update(memory_id, actor="test", importance=2)  # so it has an expiry date to keep or drop
    at = _run(ADMIN, STAFF)
    _no_exceptions(at)
    at.selectbox(key="admin_f_user").set_value("bob").run()
    at.selectbox(key="admin_selected").set_value(memory_id).run()
    at.text_area(key=f"admin_content_{memory_id}").set_value("Bob's favourite colour is blue")
    at.slider(key=f"admin_imp_{memory_id}").set_value(4)
    at.button(key=f"FormSubmitter:admin_edit_{memory_id}-Save changes").click().run()
    _no_exceptions(at)
    record = engine.get(memory_id)
    assert record.content == "Bob's favourite colour is blue" and record.importance == 4
    assert record.expires_at is None  # the untouched expiry field is not re-sent: importance 4 never expires
    last = engine.history(memory_id)[-1]
    assert last.action == "update" and last.actor == STAFF.actor
    assert last.before["content"] == "Bob's favourite colour is green"
    assert last.after["content"] == "Bob's favourite colour is blue"
    # the page shows the diff of that edit
    assert any("update" in m.value and STAFF.actor in m.value for m in at.markdown)
    # and search finds the new text (re-embedded, re-indexed)
    assert engine.search("bob", "favourite colour blue").results[0].memory_id == memory_id


_UNESCAPED_MARKUP = re.compile(r"(?<!\\)!\[|(?<!\\)\]\(|(?<![\\`])https?://")


def test_admin_shows_user_text_as_text_and_quotes_formulas(app_env: dict[str, str]) -> None:
    """Attack (issue 19, 4 and 7): a chat message =HYPERLINK(...) reached the Admin table's CSV
    download unescaped, and an image in a chat message (provenance, merge preview) made the
    staff browser fetch an external URL."""
    from memory_core.maintenance import MergePlan
    from services import admin

    engine = runtime.get_engine()
    hostile = '=HYPERLINK("http://203.0.113.9/x","click") ![pixel](http://203.0.113.9/p.png) **now**'
    engine.record_message(message_id="m-hostile", user_id="mallory", session_id="s-1", role="user", content=hostile)
    memory_id = engine.add("mallory", hostile, source="m-hostile", actor="test").created[0]
    stored = engine.get(memory_id).content
    assert "![pixel](" in stored  # the attack text is stored as written (it is the user's text)
    at = AppTest.from_file(ADMIN, default_timeout=TIMEOUT)
    at.session_state["principal"] = STAFF
    proposal = MergePlan("mallory", (memory_id,), (), hostile)
    at.session_state["admin_merge_plan"] = ("mallory", admin.MergePlan(True, [proposal], {memory_id: stored}, "1"))
    at.run()
    at.selectbox(key="admin_f_user").set_value("mallory").run()
    at.selectbox(key="admin_selected").set_value(memory_id).run()
    at.selectbox(key="admin_user_target").set_value("mallory").run()
    _no_exceptions(at)

    table = at.dataframe[0].value
    assert list(table["memory"]) == ["'" + stored]  # what the table's CSV download writes
    rendered = [e.value for kind in ("markdown", "caption", "info", "warning", "error", "success")
                for e in getattr(at, kind)]
    offending = [v for v in rendered if _UNESCAPED_MARKUP.search(str(v))]
    assert not offending, offending
    plain = [t.value for t in at.text]
    assert hostile in plain  # provenance: the source message, as plain text
    assert any(stored in t and t.startswith("→") for t in plain)  # merge preview, as plain text


def test_admin_merge_apply_reports_a_stale_proposal(app_env: dict[str, str]) -> None:
    """A plan gone stale since the preview is reported (no traceback) and the plan is cleared."""
    from memory_core.maintenance import MergePlan
    from services import admin

    engine = runtime.get_engine()
    ids = [engine.add("bob", text, actor="test").created[0]
           for text in ("Bob drives a red Honda", "Bob's Honda is from 2015")]
    stale = MergePlan("bob", tuple(ids), (), "Bob drives a red 2015 Honda")
    engine.expire(ids[1], actor="test")
    at = AppTest.from_file(ADMIN, default_timeout=TIMEOUT)
    at.session_state["principal"] = STAFF
    at.session_state["admin_merge_plan"] = ("bob", admin.MergePlan(True, [stale], {}, "1 merge(s) proposed."))
    at.run()
    at.button(key="admin_merge_apply").click().run()
    _no_exceptions(at)
    assert any("out of date" in w.value for w in at.warning)
    assert "admin_merge_plan" not in at.session_state
    assert engine.get(ids[0]).status.value == "active"


def test_analytics_renders_charts_on_seeded_data(app_env: dict[str, str]) -> None:
    engine = runtime.get_engine()
    seed_demo(engine, ["demo:alice"])
    for query in ("where do I live", "what do I drink in the afternoon", "where do I live"):
        engine.search("demo:alice", query)
    engine.flush()
    at = _run(ANALYTICS, STAFF)
    _no_exceptions(at)
    charts = at.get("plotly_chart")
    assert len(charts) >= 7, [s.value for s in at.subheader]
    assert int(at.metric[0].value.replace(",", "")) >= 10  # active memories

    end_user = _run(ANALYTICS, ZHANG)
    assert any("analysts" in e.value for e in end_user.error)
    assert not end_user.get("plotly_chart")


def test_chat_refuses_a_message_the_engine_rejects_plainly(app_env: dict[str, str]) -> None:
    """The input is capped at ``max_input_chars`` (Streamlit cuts a longer value to it), and a
    message the engine still rejects (here one of only zero-width spaces) shows the reason, not a
    traceback: the text is kept to copy, nothing is recorded, and the chat goes on."""
    from services.chat import ChatService

    at = _run(CHAT, ALICE)
    engine = runtime.get_engine()
    assert at.chat_input[0].proto.max_chars == engine.settings.max_input_chars == 100_000
    invisible = "\u200b\u200b\u200b"
    at.chat_input[0].set_value(invisible).run()
    _no_exceptions(at)
    assert any("not sent" in e.value and "no visible character" in e.value for e in at.error)
    assert at.session_state["chat_unsent"]["text"] == invisible
    assert not [b for b in at.button if b.key == "chat_resend"]  # resending would fail the same way
    assert not at.chat_message  # not shown as sent
    session = at.session_state["chat_session"]
    assert ChatService(engine).transcript(ALICE, session) == []
    at.chat_input[0].set_value("I like green tea").run()
    _no_exceptions(at)
    assert any("I like green tea" in m.value for m in at.chat_message[0].markdown)
    # the next successful send clears the stale "not sent" error and the unsent box
    assert not at.session_state["chat_unsent"] and not at.error
    assert not [b for b in at.button if b.key == "chat_dismiss"]
    assert not [e for e in at.expander if "unsent" in e.label]
    _wait_for_write(at)
    at.run()  # shows what was remembered
    _no_exceptions(at)
    assert not at.error


def test_chat_notice_names_only_what_was_created(app_env: dict[str, str]) -> None:
    """``contents`` follows ``memory_ids`` (a refreshed old memory first here): the notice, whose
    Undo deletes ``created``, must show the created texts."""
    from services.chat import Remembered

    remembered = Remembered("m-1", ["old-id", "new-id"], ["new-id"], ["old-id"],
                            ["I live in Lisbon", "I keep bees on my roof"], [],
                            created_contents=["I keep bees on my roof"])
    at = AppTest.from_file(CHAT, default_timeout=TIMEOUT)
    at.session_state["principal"] = ALICE
    at.session_state["chat_session"] = "s-bees"
    at.session_state["chat_notice_session"] = "s-bees"  # the session whose last reply it belongs to
    at.session_state["chat_last_remembered"] = remembered
    at.run()
    _no_exceptions(at)
    shown = " ".join(s.value for s in at.success)
    assert "Remembered: I keep bees on my roof" in shown and "Lisbon" not in shown
    at.button(key="chat_new_session").click().run()  # another session: not under its replies
    _no_exceptions(at)
    assert not [s for s in at.success if "Remembered" in s.value]


def _cut_database(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Point the running app's repository at a port nothing listens on (the SQL database is now
    unreachable); ``monkeypatch.undo()`` brings it back. Returns the dead SQL engine to dispose."""
    import socket

    from sqlalchemy.orm import sessionmaker

    from memory_core.storage.database import create_sql_engine

    engine = runtime.get_engine()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    dead = create_sql_engine(f"postgresql+psycopg2://postgres@127.0.0.1:{port}/x")
    monkeypatch.setattr(engine.repo, "engine", dead)
    monkeypatch.setattr(engine.repo, "_sessions", sessionmaker(dead, expire_on_commit=False))
    return dead


def test_chat_survives_a_database_outage(app_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The SQL database becomes unreachable (the repository pointed at a closed port): the page
    says so instead of a traceback, keeps the typed message, and resends it once it is back."""
    from services.chat import DATABASE_UNAVAILABLE, ChatService

    at = _run(CHAT, ALICE)
    _no_exceptions(at)
    engine = runtime.get_engine()
    dead = _cut_database(monkeypatch)

    at.run()
    _no_exceptions(at)
    assert any(DATABASE_UNAVAILABLE in w.value for w in at.sidebar.warning)
    at.chat_input[0].set_value("I keep bees on my roof").run()
    _no_exceptions(at)
    assert any(DATABASE_UNAVAILABLE in e.value for e in at.error)
    assert at.session_state["chat_unsent"]["text"] == "I keep bees on my roof"  # kept, not lost
    assert not at.chat_message

    monkeypatch.undo()  # the database is back
    dead.dispose()
    at.button(key="chat_resend").click().run()
    _no_exceptions(at)
    assert not at.session_state["chat_unsent"] and not at.error
    assert any("I keep bees on my roof" in m.value for m in at.chat_message[0].markdown)
    _wait_for_write(at)
    transcript = ChatService(engine).transcript(ALICE, at.session_state["chat_session"])
    assert [m["content"] for m in transcript][:1] == ["I keep bees on my roof"]


@pytest.mark.parametrize("page", [ADMIN, ANALYTICS])
def test_staff_pages_say_when_the_database_is_down(app_env: dict[str, str], monkeypatch: pytest.MonkeyPatch,
                                                   page: str) -> None:
    """One clear notice instead of a driver traceback under the first table."""
    at = _run(page, STAFF)
    _no_exceptions(at)
    dead = _cut_database(monkeypatch)
    at.run()
    _no_exceptions(at)
    assert any("database is unavailable" in e.value for e in at.error)
    monkeypatch.undo()
    dead.dispose()
    at.run()
    _no_exceptions(at)
    assert not any("database is unavailable" in e.value for e in at.error)


def _flat(node, out=None):  # type: ignore[no-untyped-def]
    """(type, value) of every element in page order (blocks by type, with value None)."""
    out = [] if out is None else out
    children = getattr(node, "children", None)
    out.append((getattr(node, "type", ""), None if children else getattr(node, "value", None)))
    for child in (children.values() if isinstance(children, dict) else children or []):
        _flat(child, out)
    return out


def test_chat_notice_sits_under_the_reply_it_belongs_to(app_env: dict[str, str]) -> None:
    """The Remembered/Undo notice was at the top of the page, out of view in a longer chat."""
    at = _run(CHAT, ALICE)
    for text in ("What is the capital of France?", "I keep two goats called Salt and Pepper"):
        at.chat_input[0].set_value(text).run()
        _wait_for_write(at)
    at.run()
    _no_exceptions(at)
    order = _flat(at.main)
    notice = next(i for i, (kind, value) in enumerate(order) if kind == "success" and "Remembered" in str(value))
    messages = [i for i, (kind, _) in enumerate(order) if kind == "chat_message"]
    assert len(messages) == 4 and notice > messages[-1]  # after the last reply, not above the chat
    assert not [i for i, (kind, _) in enumerate(order[:messages[-1]]) if kind == "success"]


def test_chat_shows_what_the_user_typed_as_text(app_env: dict[str, str]) -> None:
    """Markup in a message (an image that fetches a URL, a link, bold) is shown as typed, in the
    user's message and in the offline reply that says it back."""
    at = _run(CHAT, ALICE)
    hostile = "My website is **[here](http://203.0.113.9/x)** with a ![pixel](http://203.0.113.9/p.png) logo"
    at.chat_input[0].set_value(hostile).run()
    _wait_for_write(at)  # done before the next message is sent: that message must not be lost
    at.chat_input[0].set_value("What is my website?").run()
    _no_exceptions(at)
    shown = [m.value for message in at.chat_message for m in message.markdown]
    assert len(shown) == 4 and "203" in shown[3], shown  # the reply says the memory back...
    offending = [v for v in shown if _UNESCAPED_MARKUP.search(v) or re.search(r"(?<!\\)\*\*", v)]
    assert not offending, offending  # ...as text, like the message itself
    _wait_for_write(at)


def test_guided_demo_is_only_for_demo_identities(app_env: dict[str, str]) -> None:
    at = _run(CHAT, ALICE)  # an account, not a demo identity
    _no_exceptions(at)
    assert not [b for b in at.button if b.key.startswith("chat_try_")]


def test_admin_maintenance_tab_reads_in_words_and_archives_on_demand(app_env: dict[str, str]) -> None:
    """The tab showed raw dicts and cron strings and had no "archive now" (the README says archive
    runs on demand)."""
    from datetime import datetime, timedelta, timezone

    engine = runtime.get_engine()
    old = engine.add("olga", "Nice weather for a walk", actor="test",
                     at=datetime.now(timezone.utc) - timedelta(days=400)).created[0]
    assert engine.get(old).importance <= engine.settings.archive_max_importance
    at = _run(ADMIN, STAFF)
    _no_exceptions(at)
    at.button(key="admin_run_archive").click().run()
    _no_exceptions(at)
    said = " ".join(s.value for s in at.success)
    assert "Archive" in said and "done" in said and "1 archived" in said, said
    assert engine.get(old).status.value == "archived"
    assert engine.job_runs(job="archive")[0].counts["started_by"] == STAFF.actor  # audited: who ran it
    at.button(key="admin_run_expiry_cleanup").click().run()
    _no_exceptions(at)
    tables = [df.value for df in at.dataframe]
    scheduled = next(t for t in tables if "next run" in t.columns)
    runs = next(t for t in tables if "started by" in t.columns)
    assert set(scheduled["job"]) >= {"Expiry cleanup", "Archive", "Reconcile SQL and Milvus"}
    assert "every day at 02:30" in set(scheduled["when"])
    archive_row = scheduled[scheduled["job"] == "Archive"].iloc[0]
    assert archive_row["last outcome"] == "✅ done" and "1 archived" in archive_row["what it did"]
    assert list(runs["job"][:2]) == ["Expiry cleanup", "Archive"] and set(runs["started by"][:2]) == {STAFF.actor}
    shown = " ".join(str(v) for t in (scheduled, runs) for v in t.to_numpy().ravel()) + said
    assert "{" not in shown and "'" not in shown and "cron[" not in shown  # no dict reprs, no trigger strings


def test_admin_expire_asks_first_and_never_expires_disables_the_date(app_env: dict[str, str]) -> None:
    engine = runtime.get_engine()
    memory_id = engine.add("erin", "Erin's parcel locker is number 12", actor="test").created[0]
    engine.update(memory_id, actor="test", importance=2)  # gets an expiry date
    at = _run(ADMIN, STAFF)
    at.selectbox(key="admin_f_user").set_value("erin").run()
    at.selectbox(key="admin_selected").set_value(memory_id).run()
    assert not at.date_input(key=f"admin_exp_{memory_id}").disabled
    at.checkbox(key=f"admin_never_{memory_id}").check().run()
    _no_exceptions(at)
    assert at.date_input(key=f"admin_exp_{memory_id}").disabled  # ticked: the date cannot be edited

    at.button(key="admin_expire").click().run()
    _no_exceptions(at)
    assert any("Expire this memory?" in w.value for w in at.warning)
    assert engine.get(memory_id).status.value == "active"  # not yet: it asked first
    at.button(key="admin_expire_no").click().run()
    assert engine.get(memory_id).status.value == "active" and not any("Expire this" in w.value for w in at.warning)
    at.button(key="admin_expire").click().run()
    at.button(key="admin_expire_yes").click().run()
    _no_exceptions(at)
    assert engine.get(memory_id).status.value == "expired"
    assert engine.history(memory_id)[-1].action == "expire" and engine.history(memory_id)[-1].actor == STAFF.actor


def test_admin_user_history_names_the_memory(app_env: dict[str, str]) -> None:
    """Admin's recent history of a user showed memory ids only."""
    engine = runtime.get_engine()
    engine.add("hugo", "Hugo collects vintage radios", actor="test")
    at = _run(ADMIN, STAFF)
    at.selectbox(key="admin_user_target").set_value("hugo").run()
    _no_exceptions(at)
    history = next(df.value for df in at.dataframe if "action" in df.value.columns)
    assert "Hugo collects vintage radios" in set(history["memory"])


def test_admin_memory_history_names_what_replaced_it(app_env: dict[str, str]) -> None:
    """A superseded memory's history showed the id of what replaced it only."""
    engine = runtime.get_engine()
    old = engine.add("ines", "I live in Lisbon", actor="test").created[0]
    new = engine.add("ines", "I moved to Porto, I live in Porto now", actor="test").created[0]
    assert engine.get(old).superseded_by == new
    at = _run(ADMIN, STAFF)
    at.selectbox(key="admin_f_user").set_value("ines").run()
    at.selectbox(key="admin_selected").set_value(old).run()
    _no_exceptions(at)
    changes = [df.value for df in at.dataframe if list(df.value.columns) == ["field", "before", "after"]]
    replaced = [row for df in changes for row in df.to_dict("records") if row["field"] == "superseded_by"]
    assert replaced and replaced[0]["after"] == f"“I moved to Porto, I live in Porto now” · {new[:8]}"


def test_home_demo_counts_refresh_after_loading(app_env: dict[str, str], monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    """"Loaded 24 memories" used to sit above "no memories yet" for both demo users."""
    monkeypatch.setenv("ACCOUNTS_FILE", str(tmp_path / "no-accounts.json"))
    from services import admin

    engine = runtime.get_engine()
    for user in ("demo:zhangsan", "demo:alice"):  # earlier tests of this module may have loaded them
        admin.erase_user(STAFF, engine, user, user)
    at = _run(HOME)
    assert "no memories yet" in " ".join(m.value for m in at.markdown)
    at.button(key="seed_demo").click().run()
    _no_exceptions(at)
    assert any(s.value.startswith("Loaded") for s in at.success)
    counts = " ".join(m.value for m in at.markdown if "—" in m.value)
    assert "no memories yet" not in counts and "memories stored" in counts, counts


def test_analytics_cache_hit_rate_counts_the_hits(app_env: dict[str, str], monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    """The rate read 0% after hits: two repeats of a question in new sessions are two hits of three."""
    monkeypatch.setenv("ACCOUNTS_FILE", str(tmp_path / "no-accounts.json"))  # demo identities need none
    engine = runtime.get_engine()
    seed_demo(engine, ["demo:alice"])
    engine.flush()
    before = len(engine.repo.metrics())
    at = _run(CHAT, DEMO_ALICE)
    for _ in range(3):
        at.chat_input[0].set_value("Which city is my new address in?").run()
        _wait_for_write(at)
        at.button(key="chat_new_session").click().run()
    engine.flush()
    rows = engine.repo.metrics()[: len(engine.repo.metrics()) - before]
    assert sum(bool(r["cache_hit"]) for r in rows) >= 2, rows
    from services import analytics

    numbers = analytics.summary(STAFF, engine)
    assert numbers["cache_hits"] >= 2 and numbers["cache_hit_rate"] > 0
    page = _run(ANALYTICS, STAFF)
    _no_exceptions(page)
    rate = next(m for m in page.metric if m.label == "Cache hit rate")
    assert rate.value == f"{numbers['cache_hit_rate']:.0%}" and rate.value != "0%"
    assert f"{numbers['cache_hits']} of {numbers['searches']} searches" in rate.proto.help


def test_admin_filters_round_trip_through_the_url() -> None:
    from datetime import date

    from ui.admin_filters import from_params, to_params

    values = {"admin_f_user": "bob", "admin_f_types": ["episodic"], "admin_f_status": ["active", "expired"],
              "admin_f_imp": (2, 4), "admin_f_text": "tea & cake", "admin_f_dates": (date(2026, 1, 2), date(2026, 2, 3)),
              "admin_f_sort": "importance", "admin_f_desc": False, "admin_page": 3}
    params = to_params(values)
    assert params == {"user": "bob", "type": ["episodic"], "status": ["active", "expired"], "imp": "2-4",
                      "q": "tea & cake", "created": "2026-01-02..2026-02-03", "sort": "importance", "desc": "0",
                      "page": "3"}
    as_lists = {k: v if isinstance(v, list) else [v] for k, v in params.items()}
    assert from_params(as_lists, ["", "bob"], ["declarative", "episodic"], ["active", "expired"],
                       ["created_at", "importance"]) == values
    assert to_params({}) == {}  # defaults say nothing
    # what the widgets would not allow is dropped, not trusted
    bad = {"user": ["zoe"], "type": ["secret"], "status": ["active", "bogus"], "imp": ["0-9"], "created": ["x..y"],
           "sort": ["password"], "desc": ["maybe"], "page": ["-1"]}
    assert from_params(bad, ["", "bob"], ["episodic"], ["active"], ["created_at"]) == {
        "admin_f_types": [], "admin_f_status": ["active"]}


def test_admin_opens_the_view_its_url_names_and_keeps_it_there(app_env: dict[str, str], monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path) -> None:
    """A reload or a typed URL lost the Admin filters."""
    monkeypatch.setenv("ACCOUNTS_FILE", str(tmp_path / "no-accounts.json"))  # demo staff below needs no accounts
    engine = runtime.get_engine()
    engine.add("bob", "Bob drinks oolong tea every morning", actor="test")
    at = AppTest.from_file(ADMIN, default_timeout=TIMEOUT)
    at.session_state["principal"] = STAFF
    at.query_params["user"] = "bob"
    at.query_params["q"] = "oolong"
    at.query_params["status"] = ["active", "expired"]
    at.query_params["sort"] = "importance"
    at.run()
    _no_exceptions(at)
    assert at.selectbox(key="admin_f_user").value == "bob"
    assert at.text_input(key="admin_f_text").value == "oolong"
    assert at.multiselect(key="admin_f_status").value == ["active", "expired"]
    assert at.selectbox(key="admin_f_sort").value == "importance"
    assert list(at.dataframe[0].value["memory"]) == ["Bob drinks oolong tea every morning"]

    at.text_input(key="admin_f_text").set_value("tea").run()  # a change is written back to the URL
    _no_exceptions(at)
    assert at.query_params["q"] in ("tea", ["tea"]) and at.query_params["user"] in ("bob", ["bob"])

    stranger = AppTest.from_file(ADMIN, default_timeout=TIMEOUT)
    stranger.session_state["principal"] = DEMO_STAFF
    stranger.query_params["user"] = "bob"  # not a user demo staff may see: ignored
    stranger.run()
    _no_exceptions(stranger)
    assert stranger.selectbox(key="admin_f_user").value == ""


@pytest.mark.parametrize("who, labels", [
    (None, ["Home"]),
    (ALICE, ["Home", "Chat"]),
    (ANALYST, ["Home", "Chat", "Analytics"]),
    (STAFF, ["Home", "Chat", "Admin", "Analytics"]),
    (DEMO_STAFF, ["Home", "Chat", "Admin", "Analytics"]),
])
def test_sidebar_menu_names_home_and_offers_only_pages_the_role_may_open(who, labels) -> None:  # type: ignore[no-untyped-def]
    """Streamlit's own menu named the entry page "app" and listed Admin to everyone (issue 23);
    the app's menu says "Home" and leaves out what the role would be refused. The real pages
    are behind each entry (the browser test clicks them)."""
    from ui.nav import nav_entries

    entries = nav_entries(who)
    assert [label for _, label, _ in entries] == labels
    assert all((REPO_ROOT / page).is_file() for page, _, _ in entries)
    assert "showSidebarNavigation = false" in (REPO_ROOT / ".streamlit" / "config.toml").read_text()
