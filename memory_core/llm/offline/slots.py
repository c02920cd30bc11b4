"""Newer wins, by rules: the same fact of the same person with a new value.

Four readings, each of the same subject (``memory_core.text.subject``: "我的上司在深圳上班" is
about the boss, "Vanessa: I like ..." about Vanessa):

- a **slot** (home, phone, e-mail, employer) with a new value: "I live in Lisbon" -> "I moved
  to Porto";
- an **attribute** "my X is Y" / "我的X是Y" with a new Y: "My favourite colour is green" ->
  "... is blue", "我的车是丰田" -> "我的车换成了特斯拉" (not for people: "my sister is a nurse"
  and "my sister is in Berlin" are two facts about her);
- a **preference** about the same thing with the other polarity: "我不吃辣" -> "我能吃一点辣",
  "I love steak" -> "I became vegetarian", "我每天抽烟" -> "我戒烟了";
- a **correction**: the same frame with one value changed ("locker code 4821" -> "4827",
  "A+" -> "A-", "allergic" -> "not allergic"), for lasting facts, or for any fact when the newer
  text says it corrects ("sorry, I meant ..."): two runs of different lengths on two days are
  two events, not a correction.

A question never states a value ("我的电话是多少？" replaced the phone number it asked about).
The readings of one text are memory_core/llm/offline/slot_facts.py; the comparison is here.
"""
from __future__ import annotations

import re

from memory_core.llm.offline.importance import (
    _is_small_talk,
    _QUESTION_END,
    as_asked_of_me,
    asked_question,
)
from memory_core.llm.offline.restatements import says_again
from memory_core.llm.offline.slot_facts import FIRST_PERSON, NAMED_OPENING, facts_of, phone_line, same_object, SLOT_NAMES
from memory_core.llm.offline.states import (ends_a_plan, ends_a_state, ends_own_state, pet_died, speaks_of_a_state,
                                            tells_an_end)
from memory_core.llm.offline.updates import _adds, changes, flips, one_fact, restates, specific_words, topics_of
from memory_core.text.facts import corrects, says_change, says_correction, signature, twin_codes, twin_values
from memory_core.text.lang import is_cjk
from memory_core.text.speaker import speaker_label
from memory_core.text.expansion import slots_asked
from memory_core.text.mood import is_goal, is_irrealis
from memory_core.text.retelling import retells
from memory_core.text.subject import PERSON_NOUNS_ZH, subject_of

_I = re.IGNORECASE
# What one text states (slots, attribute, preference, lasting or not) is read in slot_facts.py;
# this module compares two such readings, and reads an answer as the statement it stands for.


def states_a_slot_or_preference(text: str) -> bool:
    """Whether ``supersedes_text`` can be True for ``text`` written now: a question or small talk
    never can; a passing event ("I had dinner in Chaoyang with Anna") can only if it marks a
    change or a correction or touches a single-valued topic, since the other rules need a lasting
    fact on both sides. (A back-dated event that a later correction corrects is the one pair this
    skip can miss.)"""
    facts = facts_of(text)
    if facts.question or _is_small_talk(text):
        return False
    if (facts.preference is not None or facts.attribute is not None or any(slot is not None for slot in facts.slots)):
        return True
    if not specific_words(text):
        return False
    return (facts.lasting or says_change(text) or says_correction(text) or bool(topics_of(text))
            or tells_an_end(text) or speaks_of_a_state(text))


# How an answer to a slot question states that slot (English, Chinese), for the slot rules above.
_SLOT_STATEMENTS: dict[str, tuple[str, str]] = {
    "address": ("I live in {}", "我住在{}"),
    "employer": ("I work at {}", "我就职于{}"),
    "phone": ("My phone number is {}", "我的手机号是{}"),
    "email": ("My email is {}", "我的邮箱是{}"),
    "origin": ("I am from {}", "我老家是{}"),
}
# "What's your favourite colour?" -> "my favourite colour": an attribute question.
_ATTR_QUESTION_EN = re.compile(r"^\s*(?:and |so )?(?:what|which|who)(?:'s| is| are)\s+my\s+(?P<a>[a-z][a-z '\-]{1,40}?)"
                               r"(?:\s+(?:now|these days|again|nowadays|currently))?\s*\??\s*$", _I)
