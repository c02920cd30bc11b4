"""Play each truth scenario through the chat path and judge what the memory holds afterwards.

Every user turn goes through ``ChatService`` as the chat page sends it: the turn is recorded,
memories are retrieved and a reply is composed (offline unless an endpoint is configured), then
the service decides what to store and hands it to the engine; an assistant line the scenario
gives is recorded just before the user's turn, so the service sees it as the message the user
answered. The query is one more chat turn; its retrieved memories, constraints, reply and the
endpoint prompt the project would build are what the checks read.

One engine (SQLite + Milvus Lite by default) holds every scenario, each as its own user, with a
fixed clock moved to each turn's day.
"""
from __future__ import annotations

import json
import re
import uuid
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

from memory_core import FixedClock, MemoryEngine
from memory_core.llm.base import ChatMessage
from memory_core.llm.prompt import build_reply_messages
from memory_core.records import MemoryQuery
from memory_core.types import MemoryStatus
from services.auth import Principal
from services.chat import ChatService, Remembered

SCENARIOS = Path(__file__).with_name("scenarios.jsonl")
START = datetime(2025, 1, 6, 9, 0, tzinfo=timezone.utc)
KINDS = ("update", "correction", "negation", "question", "reply", "stable", "unrelated", "repeat", "constraint")


