"""States a person has or has not, and the events that end them: newer wins for things one may
have none of (``states.json``: medicine, children, pets, a car, a mortgage, smoking, ...).

"We don't have any pets" ends with "We got a puppy!"; "我每天跑步" with "现在完全不跑了";
"We have a beagle named Biscuit" with "Biscuit passed away"; "我有高血压" with "医生说我血压正常
了，药已经停了"; "I'm on the keto diet" with "I'm off keto". Unlike ``topics.json`` these may hold
several values at once, so a new value never replaces another: only the presence flips.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from memory_core.llm.offline.updates import (SPAN_WITHOUT_EN, _CLAUSES, _adds, _entities, _states_a_fact, lexicon_patterns,
                                             same_word, specific_words)
from memory_core.text.constraints import constraint_kind, revokes_a_diet
from memory_core.text.facts import negations, says_change, statement_words
from memory_core.text.subject import subject_of

_I = re.IGNORECASE
STATES_FILE = Path(__file__).with_name("states.json")
# A state ends ("药已经停了", "quit", "no longer") without a negation word.
_STOPPED = re.compile(r"停了|停药|戒了|戒掉|戒\w{1,2}了|不再|放弃了|卖了|卖掉|被偷|送人了|(?<!等)还清|还完了|结清|"
                      r"(?<!\bonce )(?<!\bwhen )(?<!hoping to have the mortgage )\bpaid (?:it |them )?off\b(?! by\b)|"
                      r"\bstopped\b(?!\s+(?:by|at|in|off|for|over)\b)|\bquit\b|\bgave up\b|\bno longer\b|\bnot any ?more\b|\banymore\b|"
                      r"\bcut out\b|\bsold\b|\bgot rid of\b|\bgave (?:it |him |her |them )?away\b|\bwas stolen\b|"
                      r"\bgot stolen\b|\b(?:since|after) (?:selling|quitting|giving up) (?:the |my |our )?"
                      r"(?:car|bike|motorbike|scooter|van|truck|cigarettes|smokes|smoking|vaping|drinking|booze|coffee)\b|"
                      # "dr patel said i can stop the pills" (now, not "if my numbers hold", "next month")
                      r"\bcan stop (?:the |my |taking )(?![^.!?]*\b(?:if|unless|once|when|next|soon)\b)|"
                      # a span of time without it: "已经三个月没碰烟了", "3 months smoke-free", "haven't had a drink in weeks"
                      # (a counted span of weeks or more: not 今天 / 这两天 / 一天 without it)
                      r"(?:[两三四五六七八九十几多]|\d+|半)(?:个)?(?:周|星期|礼拜|月|年)(?:多)?(?:都|了)?(?:没|不)(?:碰|抽|喝|吃|沾|去)|"
                      r"(?:一|1)(?:个)?(?:月|年)(?:多)?(?:都|了)?(?:没|不)(?:碰|抽|喝|吃|沾|去)|"
                      r"\b(?:weeks?|months?|years?)\s+(?:\w+-)?free\b|"
                      r"\b(?:haven'?t|hasn'?t|have not|has not)\b" + SPAN_WITHOUT_EN, _I)
# Words that say one lacks the state without a negation: "我是旱鸭子" (cannot swim), "teetotal".
_PAST = re.compile(r"以前|曾经|原来|小时候|\bused to\b|\bwas\b|\bwere\b|\bonce\b", _I)
_LACKS = re.compile(r"旱鸭子|不会游|\bnon-?swimmer\b|\bteetotal(?:ler|er)?\b|\bnon-?smoker\b|\bnon-?drinker\b", _I)


# Not "put Max down as my emergency contact", "put it down to stress".
_DIED = re.compile(r"\bpassed away\b|\bdied\b|\bput (?:him|her|it|\w+) down\b(?!\s+(?:as|for|to)\b)|\bwas put down\b|\bput to sleep\b|"
                   r"去世|过世|离世|走了", _I)
# A name inside the older statement ("we have a golden retriever, Biscuit, ..."), said in any case later.
_NAMED = re.compile(r"(?<=[\s,(])(?-i:[A-Z][a-z]{2,})\b")
_NAMED_ZH = re.compile(r"叫([\u4e00-\u9fff]{2,3}?)(?=$|[\s，。,.!！是今已才])")
_HAS = re.compile(r"\b(?:have|has|got|own|owns|adopted)\b|养|有|我家的?(?:狗|猫|小狗|小猫|狗狗|猫咪)", _I)


@lru_cache(maxsize=1)
def _states() -> dict[str, re.Pattern[str]]:
    return lexicon_patterns(STATES_FILE, plurals=False)


@lru_cache(maxsize=8192)  # pure; asked of both sides of every pair
def _states_of(text: str) -> frozenset[str]:
    return frozenset(name for name, pattern in _states().items() if pattern.search(text))


def _state_clauses(text: str, states: frozenset[str]) -> list[str]:
    """The clauses of ``text`` that speak of one of ``states`` (the whole text when none does
    on its own): "so... I'm pregnant. We're due in June! Not planned but we're excited" has
    the children state in "I'm pregnant", and its "Not planned" negates no having."""
    return _speaking_clauses(text, states) or [statement_words(text)]


def _speaking_clauses(text: str, states: frozenset[str]) -> list[str]:
    """The clauses of ``text`` that speak of one of ``states`` on their own (maybe none)."""
    patterns = [_states()[name] for name in states]
    return [c for c in _CLAUSES.split(statement_words(text)) if any(p.search(c) for p in patterns)]


# A payment not yet finished: the loan is still there ("房贷还剩二十万没还完", "not paid off yet").
_NOT_DONE = re.compile(r"还?没(?:有)?(?:还完|还清|付完|结清)|\bnot (?:yet )?paid (?:it )?off\b|\bhaven'?t (?:yet )?paid (?:it )?off\b", _I)


# An end only looked forward to ("等房贷还清了我就辞职", "once the mortgage is paid off we'll travel")
# or a test failed ("failed my driving test the second time"): the state is still there.
_PENDING = re.compile(r"等(?:到)?[^，。,.!?！？]{0,10}(?:还清|还完|结清|停)|\b(?:once|when|after|until|hoping|hope|plan(?:ning)?)\b"
                      r"[^.!?]{0,40}\b(?:paid off|stop)", _I)
_FAILED_TEST = re.compile(r"\bfail(?:ed|s|ing)?\b[^.!?]{0,25}\b(?:test|exam)|\b(?:test|exam)\b[^.!?]{0,10}\bfail|\bflunk(?:ed|s)?\b|"
                          r"科[一二三四目][^，。,.!?！？]{0,3}挂了|没考过|考试没过", _I)


def _without(text: str, states: frozenset[str]) -> bool:
    """The text says its subject has none of ``states``, or stopped ("I don't take any", "没有
    孩子", "现在完全不跑了", "药已经停了"), in a clause that speaks of them."""
    if _FAILED_TEST.search(text):
        return True  # "failed my driving test the second time": still no licence
    if _PENDING.search(text) and negations(text) == 0:
        return False  # "等房贷还清了我就辞职": the loan is still there
    clauses = [_NOT_DONE.sub(" ", c) for c in _state_clauses(text, states)]
    return any(negations(c) > 0 or _STOPPED.search(c) is not None
               or (_LACKS.search(c) is not None and not _PAST.search(c))  # "我以前是旱鸭子" lacks nothing now
               for c in clauses)


def has_none(text: str) -> bool:
    """The user's own statement that they have none of a thing or do not do it ("We don't have
    any pets", "我不会开车", "我没有房贷"): a lasting fact, kept until a later one says they have
    it now (read alone it looked like a remark, rated 2, and was gone before the puppy came)."""
    if not _states_a_fact(text) or subject_of(text).split("/")[-1] != "self":
        return False
    states = _states_of(statement_words(text))
    return bool(states) and _without(text, states)


def speaks_of_a_state(text: str) -> bool:
    """Whether ``text`` speaks of a thing of ``states.json`` ("驾照终于拿到了"): a newer text
    that may end an older one's state, so the write checks it."""
    return bool(_states_of(statement_words(text)))


def pet_died(newer: str, older: str) -> bool:
    """``newer`` tells the death of what ``older`` says the user has, by its name ("Biscuit passed
    away", "we had to put biscuit down" after "We have a beagle named Biscuit"), not someone else's."""
    if not (_DIED.search(newer) and _HAS.search(older)) or subject_of(newer).split("/")[-1].startswith(("rel:", "of:")):
        return False
    return bool(_entities(newer) & _entities(older)) or any(
        re.search(rf"\b{re.escape(name)}\b", newer, _I) for name in _NAMED.findall(older)) or any(
        newer.lstrip().startswith(name) for name in _NAMED_ZH.findall(older))  # "我家狗叫旺财" / "旺财昨晚去世了"


def ends_a_state(newer: str, older: str) -> bool:
    """``newer`` ends a state ``older`` states (``states.json``): one says the speaker has none
    of a thing or does not do it and the other, later, that they do now, or the reverse. The
    newer must mark the change ("now", "started", "stopped", 了) unless it has the thing where
    the older had none (having a child or a prescription is news by itself)."""
    if _states_a_fact(older) and not _states_a_fact(newer) and pet_died(newer, older):
        return True  # "Max died last night": a death told of the pet by its name alone, no "we" or "my"
    if not (_states_a_fact(newer) and _states_a_fact(older)):
        return False
    shared = _states_of(statement_words(newer)) & _states_of(statement_words(older))
    # A trait ("I'm a Mac user", 夜猫子) changes like any state ("switched to Windows"): only the
    # constraints that rule things out need their own words to be lifted.
    kind = constraint_kind(older)
    if kind in ("allergy", "medical", "diet") or (kind not in (None, "trait") and any(
            constraint_kind(c) not in (None, "trait") for c in _state_clauses(older, shared))):
        # An allergy, a diet, a medical condition is lifted only when said so ("not allergic
        # after all": ``flips``; "血压正常了，药已经停了": ``resolves``; "I'm off keto"),
        # never by a mention of the thing ("要去给领导敬酒"). A dislike said beside a state is
        # no such constraint on it: "我没有养宠物，怕麻烦" ends with a cat.
        return resolves(newer, older) or lifts_a_diet(newer, older)
    if not shared and pet_died(newer, older):
        return True  # "Biscuit passed away" (or "we had to put biscuit down") ends "We have a beagle named Biscuit"
    # "also" counts where the state is spoken of: "我戒酒了 ... 转氨酶也正常了" adds no drink.
    if not shared or _adds(" ".join(_state_clauses(newer, shared))):
        return False
    older_without, newer_without = _without(older, shared), _without(newer, shared)
    if older_without == newer_without:
        return False
    return older_without or says_change(newer) or _STOPPED.search(newer) is not None


# A condition that has gone: cured, back to normal, resolved (not "better": still there).
_RESOLVED = re.compile(r"(?:正常了|痊愈|治好了|治愈|康复了|好了|没事了|不用吃药了|不用再吃)|\b(?:cured|recovered|"
                       r"back to normal|normal again|went away|gone now|is gone|resolved|in remission|"
                       r"grew out of|outgrew|no longer have)\b", _I)


def resolves(newer: str, older: str) -> bool:
    """``newer`` says the medical condition ``older`` states is over ("医生说我血压正常了，药已经
    停了" after "我有高血压，每天早上吃一片氨氯地平"; "My asthma is gone, I grew out of it"):
    a resolution word and the condition itself named in both (a Chinese word inside the other
    counts: 血压 / 高血压). "My knee is better" or a resolution of something else lifts nothing."""
    if constraint_kind(older) != "medical" or not _RESOLVED.search(statement_words(newer)):
        return False
    if negations(_RESOLVED.sub(" ", statement_words(newer))) > 0 and not _STOPPED.search(newer):
        return False  # "not cured", "还没好了"
    old_words, new_words = specific_words(older), specific_words(newer)
    return any(same_word(o, n) for o in old_words for n in new_words)


def lifts_a_diet(newer: str, older: str) -> bool:
    """``newer`` says the diet ``older`` states is over ("I'm off keto, eating carbs again"
    after "I'm on the keto diet"; "不吃素了" after "我吃素"), naming the same diet."""
    if constraint_kind(older) != "diet" or not revokes_a_diet(statement_words(newer)):
        return False
    shared = _states_of(statement_words(newer)) & _states_of(statement_words(older))
    diet_clauses = [c for c in _CLAUSES.split(statement_words(older)) if constraint_kind(c) == "diet"]
    if shared and all(any(_states()[name].search(c) for name in shared) for c in diet_clauses):
        # one thing of states.json in both ("一点辣都吃不了" / "现在中辣随便吃": 辣 is one character),
        # and the diet is about that alone ("我不喝酒，也不吃辣" keeps the drink when spice is lifted)
        return True
    return any(same_word(o, n) for o in specific_words(older) for n in specific_words(newer))


def ends_own_state(newer: str, older: str) -> bool:
    """``ends_a_state``, read in a long message: only where a clause that speaks of the state is
    the user's own ("I'm pregnant!!" ends "we're not planning to have kids"; "her kids are wild",
    in a story of a weekend, ends nothing)."""
    shared = _states_of(statement_words(newer)) & _states_of(statement_words(older))
    if not any(subject_of(c).split("/")[-1] == "self" for c in _speaking_clauses(newer, shared)):
        return False
    return ends_a_state(newer, older)


def tells_an_end(text: str) -> bool:
    """A death or a cure: an event that ends a lasting fact, so the write checks it against the
    user's memories although it states no slot ("Biscuit passed away last week")."""
    body = statement_words(text)
    return _DIED.search(body) is not None or _RESOLVED.search(body) is not None


# A plan ("打算去三亚", "we're booked for Lisbon in May") and the words that call it off.
_PLANNED = re.compile(r"打算|计划|准备去|想去|订好|订了|约好|\bplan(?:s|ned|ning)?\b|\bgoing to\b|\bbooked\b|"
                      r"\b(?:we'?re|i'?m) (?:off|heading|flying) to\b", _I)
# The plan itself is what is called off (not its ticket, hotel or a concert on the way).
_THE_TRIP = re.compile(r"那趟|这趟|那次|行程|旅行|旅游|之行|\btrip\b|\bvacation\b|\bholiday\b|\bjourney\b|\bvisit\b", _I)
_NOT_CALLED_OFF = re.compile(r"(?:不|没|先不|别|没有)(?:退|取消)|(?:\bnot|n't|\bnever)\s+(?:\w+\s+)?(?:cancel(?:l)?ed|called off|off)\b|"
                             r"如果|要是|万一|假如|\bif\b|\bunless\b|重新订|又订|改到|改成|推迟|延期|\brebook\w*|\bpostpone\w*|"
                             r"\bmoved to\b|\bpushed (?:back|to)\b|\binstead\b|\b(?:till|until)\b|改坐|改去|推到", _I)
_CALLED_OFF = re.compile(r"退了|取消了|不去了|去不成了|泡汤了|黄了|告吹|作罢|\bcancel(?:l)?ed\b|\bcalled (?:it )?off\b|"
                         r"\bfell through\b|\b(?:is|are|'s) off\b|\bscrapped\b|\bnot going (?:anymore|after all)\b", _I)

# A move planned and called off: "I'm moving to Berlin in May" / "just kidding about Berlin, staying put",
# "下个月要搬去成都" / "成都不搬了".
_MOVE_PLANNED = re.compile(r"\b(?:i'?m|we'?re|i am|we are) (?:\w+ )?moving (?:to|back to|out to)\b|"
                           r"\b(?:going|plan(?:ning)?|about) to move (?:to|back to)\b|(?:要|准备|打算|计划)搬(?:去|到|回)", _I)
_MOVE_OFF = re.compile(r"\bstaying put\b|\bnot moving\b|\bwon'?t be moving\b|\bmove is off\b|"
                       r"\bdecided not to move\b|\bmove (?:fell through|is cancell?ed)\b|"
                       r"不搬了|搬不成了?|不打算搬了|搬[^，。,]{0,6}(?:黄了|泡汤了|取消了)", _I)
# ... and not a trip or a weekend there: "周末成都不去了", "staying put in Berlin this weekend"
_NOT_THE_MOVE = re.compile(r"\b(?:this|next|the) weekend\b|\btonight\b|\btoday\b|\btrip\b|\bvisit\b|"
                           r"周末|今晚|今天|出差|旅游|旅行|去玩", _I)


def ends_a_plan(newer: str, older: str) -> bool:
    """``newer`` calls off the plan ``older`` states, naming the same place or thing ("三亚那趟退了"
    after "国庆打算带娃去三亚"; "the Lisbon trip is cancelled" after "we booked Lisbon for May"):
    the plan is no longer what will happen. A call-off that names nothing of it ends nothing."""
    body = statement_words(newer)
    move_off = _MOVE_PLANNED.search(older) is not None and _MOVE_OFF.search(body) is not None \
        and _NOT_THE_MOVE.search(body) is None
    if not move_off and not (_PLANNED.search(older) and _CALLED_OFF.search(body) and _THE_TRIP.search(body)):
        return False
    if _NOT_CALLED_OFF.search(newer):
        return False  # "三亚的票不退了", "如果下雨就不去了", "moved to June", "rebooked", "taking the train instead"
    if subject_of(older).split("/")[-1] != "self" or subject_of(newer).split("/")[-1] != "self":
        return False  # "my sister's wedding in Boston got called off"
    return bool(_entities(newer) & _entities(older))
