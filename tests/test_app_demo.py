"""The guided demo in the chat page, through Streamlit's AppTest, on the real model and Milvus Lite.

Apart from ``test_app_pages.py`` because it runs on the real parts in every lane: its update step
("I moved to ...") must replace the old address, which takes the model's understanding of the two
sentences, not shared words (``tests/lanes.py``).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from services import runtime
from services.demo_data import seed_demo
from tests.app_support import DEMO_ALICE, DEMO_ZHANG  # app_env: a fixture, registered in conftest.py
from tests.test_app_pages import CHAT, _no_exceptions, _run, _wait_for_write


@pytest.mark.parametrize("principal, city, old_place, forgotten", [
    (DEMO_ALICE, "Toronto", "Seattle", "forgotten"),
    (DEMO_ZHANG, "成都", "西湖区", "忘掉"),
])
def test_guided_demo_plays_each_step_in_the_chat(app_env: dict[str, str], principal, city: str,  # type: ignore[no-untyped-def]
                                                 old_place: str, forgotten: str, monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    """Demo mode's "try this" panel: each button sends its messages and the promised outcome shows."""
    monkeypatch.setenv("ACCOUNTS_FILE", str(tmp_path / "no-accounts.json"))  # demo identities need none
    seed_demo(runtime.get_engine(), [principal.user_id])
    at = _run(CHAT, principal)
    _no_exceptions(at)
    assert [b.key for b in at.button if b.key.startswith("chat_try_")] == [
        "chat_try_remember", "chat_try_recall", "chat_try_update", "chat_try_forget"]

    at.button(key="chat_try_remember").click().run()
    _wait_for_write(at)
    at.run()
    _no_exceptions(at)
    assert any("Remembered" in s.value and city in s.value for s in at.success)

    first_session = at.session_state["chat_session"]
    at.button(key="chat_try_recall").click().run()
    _no_exceptions(at)
    assert at.session_state["chat_session"] != first_session  # asked in a new session
    assert len(at.chat_message) == 2 and city in at.chat_message[1].markdown[0].value
    _wait_for_write(at)

    at.button(key="chat_try_update").click().run()
    _wait_for_write(at)
    at.run()
    _no_exceptions(at)
    assert any("replaces what you said before" in s.value and old_place in s.value for s in at.success)

    at.button(key="chat_try_forget").click().run()
    _no_exceptions(at)
    assert forgotten in at.chat_message[-1].markdown[0].value
    engine = runtime.get_engine()
    found = engine.search(principal.user_id, "locker code 4411 储物柜密码", min_relevance=0)
    assert not any("4411" in r.content for r in found.results)