def load(path: Path = SCENARIOS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def half(scenario_id: str) -> str:
    """The fixed split: "tune" or "validate", by a hash of the id (stable across runs and
    machines, independent of the file's order)."""
    return "tune" if zlib.crc32(scenario_id.encode("utf-8")) % 2 == 0 else "validate"


@dataclass
class Outcome:
    """One scenario's verdict and the reasons it failed (empty when it passed)."""

    scenario_id: str
    kind: str
    lang: str
    passed: bool
    failures: list[str] = field(default_factory=list)
    recalled: list[str] = field(default_factory=list)
    reply: str = ""


def _contains(text: str, needle: str) -> bool:
    return needle.casefold() in text.casefold()


_EN_WORD = re.compile(r"[a-z]")


def mentions(reply: str, word: str) -> bool:
    """``word`` as a whole word (English) or a substring (Chinese) of ``reply``."""
    if _EN_WORD.search(word):
        return re.search(rf"(?<![a-z]){re.escape(word.lower())}(?:e?s)?(?![a-z])", reply.lower()) is not None
    return word in reply


# Sentences of a reply that explain what was left out ("I left out peanuts (you're allergic to
# peanuts)", "已避开芒果（你对芒果过敏）") name the forbidden thing to exclude it.
_EXCLUSION = re.compile(r"left out|leaving out|avoid|without|instead of|no \w+|not |don't|can't|cannot|never|allerg|"
                        r"keep in mind|"
                        r"remember|hate|dislike|已避开|避开|不含|没有|不要|不能|过敏|不吃|忌口|以外|请记得|讨厌|"
                        # a reply that repeats the rule itself ("医生让你戒海鲜戒啤酒 动物内脏也别碰") names it to keep it
                        r"戒|别(?:碰|吃|喝)", re.IGNORECASE)


def suggestions_part(reply: str) -> str:
    """The reply without the sentences that name something to exclude it, and without what it
    quotes the user as saying (a quoted rule of several sentences, "... gout. I'm supposed to stay
    off red meat, shellfish and beer.", suggests none of them)."""
    reply = re.sub(r'"[^"]*"|“[^”]*”', " ", reply)
    sentences = re.split(r"(?<=[.!?。！？\n])", reply)
    return "".join(s for s in sentences if not _EXCLUSION.search(s))


class TruthRun:
    """Plays scenarios on one engine (its clock must be a ``FixedClock``)."""

    def __init__(self, engine: MemoryEngine, chat: ChatService | None = None) -> None:
        if not isinstance(engine.clock, FixedClock):
            raise ValueError("the truth benchmark needs an engine with a FixedClock")
        self.engine = engine
        self.clock: FixedClock = engine.clock
        self.chat = chat or ChatService(engine)

    def play(self, scenario: dict[str, Any]) -> Outcome:
        principal, stored = self.play_turns(scenario)
        return self.ask(scenario, principal, stored)

    def play_turns(self, scenario: dict[str, Any]) -> tuple[Principal, dict[str, Remembered]]:
        """The scenario's user turns through the chat path; the clock ends at the last turn."""
        user = f"truth-{scenario['id']}-{uuid.uuid4().hex[:6]}"
        principal = Principal(username=user, display_name=user, role="user", user_id=user)
        stored: dict[str, Remembered] = {}
        for index, turn in enumerate(scenario["turns"]):
            at = START + timedelta(days=turn["day"], minutes=3 * index)
            self.clock.set(at)
            session = f"{user}-d{turn['day']}"
            if turn.get("assistant"):
                self.engine.record_message(message_id=uuid.uuid4().hex, user_id=user, session_id=session,
                                           role="assistant", content=turn["assistant"], at=at)
                self.clock.set(at + timedelta(seconds=20))
            prepared = self.chat.prepare_turn(principal, session, turn["text"])
            reply = "".join(prepared.stream())
            self.chat.finish_turn(prepared, reply)
            stored[turn["text"]] = self.chat.remember(principal, session, turn["text"], prepared.user_message_id,
                                                      prepared.answered)
        return principal, stored

    def ask(self, scenario: dict[str, Any], principal: Principal, stored: dict[str, Remembered]) -> Outcome:
        """The scenario's query as one more chat turn, judged."""
        user = principal.user_id
        query = scenario["query"]
        self.clock.set(START + timedelta(days=query["day"], hours=5))
        session = f"{user}-q"
        prepared = self.chat.prepare_turn(principal, session, query["text"])
        reply = "".join(prepared.stream())
        self.chat.finish_turn(prepared, reply)
        prompt = build_reply_messages([ChatMessage("user", query["text"])], prepared.info.context_block,
                                      prepared.info.constraint_block, self.clock.now())
        active = self.engine.list_memories(MemoryQuery(user_id=user, statuses=(MemoryStatus.ACTIVE,), limit=500)).items
        # Judged as the user reads them: a number kept sealed is put back, so a stale one is seen.
        return judge(scenario, prepared.info, reply, prompt, [self.engine.revealed_text(m) for m in active], stored)


def judge(scenario: dict[str, Any], info: Any, reply: str, prompt: Sequence[dict[str, str]],
          active: Sequence[str], stored: dict[str, Remembered]) -> Outcome:
    """The checks of ``bench/truth/README.md`` for one played scenario."""
    expect = scenario["expect"]
    kind = scenario["kind"]
    constraints = [c.content for c in info.constraints]
    # What the reply is given, in the order the prompt gives it: the constraints that bear on the
    # message, then the ranked memories above the threshold.
    used = list(dict.fromkeys(constraints + [u.content for u in info.used]))
    failures: list[str] = []
    top = expect.get("top") or []
    if kind == "constraint":
        if top and not any(_contains(c, t) for c in constraints + used for t in top):
            failures.append(f"constraint not passed to the reply: {top}")
        prompt_text = "\n".join(m["content"] for m in prompt)
        if top and not any(_contains(prompt_text, t) for t in top):
            failures.append("the endpoint prompt does not carry the constraint")
        offered = suggestions_part(reply)
        bad = [w for w in expect.get("forbid") or [] if mentions(offered, w)]
        if bad:
            failures.append(f"reply suggests what a constraint forbids: {bad}")
    elif top:
        if not used:
            failures.append("nothing recalled")
        elif not any(_contains(used[0], t) for t in top):
            failures.append(f"top is {used[0][:60]!r}, wanted one of {top}")
    for stale in expect.get("stale") or []:
        holders = [m for m in active if _contains(m, stale)]
        if holders:
            failures.append(f"stale {stale!r} still active: {holders[0][:60]!r}")
    for text in expect.get("not_stored") or []:
        outcome = stored.get(text)
        if outcome is not None and (outcome.created or outcome.deduplicated):
            failures.append(f"stored: {text[:50]!r}")
    for needle in expect.get("one_active") or []:
        count = sum(1 for m in active if _contains(m, needle))
        if count != 1:
            failures.append(f"{count} active memories hold {needle!r}")
    if expect.get("nothing") and used:
        failures.append(f"recalled {len(used)} for an unrelated query: {used[0][:50]!r}")
    return Outcome(scenario["id"], kind, scenario["lang"], not failures, failures, used, reply)


def summarise(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """``{"kinds": {kind: {"n", "pass"}}, "overall": {"n", "pass"}}`` plus the same per language."""
    kinds: dict[str, dict[str, int]] = {}
    langs: dict[str, dict[str, int]] = {}
    for o in outcomes:
        for bucket, key in ((kinds, o.kind), (langs, o.lang)):
            entry = bucket.setdefault(key, {"n": 0, "pass": 0})
            entry["n"] += 1
            entry["pass"] += int(o.passed)
    ordered = {k: kinds[k] for k in KINDS if k in kinds}
    return {"kinds": ordered, "languages": langs,
            "overall": {"n": len(outcomes), "pass": sum(int(o.passed) for o in outcomes)}}


def run(engine: MemoryEngine, scenarios: Sequence[dict[str, Any]],
        progress: Callable[[str], None] | None = None) -> list[Outcome]:
    runner = TruthRun(engine)
    outcomes = []
    for number, scenario in enumerate(scenarios, 1):
        outcomes.append(runner.play(scenario))
        if progress is not None and number % 50 == 0:
            progress(f"  {number}/{len(scenarios)} scenarios")
    return outcomes