_ATTR_QUESTION_ZH = re.compile(r"我的(?P<a>[^\s，。是]{1,10}?)(?:现在)?(?:是什么|是多少|是哪个|是谁|叫什么|是啥)")
# Answers that give no new value: a refusal, a negation, "the same as before", a counter-question.
_NO_VALUE_RE = re.compile(
    r"^\W*(?:no\b|nope\b|not\b|never\b|none\b|n/a\b|i'?d rather|rather not|i don'?t|i do not|i can'?t|"
    r"i won'?t|why\b|guess\b|不|没|别|保密|算了|为什么|你猜)|"
    r"\b(?:same|still|unchanged|as before)\b|没变|没换|还是|一样", re.IGNORECASE)
_ANSWER_LEAD_RE = re.compile(r"^\s*(?:(?:it'?s|it is|that'?s|that is|at|in)\s+|(?:就是|是|在)\s*)", re.IGNORECASE)
_SLOT_ANSWER_MAX_CHARS = 120


def slot_statement(text: str, context: str | None) -> str:
    """``text`` as a statement of the slot it answers, for the conflict rules: "Porto" after
    "Where do you live now?" reads "I live in Porto", so it supersedes "I live in Lisbon" like
    the statement would; "Blue" after "What's your favourite colour?" reads "My favourite
    colour is Blue". ``text`` itself when it states a fact already, answers no single slot
    question, or gives no new value ("I'd rather not say", "the same as before", a
    counter-question)."""
    question = asked_question(context or "")
    if not question:
        return text
    mine = as_asked_of_me(question)
    answer = text.strip()
    facts = facts_of(text)
    if (not answer or len(answer) > _SLOT_ANSWER_MAX_CHARS or _NO_VALUE_RE.search(answer)
            or _QUESTION_END.search(answer) or any(slot is not None for slot in facts.slots)
            or facts.attribute is not None):
        return text
    value = _ANSWER_LEAD_RE.sub("", answer, count=1) or answer  # "It's Porto" -> "Porto"
    slots = [s for s in slots_asked(mine) if s in _SLOT_STATEMENTS]  # a school is no slot of the user's
    if len(slots) == 1:
        english, chinese = _SLOT_STATEMENTS[slots[0]]
        return (chinese if any(is_cjk(ch) for ch in value) else english).format(value)
    asked = _ATTR_QUESTION_EN.search(mine)
    if asked:
        return f"My {asked.group('a').strip()} is {value}"
    asked = _ATTR_QUESTION_ZH.search(mine)
    if asked:
        return f"我的{asked.group('a')}是{value}"
    return text


# Topics of a question about the user whose answer lasts (one value at a time, kept until changed).
_LASTING_TOPICS = frozenset({"home", "job", "partner", "school", "vehicle", "doctor", "dentist", "bank"})
_ORIGIN_QUESTION = re.compile(r"哪里人|哪儿人|哪的人|老家|籍贯|出生|\bwhere (?:are|were) you (?:from|born|raised)\b|"
                              r"\bwhere did you grow up\b|\bhometown\b|\bborn\b", _I)


_ASKS_YOU_WHAT = re.compile(
    r"(?=.*\b(?:you|your)\b)(?=.*\b(?:what|where|when|which|who|how long|how old)\b)|"
    r"(?=.*[你您])(?=.*(?:什么|哪|几|谁|多久|多少|啥))", _I)


def answers_a_lasting_question(text: str, context: str | None) -> bool:
    """Whether ``text`` gives a value to a question about the user's lasting facts: where they
    come from or live, their work, partner or school ("2019, right before covid hit" to "When did
    you move to Canada?", "湖南邵阳的" to "你是哪里人呀？"). Such an answer is what the assistant
    asked to learn; read alone it looks like small talk (rated 2, gone in 180 days) and was lost
    before it was asked about. A refusal or "the same" gives no value."""
    question = asked_question(context or "")
    answer = text.strip()
    if not question or not answer or _NO_VALUE_RE.search(answer) or _QUESTION_END.search(answer):
        return False
    if not _ASKS_YOU_WHAT.search(question):  # "Do you work today?" -> "Yes, till 5" is no lasting fact
        return False
    return bool(topics_of(as_asked_of_me(question)) & _LASTING_TOPICS) or _ORIGIN_QUESTION.search(question) is not None


def answers_a_slot(text: str, context: str | None) -> bool:
    """Whether ``text`` answers a question about home, work, phone or e-mail ("Lisbon, by the
    river" to "Where do you live?"): such an answer is kept like the statement it stands for."""
    statement = slot_statement(text, context)
    return statement != text and any(slot is not None for slot in facts_of(statement).slots)


