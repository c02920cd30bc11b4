"""The guided demo: a few "try this" prompts that show, in the user's language, what the memory
does: remember, recall in another session, replace an old fact with a newer one, forget on request.

Each step is plain data the chat page plays through ``ChatService`` like typed messages, and
``tests/test_services_chat.py`` plays the same steps on a real engine and checks that each does
what its hint promises, so the panel cannot drift from the product. The update step replaces
the demo history's address, so it needs the demo history loaded (the page offers it).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DemoStep:
    key: str
    title: str  # the button
    hint: str  # what to look for after it ran
    messages: tuple[str, ...]  # sent one after the other, as if typed
    new_session: bool = False  # start a new session first


_EN = (
    DemoStep("remember", "① Tell it something", "Look for “🧠 Remembered” under the reply (Undo is beside it).",
             ("My sister Maya lives in Toronto and teaches piano.",)),
    DemoStep("recall", "② Ask in a new session", "A brand-new session, yet the answer names Toronto.",
             ("Where does my sister live?",), new_session=True),
    DemoStep("update", "③ Change a fact",
             "The notice says this replaces your Seattle address; ask “Where do I live now?” to check.",
             ("I moved again: my new address is 5 Pine Road in Denver.",)),
    DemoStep("forget", "④ Ask it to forget", "The locker code is remembered, then deleted on request.",
             ("My gym locker code is 4411.", "forget that")),
)
_ZH = (
    DemoStep("remember", "① 告诉它一件事", "回复下方会出现“🧠 Remembered”，旁边可以撤销（Undo）。",
             ("我妹妹叫小雨，在成都读大学。",)),
    DemoStep("recall", "② 换个会话再问", "这是一个全新的会话，回答里仍然有“成都”。",
             ("我妹妹在哪里读大学？",), new_session=True),
    DemoStep("update", "③ 更新一个事实", "提示会说明这条替换了原来的西湖区地址；再问“我现在住在哪里？”确认。",
             ("我搬到上海浦东了。",)),
    DemoStep("forget", "④ 让它忘掉", "储物柜密码先被记住，然后按你的要求删掉。",
             ("我的健身房储物柜密码是4411。", "忘掉这个")),
)
STEPS: dict[str, tuple[DemoStep, ...]] = {"en": _EN, "zh": _ZH}
NEW_SESSION_NOTE = {"en": "In a new session: ", "zh": "新会话中："}


def steps_for(language: str) -> tuple[DemoStep, ...]:
    """The steps in ``language`` ("zh" or "en"; anything else gets English)."""
    return STEPS.get(language, _EN)
