"""Slot-aware keyword expansion: a question about a slot also searches the words that state it.

"Where do I live?" shares no content word with "I moved to Shanghai last month", and the
multilingual e5 model scores it about as close to "I don't eat spicy food"; the keyword leg then
finds nothing and the answer rests on a near-tie. A question that names a slot (home, work,
phone, e-mail) adds the verbs and nouns people use to state that slot to the
keyword leg only (the dense query stays the user's words). The same slots drive newer-wins
conflict resolution, so a question finds the statement that superseded an older one.
"""
from __future__ import annotations

import re

# (slot name, question pattern, words added to the BM25 query). The names are the offline
# conflict rules' slot names (``memory_core.llm.offline``), so an answer to one of these questions
# can be read as a statement of that slot ("school" excepted: it only widens the search).
_SLOTS: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("address", re.compile(r"\bwhere\b.*\b(?:i|we)\s+(?:live|living|stay|based)\b|\bmy\s+(?:home\s+)?address\b|"
                r"\b(?:which|what)\s+(?:city|town|country|area|neighbou?rhood|part of town|suburb|state)\b.*\b(?:i|we)\s+"
                r"(?:live|living|stay|staying|based)\b|(?:哪个|什么)(?:城市|区|小区)|"
                r"\bwhere(?:'s| is)\s+my\s+home\b|住在?哪|家在哪|住址|我的地址|搬到哪", re.IGNORECASE),
     "live lives living moved move relocated home address apartment flat 住 搬 搬家 家 地址"),
    ("employer", re.compile(r"\bwhere\b.*\b(?:i|we)\s+work\b|\bmy\s+(?:job|employer|company|workplace)\b|"
                r"\bwhat\b.*\b(?:i|we)\s+do\s+for\s+(?:a\s+)?(?:living|work)\b|在哪(?:里|儿)?(?:上班|工作)|我的工作|"
                r"哪家公司", re.IGNORECASE),
     "work works working job company employer joined hired 工作 上班 公司 入职 跳槽"),
    ("phone", re.compile(r"\bmy\s+(?:phone|mobile|cell)(?:\s+number)?\b|电话|手机号", re.IGNORECASE),
     "phone number mobile call 电话 手机 号码"),
    ("email", re.compile(r"\bmy\s+e-?mail\b|邮箱", re.IGNORECASE), "email e-mail address 邮箱 邮件"),
    ("origin", re.compile(r"\bwhere\b.*\b(?:am|was|were) (?:i|we) (?:from|born|raised)\b|\bwhere\b.*\b(?:i|we) grew up\b|"
                r"\bmy\s+hometown\b|老家|家乡|籍贯|哪里人|哪儿人|哪的人|在哪(?:里|儿)?出生|出生在哪", re.IGNORECASE),
     "from hometown grew born raised 老家 家乡 籍贯 出生 人"),
    # "what car do I drive" shares only "drive" with "I drive a Mazda 3", and e5 puts a colleague's
    # "Dave ... just bought a Tesla" nearer: the words a vehicle is stated with. Not a conflict slot
    # (a household has several cars; newer-wins reads "car" as a state, states.json).
    ("vehicle", re.compile(r"\bwhat (?:kind of |make of |model of )?(?:car|vehicle)\b.*\b(?:i|we)\s+(?:drive|have|own)\b|"
                           r"\bmy\s+(?:car|vehicle)(?:'s)?\b|开的?(?:是)?(?:什么|啥|哪款|哪个牌子的?)车|我的车|我(?:家)?的?车(?:是|型)",
                           re.IGNORECASE),
     "drive drives driving car vehicle 开 车 开车 提车 买车 车型"),
    # "开家长会要去哪个学校来着" shares no word with "我儿子在实验二小读三年级": the words a school
    # is stated with (a grade, a school's kind). Not a conflict slot: a family has several schools.
    ("school", re.compile(r"哪(?:个|所|间|家)学校|在哪(?:里|儿)?(?:上学|读书|念书)|几年级|"
                          r"\b(?:which|what) (?:school|kindergarten|college)\b|\bwhat grade (?:is|are|was|will)\b|"
                          r"\bwhere\b.*\b(?:go|goes|going) to school\b",
                          re.IGNORECASE),
     "school grade class elementary primary kindergarten college 学校 小学 中学 初中 高中 大学 幼儿园 年级 上学 读书"),
    # Questions about one's health, diet or siblings name a category; the memory names a member
    # ("我有啥基础病来着" / "我有哮喘", "what can't I eat" / "peanuts, not even a trace", "我有没有兄弟
    # 姐妹" / "我是独生女"). Not conflict slots: one has several conditions, rules and siblings.
    ("health", re.compile(r"基础病|既往病史|病史|慢性病|(?:有|得过)(?:什么|啥)病|身体(?:状况|情况)|"
                          r"\bmedical (?:history|conditions?)\b|\bhealth (?:conditions?|problems?|issues?)\b|"
                          r"\bchronic (?:conditions?|illness\w*|diseases?)\b|\bpre-?existing\b|"
                          r"\b(?:what|any) (?:health|medical|chronic) conditions?\b", re.IGNORECASE),
     "condition chronic diagnosed asthma diabetes hypertension blood pressure allergic allergy "
     "病 哮喘 高血压 糖尿病 心脏病 过敏 确诊 慢性"),
    ("diet", re.compile(r"忌口|不能吃(?:什么|啥)|不吃(?:什么|啥)|饮食(?:禁忌|要求)|\bdietary (?:restrictions?|requirements?|needs)\b|\bfood (?:restrictions?|allerg\w*)\b|"
                        r"\bwhat (?:can'?t|shouldn'?t|don'?t) i eat\b|\bcan'?t i eat\b", re.IGNORECASE),
     "allergic allergy vegetarian vegan eat intolerant 忌口 过敏 不吃 不能吃 吃不了 素 清真"),
    ("siblings", re.compile(r"兄弟姐妹|兄妹|姐弟|\bsiblings?\b|\bbrothers? or sisters?\b|\bonly child\b", re.IGNORECASE),
     "sibling brother sister only child 独生 独生子 独生女 哥哥 姐姐 弟弟 妹妹 兄弟 姐妹"),
)


# Slots that name a category the world has too: asked about only when the user asks of themself
# ("what medical conditions do I have", not "the most common chronic diseases in the world").
_OWN_ONLY = frozenset({"health", "diet", "siblings"})
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|my|me|mine)\b|我(?!们)", re.IGNORECASE)


def _asked(query: str) -> list[tuple[str, str]]:
    own = _FIRST_PERSON.search(query) is not None
    return [(name, words) for name, pattern, words in _SLOTS
            if pattern.search(query) and (own or name not in _OWN_ONLY)]


def slot_keywords(query: str, recall: bool = False) -> str:
    """Extra words for the slots ``query`` asks about ("" when it names none). With ``recall``
    (the keyword leg's query), the category slots are left out: their member words ("高血压",
    "asthma") would rank anyone's condition up, a father's too; they serve the relevance
    threshold's word coverage only, where the ranking has already put the user's own first."""
    return " ".join(words for name, words in _asked(query) if not (recall and name in _OWN_ONLY))


def slots_asked(query: str) -> list[str]:
    """Names of the slots ``query`` asks about, in the user's own words ("Where do I live?" ->
    ``["address"]``)."""
    return [name for name, _words in _asked(query)]