def supersedes_text(newer: str, older: str) -> bool:
    """True when ``newer`` gives a new value to a fact ``older`` states, or says it again with
    more, about the same person (see the module docstring and ``updates.py``)."""
    if is_irrealis(newer) and not says_change(newer):
        return False  # a wish or a what-if names a value without stating it (memory_core/text/mood.py)
    if is_goal(newer) and not is_goal(older):
        return False  # "我想减到60公斤" after "我现在体重65公斤": the amount wanted, not the one there is
    f_new, f_old = facts_of(newer), facts_of(older)
    if f_new.question or f_old.question:
        return False
    for name, s_new, s_old in zip(SLOT_NAMES, f_new.slots, f_old.slots):
        if s_new is None or s_old is None:
            continue
        if s_new[0] != s_old[0] or (name == "phone" and phone_line(newer) != phone_line(older)):
            return False  # another person's, or another line ("the office line" beside the mobile)
        v_new, v_old = s_new[1], s_old[1]
        if not v_new or not v_old:
            return False
        if v_new != v_old:
            return True
        # Masked values ("[PHONE]") look equal; an explicit change word still signals a new value.
        if re.fullmatch(r"(phone|email)", v_new) and f_new.says_changed:
            return True
        # The same street, another flat: the value as cut stops at the comma, the text does not.
        if corrects(newer, older):
            return True
        break  # the same value: maybe said again with more (below)
    a_new, a_old = f_new.attribute, f_old.attribute
    if a_new and a_old and a_new[0] == a_old[0] and a_new[2] == a_old[2]:
        # "A+" and "A-" normalise alike: their graded letters still differ.
        if a_new[1] != a_old[1] or corrects(newer, older):
            return True
    p_new, p_old = f_new.preference, f_old.preference
    if p_new and p_old and p_new[0] != p_old[0] and same_object(p_new[1], p_old[1]):
        return p_new[2] == p_old[2]
    if not _same_owner(newer, older):
        # "My manager is Tom" / "My new boss is Rachel": two names for one role of the user; and
        # a slip corrected as such ("班主任名字是张莉，上次写错了") whoever it is about.
        two_speakers = speaker_label(newer) is not None and speaker_label(older) is not None \
            and speaker_label(newer) != speaker_label(older)
        if pet_died(newer, older) and subject_of(older).split("/")[-1] == "self":
            return True  # "Max died last night, the vet couldn't save him": "him" is the pet, the user's
        return not two_speakers and ((changes(newer, older) and _same_role(newer, older)) or (
            says_correction(newer) and twin_values(newer, older) and corrects(newer, older, explicit=True)))
    if speaker_label(newer) is not None or speaker_label(older) is not None:
        # A line of an imported transcript ("Caroline: ...") records what was said then; later
        # lines of the same speaker retell, react and move on rather than correct it. Slots and
        # preferences above still apply to them; the readings below are for what the user says.
        # (Applied to transcripts they replaced 193 of LoCoMo's 5,882 turns, 61 of them evidence.)
        return False
    if not (FIRST_PERSON.search(newer) or FIRST_PERSON.search(older)) and (NAMED_OPENING.match(newer)
                                                                               or NAMED_OPENING.match(older)):
        # Notes about other people in the third person ("Lisa was upset after the contest",
        # "Bart got a new bike") are events of their lives, not the user's facts (nor those of
        # the user's son or boss): only the slot and preference readings above compare them.
        return False
    if not one_fact(older, sentences=2, words=30):
        return False  # a long message tells a story: the readings below compare single statements
    if not one_fact(newer, sentences=3, words=45):
        # ... but a story may still end the state a short statement set ("we're not planning to have
        # kids" -> "ok so... huge news. I'm pregnant!! due in November. ..."), when it says so itself
        return ends_own_state(newer, older)
    lasting = f_new.lasting and f_old.lasting
    explicit = says_correction(newer)
    changed = says_change(newer)
    # A change word is no correction marker: only a text that says it corrects, or one that flips
    # the polarity ("现在一点都不怕狗了"), may swap a word for a look-alike; "换了个新工作" corrects
    # no "上个月还发作了一次" (工作 / 发作). Time words are never values (facts.twin_values: "算了
    # 今年不回了" corrects no "每年都给同事带橙子").
    flipped = signature(newer).polarity != signature(older).polarity
    if twin_codes(newer, older) and specific_words(newer) & specific_words(older) and not _OTHER_LEG.search(newer + older) \
            and (explicit or not _other_days(newer, older)):
        return True  # "周三那个航班刚值完机 MU5173" after "下周三回老家 航班MU5137": the booking told again, right
    if _moves_the_amount(newer, older):
        return True  # "landlord bumped the rent to 1650" after "my rent is fifteen hundred a month"
    if (lasting or explicit or changed) and corrects(newer, older, explicit=explicit or changed,
                                                     twins=explicit or flipped):
        return True
    if flips(newer, older, marked=explicit or changed) and (lasting or explicit or changed):
        return True
    if _NEVER_SO.search(newer) and not _NOT_NEVER_SO.search(newer) and {w for w in specific_words(newer) & specific_words(older) if len(w) > 2 or is_cjk(w[0])}:
        return True  # "the penicillin allergy was a false positive", "青霉素过敏是误判": the older fact never held
    if changes(newer, older) or ends_a_state(newer, older) or ends_a_plan(newer, older):
        return True
    if (f_old.lasting and f_new.lasting and restates(newer, older)) or says_again(newer, older):
        return True
    # Told again in other words, anchored on a name or value (memory_core/text/retelling.py); an
    # addition ("my cat Olive is six, I also have a dog") is more than that.
    return not _adds(newer) and retells(newer, older)


