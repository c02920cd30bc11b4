"""Demo users and two months of their history, written through the write pipeline with past dates.

Everything goes through the real write pipeline (redaction, analysis, embedding, dedup,
newer-wins), one turn at a time in time order, so the demo shows the product as it is, not
hand-made rows: each user has one current address, the older one visible as superseded, and a
story whose dates agree (the Lisbon trip is told before, then after it). Seeding is idempotent per user: a user
who already has demo memories is left alone unless ``reset=True`` (which erases the user first);
memories the user made by chatting do not count.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Callable, Sequence

if TYPE_CHECKING:
    from memory_core import MemoryEngine


@dataclass(frozen=True)
class DemoUser:
    user_id: str
    display_name: str
    language: str
    blurb: str
    history: tuple[tuple[int, str], ...]  # (days ago, what the user said)


ZHANG_SAN = DemoUser(
    user_id="demo:zhangsan",
    display_name="张三",
    language="zh",
    blurb="住在杭州的产品经理，对芒果过敏，喜欢羽毛球和摄影，最近从滨江搬到了西湖区。",
    history=(
        (60, "我叫张三，是一名产品经理，在杭州一家做电商的公司上班。"),
        (58, "我对芒果过敏，吃了会起疹子，所以任何含芒果的东西都不能吃。"),
        (55, "我住在杭州市滨江区江南大道，离公司有点远。"),
        (50, "周末我一般去打羽毛球，每周六上午和同事一起打两个小时。"),
        (44, "我最近在学摄影，刚买了一台富士 X-T5 相机。"),
        (40, "我喜欢吃辣，川菜和湘菜都很爱，但是不太能接受太甜的甜点。"),
        (33, "上周六我们去西溪湿地拍了日落，照片效果很好。"),
        (27, "我搬家了，现在住在杭州市西湖区文三路，离公司骑车十五分钟。"),
        (20, "我女儿今年五岁，下个月要上幼儿园大班了。"),
        (14, "我每天早上喝一杯美式咖啡，不加糖不加奶。"),
        (9, "我计划十月份带家人去云南大理旅行一周。"),
        (5, "最近在读《人类简史》，读到第三章了。"),
        (1, "回复我的时候请尽量简洁，用中文。"),
    ),
)

ALICE = DemoUser(
    user_id="demo:alice",
    display_name="Alice",
    language="en",
    blurb="A software engineer who is vegetarian, loves hiking, went to Lisbon and moved from Portland to Seattle.",
    history=(
        (60, "My name is Alice and I work as a backend engineer at a fintech startup."),
        (58, "I'm vegetarian, so please never suggest meat or fish dishes."),
        (56, "I live at 12 Maple Street in Portland, Oregon."),
        (52, "I prefer short answers with bullet points rather than long paragraphs."),
        (45, "I go hiking most weekends; Forest Park is my favourite trail."),
        (30, "I'm flying to Lisbon this Saturday for a week of vacation."),
        (29, "In Lisbon I want to visit the Belém Tower and try the famous custard tarts."),
        (20, "Back from Lisbon! The trip was wonderful, the tram 28 ride was the highlight."),
        (12, "I just moved: my new address is 48 Alder Avenue in Seattle, Washington."),
        (8, "My cat Miso turned three years old this week."),
        (5, "I'm learning Spanish on weekday evenings, about thirty minutes a day."),
        (2, "I drink green tea in the afternoon; coffee after 2pm keeps me awake."),
    ),
)

# Ids in the demo namespace (services.auth.DEMO_PREFIX), which no real account can have.
DEMO_USERS: dict[str, DemoUser] = {u.user_id: u for u in (ZHANG_SAN, ALICE)}


def demo_user_choices() -> list[tuple[str, str]]:
    """(user id, display name) for the sign-in picker."""
    return [(u.user_id, u.display_name) for u in DEMO_USERS.values()]


@dataclass(frozen=True)
class SeedReport:
    user_id: str
    written: int  # memories created
    skipped: bool  # already had memories


def seed_demo(engine: "MemoryEngine", user_ids: Sequence[str] | None = None, *, reset: bool = False,
              now: datetime | None = None, actor: str = "demo-loader",
              progress: Callable[[int, int], None] | None = None) -> list[SeedReport]:
    """Write the demo users' histories, dated ``days ago`` from ``now``, one session per day."""
    from memory_core import AddItem

    now = now or engine.clock.now()
    chosen = [DEMO_USERS[uid] for uid in (user_ids or list(DEMO_USERS))]
    existing = {uid: _demo_count(engine, uid) for uid in (u.user_id for u in chosen)}
    total = sum(len(u.history) for u in chosen)
    done = 0
    reports: list[SeedReport] = []
    for user in chosen:
        if existing.get(user.user_id) and not reset:
            reports.append(SeedReport(user.user_id, 0, True))
            done += len(user.history)
            continue
        if reset and dict(engine.users()).get(user.user_id) is not None:
            engine.delete_user(user.user_id, actor=actor, note="demo reset")
        written = 0
        # One turn at a time, oldest first, through the whole write pipeline: each is written after
        # the ones before it are stored, so newer-wins retires the old address as it would have
        # in a real chat.
        for index, (days_ago, text) in enumerate(sorted(user.history, key=lambda h: -h[0])):
            at = now - timedelta(days=days_ago, hours=2, minutes=7 * index % 50)
            session_id = f"demo-{user.user_id}-{days_ago}"
            message_id = uuid.uuid4().hex
            engine.record_message(message_id=message_id, user_id=user.user_id, session_id=session_id,
                                  role="user", content=text, at=at)
            result = engine.add_many([AddItem(user_id=user.user_id, content=text, session_id=session_id,
                                              source=message_id, at=at, metadata={"demo": True})], actor=actor)[0]
            written += len(result.created)
            done += 1
            if progress is not None:
                progress(done, total)
        reports.append(SeedReport(user.user_id, written, False))
    return reports


def _demo_count(engine: "MemoryEngine", user_id: str) -> int:
    """How many of the user's memories came from the demo loader (``meta.demo``)."""
    from memory_core import MemoryQuery

    page = engine.list_memories(MemoryQuery(user_id=user_id, limit=1000))
    return sum(1 for record in page.items if record.meta.get("demo"))