# Two legs of one journey, two codes that may well look alike: not one booking told again.
_OTHER_LEG = re.compile(r"\b(?:return|outbound|inbound|connecting|connection|layover|flying back|fly back|back home)\b|"
                        r"回程|返程|去程|转机|中转|飞回", re.IGNORECASE)
# When a booking is for: a weekday (上/下/这 dropped: 下周三 is 周三), a relative week or month, a date.
_WHEN = re.compile(r"(?:周|星期|礼拜)[一二三四五六日天]|(?:上|下|这)(?:个)?(?:周|星期|礼拜|月)(?![一二三四五六日天])|"
                   r"\d+月\d+[日号]|\d+[日号]|今天|明天|昨天|后天|"
                   r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)day\b|\b(?:today|tomorrow|yesterday)\b|"
                   r"\b(?:next|last|this) (?:week|month)\b|\bthe \d+(?:st|nd|rd|th)\b", re.IGNORECASE)
_WEEKDAY_ZH = re.compile(r"(?:星期|礼拜)")
_RELATIVE_DAYS = frozenset({"今日", "明日", "昨日", "后日", "today", "tomorrow", "yesterday"})


def _other_days(newer: str, older: str) -> bool:
    """Both name when, and never the same time: two bookings ("周五飞上海坐CA1831" / "周日回北京
    坐CA1832"; "Friday" / "Sunday"), not one told again."""
    def when(text: str) -> set[str]:
        found = {_WEEKDAY_ZH.sub("周", m.group(0).lower()).replace("天", "日") for m in _WHEN.finditer(text)}
        return found - _RELATIVE_DAYS  # "今天值机了" may be that Wednesday: no date to tell by
    a, b = when(newer), when(older)
    return bool(a) and bool(b) and not a & b


# An amount moved, its thing named ("bumped the rent to 1650", "raised my salary to 68k"): a new
# value of the amount the older statement gives that thing ("my rent is fifteen hundred a month"),
# not of a price someone else sets ("Vodafone raised the price to £25" after "I'm on giffgaff"),
# nor a team or a fee the older one gives no amount of.
_MOVED_TO = re.compile(r"\b(?:bumped|raised|hiked|upped|increased|cut|lowered|reduced)\s+(?:up\s+)?(?:the|my|our)\s+(\w+)\s+"
                       r"(?:up\s+)?to\b", re.IGNORECASE)
_DURATION = re.compile(r"^\s*(?:years?|yrs?|months?|weeks?|days?|hours?|hrs?|minutes?|mins?|people|persons?)\b", re.IGNORECASE)


def _moves_the_amount(newer: str, older: str) -> bool:
    moved = _MOVED_TO.search(newer)
    if moved is None or not _same_owner(newer, older):
        return False
    noun = moved.group(1).lower()
    sn, so = signature(newer), signature(older)
    if not sn.numbers - so.numbers:
        return False
    for m in re.finditer(rf"\b{re.escape(noun)}\b", older, re.IGNORECASE):
        window = " ".join(older[m.end():].split()[:4])  # "rent is fifteen hundred a", "salary is 62k"
        number = re.search(r"\d[\d,.]*k?|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
                           r"fifteen|twenty|thirty|forty|fifty|hundred|thousand|grand)\b", window, re.IGNORECASE)
        if number and not _DURATION.search(window[number.end():]):
            return True
    return False


# The older statement was never true: a test or a diagnosis that was wrong.
_NEVER_SO = re.compile(r"\bfalse positive\b|\bmisdiagnos\w*|误判|误诊", re.IGNORECASE)
_NOT_NEVER_SO = re.compile(r"\b(?:not|n't|never)\s+(?:\w+\s+)?(?:a\s+)?(?:false positive|misdiagnos\w*)|(?:不是|并非|没有|没)误[判诊]",
                           re.IGNORECASE)  # "was not a false positive, sadly"


def _same_role(a: str, b: str) -> bool:
    """Both texts name the user's person in the same role ("my manager" / "my new boss",
    "我女儿" / "闺女"), or one names a role the other's topic is about."""
    sa, sb = subject_of(a).split("/")[-1], subject_of(b).split("/")[-1]
    roles = [s.split(":", 1)[1] for s in (sa, sb) if s.startswith("rel:")]
    if len(roles) == 2:
        return roles[0] == roles[1]
    if len(roles) == 1 and "self" in (sa, sb):
        # "现在我归刘敏管了" is about the boss "我的领导是王建国" named; "工作上换了个新项目" is
        # not about the father "我爸是退休的中学老师" names (it had replaced him).
        mine = a if sa == "self" else b
        return roles[0] in mine.lower() or bool(topics_of(roles[0]) & topics_of(mine))
    return False


# Kin said in one character or colloquially ("我妈", "我哥", "我老公"): not the speaker.
_KIN_ZH = ("妈", "爸", "哥", "姐", "弟", "妹", "老婆", "老公", "爷", "奶", "儿", "女")


# A word for any child, parent or sibling may name the son, the mother, the brother ("my kid Leo" is
# "my son Leo"): compared as the kind of kin.
_KIN_KIND = {"child": "child", "children": "child", "小孩": "child", "son": "child", "daughter": "child", "儿子": "child",
             "女儿": "child", "parent": "parent", "parents": "parent", "mother": "parent", "father": "parent",
             "妈妈": "parent", "爸爸": "parent", "父母": "parent", "sibling": "sibling", "siblings": "sibling",
             "brother": "sibling", "sister": "sibling", "哥哥": "sibling", "姐姐": "sibling", "弟弟": "sibling", "妹妹": "sibling"}
_GENERIC_KIN = frozenset({"child", "children", "小孩", "parent", "parents", "父母", "sibling", "siblings"})


def _kin_kinds(persons: frozenset[str]) -> frozenset[str]:
    """``persons`` as kinds of kin (son, daughter, kid: child), for comparing with a generic word."""
    return frozenset(_KIN_KIND.get(p, p) for p in persons)


def _same_owner(a: str, b: str) -> bool:
    """Whether two texts state facts of the same person. "My doctor raised my lisinopril to 15
    mg" is about the user's dose although the doctor is its subject: a first-person possessive
    after the subject makes a relative's or colleague's sentence compatible with the user's."""
    sa, sb = subject_of(a), subject_of(b)
    if sa == sb:
        return True
    # "My son Ethan plays the violin" / "Ethan has been playing violin": the name is the son (but
    # "my nephew Leo" is not "my son Leo": a name two people share, each said with who they are).
    pa, pb = signature(a).persons, signature(b).persons
    if (pa | pb) & _GENERIC_KIN:
        pa, pb = _kin_kinds(pa), _kin_kinds(pb)
    if pa and pb and not pa & pb:
        return False
    for subject, other_text in ((sa, b), (sb, a)):
        if subject.split("/")[-1].startswith("name:") and subject.split(":", 1)[1] in other_text.lower():
            return True
    # "endo appointment today, she confirmed I'm on 14 units": someone speaks of the user's fact.
    for subject, text, other in ((sa, a, sb), (sb, b, sa)):
        if subject.split("/")[-1] == "other" and other.endswith("self") and re.search(
                r"\b(?:he|she|they)\b.*\b(?:I'm|I am|my|me)\b|[他她].*我", text, _I):
            return True
    if sa.rsplit("/", 1)[0] != sb.rsplit("/", 1)[0] and ("/" in sa or "/" in sb):
        return False  # two speakers of a transcript
    for subject, text in ((sa, a), (sb, b)):
        other = sb if subject is sa else sa
        if other.endswith("self") and subject.split("/")[-1].startswith("rel:"):
            noun = subject.split(":", 1)[1]
            after = text[text.lower().find(noun) + len(noun):] if noun in text.lower() else ""
            # "My doctor raised my dose", "医生说我血压正常了": the relative or colleague speaks of
            # the user's own fact (a possessive, or reported speech about "me").
            if re.search(r"\bmy\b|我的|\b(?:says?|said|told me)\b.*\bI\b", after, _I):
                return True
            reported = re.search(r"(?:说|觉得|告诉)我", after)
            return reported is not None and not after[reported.end():].startswith((*PERSON_NOUNS_ZH, *_KIN_ZH))
    return False
