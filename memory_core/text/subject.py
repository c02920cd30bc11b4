"""Who a statement is about: the user, a relative or colleague, a named person, a speaker.

Newer-wins compares facts about the same thing *of the same person*: "我的上司在深圳上班" and
"我表弟在杭州上班" are about two people, and so are "Vanessa: I like bubble tea" and
"Nicolas: I hate bubble tea" (two speakers of a transcript, each saying "I"). A fixed list
of relatives missed 上司 and 表弟, and every transcript speaker counted as the user: 84
memories about other people were hidden on a held-out Chinese set.

``subject_before(text, position)`` reads the subject of the clause that holds a fact found at
``position`` (the last person named before it in that clause); ``subject_of(text)`` the subject
of the text as a whole. Both return a short key: ``"self"``, ``"rel:<noun>"``, ``"name:<name>"``,
``"other"`` (he / she / they), ``"of:<owner>:<noun>"`` (someone's person: "Tom's manager", 老王的
儿子), each prefixed with ``"<speaker>/"`` for a transcript line.
"""
from __future__ import annotations

import re
from functools import lru_cache

from memory_core.text.lang import jieba_pos_tokenizer
from memory_core.text.speaker import speaker_label

_I = re.IGNORECASE

PERSON_NOUNS_EN = frozenset(
    """wife husband son sons daughter daughters mother father mom mum mommy mummy dad daddy parent parents sister
    sisters brother brothers sibling siblings grandma granny grandpa grandmother grandfather grandparents
    grandson granddaughter aunt auntie uncle cousin cousins niece nephew girlfriend boyfriend gf bf fiance fiancé
    fiancee fiancée partner spouse kid kids child children baby toddler friend friends bestie buddy pal colleague
    colleagues coworker coworkers co-worker co-workers boss manager supervisor roommate flatmate housemate
    neighbor neighbour neighbors neighbours teacher classmate classmates mentor doctor dentist therapist landlord
    landlady stepmom stepdad stepmother stepfather stepson stepdaughter in-laws mother-in-law father-in-law
    sister-in-law brother-in-law boss's team teammate teammates assistant nanny babysitter ex exes""".split()
)
PERSON_NOUNS_ZH = tuple(sorted(
    """妈妈 母亲 老妈 爸爸 父亲 老爸 老婆 妻子 爱人 媳妇 老公 丈夫 女儿 儿子 孩子 宝宝 闺女 哥哥 姐姐 弟弟 妹妹 爷爷 奶奶 外公
    外婆 姥姥 姥爷 叔叔 阿姨 舅舅 舅妈 姑姑 姑父 姑妈 婶婶 伯伯 伯父 伯母 表哥 表姐 表弟 表妹 堂哥 堂姐 堂弟 堂妹 侄子 侄女
    外甥 外甥女 孙子 孙女 女朋友 男朋友 女友 男友 对象 未婚妻 未婚夫 朋友 好朋友 闺蜜 哥们 发小 同事 同学 室友 舍友 邻居
    老板 上司 领导 经理 主管 老师 师傅 医生 房东 岳父 岳母 公公 婆婆 家人 父母 爸妈 小孩 大哥 大姐 二哥 二姐 小姨 大姨 姨妈
    姐夫 嫂子 弟媳 妹夫 同桌 队友 导师 助理 保姆 前任 前妻 前夫 前男友 前女友""".split(), key=len, reverse=True))
# (前任 inside 目前任职 / 提前任务 is no ex)
_PERSON_ZH_RE = re.compile("|".join(PERSON_NOUNS_ZH).replace("前任", "(?<![目提之此以事超空当眼跟面门从向往])前任(?![职务何期])"))
# 小王 / 老李 (a surname after 小 or 老) is how colleagues and neighbours are called; surnames that also
# open common words (程序, 高手, 金额, 方便, 马上 ...) are left out: 小程序 is no one.
_SURNAME_ZH = "[王李张刘陈杨赵吴周徐孙胡郭何林罗郑梁谢宋唐许韩冯邓曹彭曾肖董袁潘蒋蔡杜叶苏魏吕丁沈姚卢姜崔钟谭陆汪范廖贾韦邹孟熊秦邱尹薛闫段雷侯陶黎贺顾郝龚邵严覃戴莫孔汤]"
_BY_SURNAME_ZH = "(?:小|老)" + _SURNAME_ZH
# One name for each person a user may call several ways ("闺女" is "女儿", "boss" is "manager").
_ROMANTIC = frozenset({"spouse", "boyfriend", "girlfriend", "partner", "fiance", "fiancee", "ex"})
_SAME_PERSON = {
    "mom": "mother", "mum": "mother", "mommy": "mother", "mummy": "mother", "dad": "father", "daddy": "father",
    "manager": "boss", "supervisor": "boss", "gf": "girlfriend", "bf": "boyfriend", "fiancé": "fiance",
    "fiancée": "fiancee", "grandma": "grandmother", "granny": "grandmother", "grandpa": "grandfather",
    "coworker": "colleague", "co-worker": "colleague", "kid": "child", "kids": "children",
    # One spouse, however called: 爱人 is either ("我老公是医生" / "我爱人是做医生的" are one person).
    "wife": "spouse", "husband": "spouse",
    "闺女": "女儿", "老婆": "配偶", "媳妇": "配偶", "爱人": "配偶", "妻子": "配偶", "老公": "配偶", "丈夫": "配偶",
    "老妈": "妈妈", "母亲": "妈妈",
    "老爸": "爸爸", "父亲": "爸爸", "上司": "领导", "老板": "领导", "主管": "领导", "经理": "领导", "女友": "女朋友",
    "男友": "男朋友", "孩子": "小孩", "姥姥": "外婆", "姥爷": "外公",
    # an ex, however called, in either language ("my ex", "my ex-wife", 前任, 前妻)
    "exes": "ex", "前任": "ex", "前妻": "ex", "前夫": "ex", "前男友": "ex", "前女友": "ex",
}


# Kin said with one character after 我 (我爸, 我妈, 我哥): the full noun each stands for.
_KIN_ZH = {"爸": "爸爸", "妈": "妈妈", "哥": "哥哥", "姐": "姐姐", "弟": "弟弟", "妹": "妹妹", "爷": "爷爷", "奶": "奶奶",
           "姥": "姥姥"}
# The relatives said in one character after 我 ("我妈", "我哥"): not the speaker.
KIN_ZH_ONE_CHAR = frozenset(_KIN_ZH)
_OF_SOMEONE_ZH = re.compile("(" + _BY_SURNAME_ZH + "|" + _SURNAME_ZH + "(?:总|经理|老师|医生|主任|姐|哥)|" + "|".join(PERSON_NOUNS_ZH)
                            + r"|我(?:爸|妈|哥|姐|弟|妹))的$")
_MY_KIN_ZH = re.compile(r"我(爸|妈|哥|姐|弟|妹|爷|奶|姥)(?![爸妈哥姐弟妹爷奶姥])")


def person_key(noun: str) -> str:
    """The one name of a person noun (see ``_SAME_PERSON``)."""
    return _SAME_PERSON.get(noun, noun)
# ("ex" alone is a person: "my ex moved to Boston"; before a noun it qualifies it: "my ex-wife")
_MY_PERSON_EN = re.compile(r"\b(?:my|our)\s+(?:(?:older|younger|little|big|elder|best|new|old|ex(?=[\s-](?:wife|husband|boyfriend|girlfriend|partner|bf|gf|fianc\w*|boss|roommate|flatmate|housemate|colleague|coworker|manager)\b)|late|oldest|"
                           r"youngest|eldest|twin)[\s-]+)?([a-z][a-z\-']*)", _I)
# 他 inside a word is no one: 其他 (other; 尤其 + 他 is "he"), 吉他 (guitar), 他汀 (a statin: "阿托伐他汀每晚10
# 毫克"), 他乡, 维他命, 利他林.
_PRONOUN_OTHER = re.compile(r"\b(?:he|she|they|him|her|them|his|their)\b|他们|她们|(?<![吉维利])(?<![^尤]其)(?<!^其)他(?![汀乡命林])|她", _I)
_SELF = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|im|ive|me|my|mine|myself)\b|我", _I)
_EN_NAME = re.compile(r"(?<![\w'’])([A-Z][a-zà-öø-ÿ]+(?:\s[A-Z][a-zà-öø-ÿ]+)?)(?:'s|’s)?\s+(?:is|was|lives|lived|works|"
                      r"worked|has|had|moved|likes|loves|hates|got|just|prefers|eats|drinks|doesn't|does|can|will|"
                      r"'s|and I\b)")
_EN_NAME_S = re.compile(r"(?:^\W*|[,;:—–-]\s*|\b(?:and|but|so)\s+)([A-Z][a-zà-öø-ÿ]+)['’]s\b")
# Someone introduced by where they work or live, opening the statement and doing something:
# "Dave from accounting just bought a Tesla", "Priya on my team is vegan", "Sam next door adopted a
# puppy", "公司的Dave买了新车" (a Latin name after 的). Not "Working from the office", "Im at work",
# "Stuck at work again": a word in -ing or a sentence opener is no name, and "at / in" a place says
# where the user is, so only "from", "on my team" and "next door" introduce someone.
_NOT_INTRODUCED = frozenset("""Im Ive Back Home Busy Late Stuck Lunch Dinner Breakfast Still Just Now Then Also
    Fresh Early Off Out Up Down Today Yesterday Tonight Weekend Monday Tuesday Wednesday Thursday Friday Saturday
    Sunday""".split())
_INTRODUCED = re.compile(
    r"^\W*(?P<name>(?-i:[A-Z][a-zà-öø-ÿ]+))\s+(?:from\s+(?:the\s+|my\s+|our\s+)?(?:work|office|accounting|finance|hr|"
    r"sales|marketing|legal|it|engineering|team|department|dept|gym|church|class|school|uni|book club)|"
    r"on\s+(?:my|our)\s+team|next door|upstairs|downstairs|down the hall)\b"
    r"(?!\s+(?:and|&)\s+(?:i|me)\b)(?=\s+(?:just\s+|also\s+|finally\s+)?(?:is|was|has|had|'s|got|bought|adopted|"
    r"moved|left|quit|drives|lives|works|loves|hates|won't|can't|never|always|keeps)\b)|"
    r"^\W*[\u4e00-\u9fff]{0,4}(?:部|组|科|处|室|团队|公司|单位|隔壁|楼上|楼下|对门|小区|健身房)的"
    r"(?P<name_zh>(?-i:[A-Z][a-z]+)|" + _BY_SURNAME_ZH + ")",
    re.IGNORECASE)
_CLAUSE_START = re.compile(r"[。！？!?；;\n]|[，,](?=\s*(?:but|and then|however|while|whereas|而|但|不过|可是|他|她|我))", _I)
_NOT_NAMES = frozenset("""I The A An My Our This That These Those It He She They We You Today Yesterday Tomorrow
    Tonight Last Next Every Each Also Just Still Now Then So And But Or If When While Mom Dad""".split())


def _clause_before(text: str, position: int) -> str:
    """The clause ``position`` lies in, up to ``position``."""
    head = text[:position]
    starts = [m.end() for m in _CLAUSE_START.finditer(head)]
    return head[starts[-1]:] if starts else head


def _person_in(fragment: str) -> str | None:
    """The last person named in ``fragment`` (a relative/colleague, a name, he/she), or None."""
    found: list[tuple[int, str]] = []
    for m in _MY_PERSON_EN.finditer(fragment):
        noun = re.sub(r"['’]s$", "", m.group(1).lower())
        if noun == "ex" and re.match(r"\s+(?!(?:is|was|has|had|and|just|moved|lives|works|said|says|got|wants|still|"
                                     r"texted|called|told)\b)[a-z]", fragment[m.end():], _I):
            continue  # "my ex job", "my ex flat": an earlier thing, not the ex
        if noun in PERSON_NOUNS_EN:
            singular = noun[:-1] if noun.endswith("s") and noun[:-1] in PERSON_NOUNS_EN else noun
            if re.search(r"\bex[\s-]", m.group(0), _I):  # "my ex-wife" is not "my wife": the ex, one of them
                singular = "ex" if person_key(singular) in _ROMANTIC else f"ex-{person_key(singular)}"
            found.append((m.start(), f"rel:{person_key(singular)}"))
    for m in _PERSON_ZH_RE.finditer(fragment):
        # "老王的领导是张总", "我妈的同事": someone's person is someone else again, not the user's
        owner = _OF_SOMEONE_ZH.search(fragment, 0, m.start())
        found.append((m.start(), f"of:{owner.group(1)}:{person_key(m.group(0))}" if owner
                      else f"rel:{person_key(m.group(0))}"))
    for m in _MY_KIN_ZH.finditer(fragment):  # "我爸是退休的中学老师": the father, not the user
        found.append((m.start(), f"rel:{person_key(_KIN_ZH[m.group(1)])}"))
    for m in _EN_NAME.finditer(fragment):
        name = m.group(1)
        if name.split()[0] not in _NOT_NAMES:
            found.append((m.start(), f"name:{name.lower()}"))
    # "Anna's working at Google", "Anna's job is at Google": a name with 's at the head of the
    # clause is whom it is about, whether the 's is "is"/"has" or a possessive.
    for m in _EN_NAME_S.finditer(fragment):
        if m.group(1) not in _NOT_NAMES and not any(start == m.start(1) for start, _ in found):
            # "Tom's manager is Sarah" is about Tom's manager, someone else again (it had replaced
            # "my manager is Tom": the name read as whom it is about)
            kin = re.match(r"\s+(?:(?:new|old|ex|older|younger|little|big)\s+)?([a-z][a-z\-]*)", fragment[m.end():], _I)
            of_someone = kin is not None and kin.group(1).lower() in PERSON_NOUNS_EN
            found.append((m.start(1), f"of:{m.group(1).lower()}:{person_key(kin.group(1).lower())}" if of_someone
                          else f"name:{m.group(1).lower()}"))
    # "财务部的小王刚提了辆特斯拉": a colleague called by surname, where they work said first.
    introduced = _INTRODUCED.match(fragment)
    if introduced is not None and introduced.group("name_zh"):
        found.append((introduced.start("name_zh"), f"name:{introduced.group('name_zh')}"))
    # "王丽搬到上海了", "小王现在在谷歌上班了": a person's name (jieba tags it nr) opening the clause.
    for start, name in _zh_names(fragment):
        found.append((start, f"name:{name}"))
    for m in _PRONOUN_OTHER.finditer(fragment):
        found.append((m.start(), "other"))
    if not found:
        return None
    # "My wife and I live in ..." is about the user (with someone): "and I" after the person.
    position, subject = max(found)
    if re.search(r"\band I\b|和我|跟我", fragment[position:], _I) or re.search(r"我[^，。,]{0,8}?(?:和|跟|与|同)\s*$", fragment[:position]) \
            or re.search(r"\b(?:me|i)\s+(?:and|nor|or)\s*$", fragment[:position], _I):
        return None  # "neither me nor my husband can swim", "me and my wife": the user, with someone
    return subject


def _zh_names(fragment: str) -> list[tuple[int, str]]:
    """Chinese personal names (jieba's ``nr``) that open the clause, after a time word at most:
    "王丽搬到上海了", "昨天小王说...". Person nouns jieba also tags nr (老公) are relatives, read above."""
    head = fragment.lstrip()
    if not head or not re.match(r"[\u4e00-\u9fff]", head):
        return []
    offset = len(fragment) - len(head)
    position = 0
    for token in jieba_pos_tokenizer().cut(head[:12]):
        if token.flag == "nr" and len(token.word) >= 2 and token.word not in PERSON_NOUNS_ZH:
            return [(offset + position, token.word)]
        if token.flag not in ("t", "d") or token.word in ("我", "我们"):
            return []  # the clause opens with something else: not a name as its subject
        position += len(token.word)
    return []


@lru_cache(maxsize=8192)
def subject_before(text: str, position: int) -> str:
    """Who the fact found at ``position`` of ``text`` is about (see the module docstring)."""
    label = speaker_label(text)
    prefix = ""
    if label is not None:
        prefix = f"{label.casefold()}/"
        cut = text.find(":") if ":" in text[:80] else text.find("：")
        body_start = cut + 1 if cut >= 0 else 0
        position = max(position, body_start)
        fragment = _clause_before(text[body_start:], position - body_start)
    else:
        fragment = _clause_before(text, position)
    person = _person_in(fragment)
    return prefix + (person or "self")


# The end of the first statement: Chinese and other stops, and an English full stop before a
# capital ("Sold the old car. Charging is new to me": "Charging" is no name of whom the first is
# about), not after a title or an initial ("Dr. Obi", "J. Smith").
_STATEMENT_END = re.compile(r"[。！？!?；;\n]|(?<![A-Z][a-z])(?<![A-Z])\.\s+(?=[A-Z])")


# What someone teaches, lets, makes or helps the user do is the user's own doing: "孙子教会我用微信
#支付了" and "My grandson taught me to use WeChat Pay" say how the user pays now. ("told me" only
# with "to": "my sister told me she moved" is the sister's news.) So is what the user does with
# someone, said without "我": "跟我妈商量完了 国庆改去大理".
_DONE_BY_ME = re.compile(r"(?:教会|教|让|帮|逼|劝)我(?!们)|给我开了?(?![了门车灯])|"
                         # done with someone, the subject dropped: "跟我妈商量完了 国庆改去大理" (not 跟我说)
                         r"^\W*(?:跟|和|与|同)我(?!们|说|讲|聊)(?![^。！？!?]*[他她])|\b(?:taught|teach(?:es)?|helped|helps?|made|makes|got|"
                         r"told|tells|convinced|persuaded|encouraged)\s+me\s+(?:how\s+)?to\b|"
                         r"\b(?:made|makes|helped|helps)\s+me\s+(?!(?:to|a|an|the|some|my|his|her|their|our)\b)[a-z]+|"
                         # a prescription is the user's: "医生给我开了阿托伐他汀", "my doctor put me on statins"
                         r"\b(?:put|started|switched)\s+me\s+on\b|\bprescribed\s+me\b", _I)


@lru_cache(maxsize=8192)  # pure; asked of both sides of every newer-wins pair
def subject_of(text: str) -> str:
    """Who ``text`` as a whole is about: the subject of its first statement (of what is reported,
    when someone is said to have said it: ``_reported_subject``)."""
    match = _STATEMENT_END.search(text)
    end = match.start() if match else len(text)
    reported = _reported_subject(text, end)
    if reported is not None:
        return reported
    # The subject of a clause sits before its verb: look at the clause's head, not its objects.
    head_end = min(end, _verb_position(text, end))
    done_by_me = _DONE_BY_ME.search(text, 0, end)
    if done_by_me is not None and done_by_me.start() <= head_end and not _CLAUSE_START.search(
            text, 0, done_by_me.start()):
        return subject_before(text, 0)  # the user (the speaker, on a transcript line)
    return subject_before(text, head_end)


_VERB = re.compile(r"(?<=[A-Za-z])['’](?:m|re|ve)\b|\b(?:is|was|are|were|am|lives?|lived|works?|worked|has|had|have|moved|likes?|loves?|hates?|"
                   r"got|prefers?|eats?|drinks?|can|will|does|do|did|takes?|took|adopted|bought|sold|started|went|"
                   r"visited|picked|found|lost|joined|married)\b|在|是|住|喜欢|不|没|有|会|要|去|"
                   r"吃|喝|叫|买|开|用|搬|当|做|教|读|学|练|考|养|"
                   # verbs whose object is a person ("带爸妈去云南": the user takes the parents)
                   r"带|陪|请|送|打算|准备|计划", _I)


def _verb_position(text: str, end: int) -> int:
    """Where the first verb of the first clause starts (its subject lies before it)."""
    label = speaker_label(text)
    start = 0
    if label is not None:
        start = text.find(":") + 1 if ":" in text[:80] else text.find("：") + 1
    match = _VERB.search(text, start, end)
    return match.end() if match else end


def same_subject(a: str, b: str) -> bool:
    """Whether two texts, as wholes, are about the same person."""
    return subject_of(a) == subject_of(b)


# ---- reported speech: whose fact someone passes on ---------------------------------------------
# What someone says is about whom their words name: "领导说我下个月调去杭州" and "my doctor said my
# cholesterol is 5.2" are the user's, "医生说我爸要做手术" the father's, "我妈说她房租涨了" the mother's.
# Said with no one named, it is the user's when the speaker is the other side of one of the user's
# arrangements (the landlord of their rent, the doctor of their health, the boss or HR of their job,
# their bank or school): "房东说下个月房租涨到4200", "my landlord told me the rent is going up to
# 1600" move the user's rent; read as the landlord's own fact, they replaced nothing. A relative's or
# friend's news with no one named stays theirs ("我妈说下个月房租涨到3000").
_COUNTERPART_ZH = "房东|中介|物业|医生|大夫|牙医|领导|上司|老板|主管|经理|人事|HR|公司|单位|银行|学校|保险公司"
_COUNTERPART_EN = ("landlord|landlady|letting agent|property manager|doctor|gp|dentist|physician|nurse|therapist|"
                   "boss|manager|supervisor|hr|company|employer|bank|school|insurer|insurance company")
_SAYS_ZH = (r"(?:刚刚?|今天|昨天|又|也|那边)?(?:跟我|和我|给我)?(?:说|讲|通知(?:我|说)?|告诉我|回复(?:我|说)?|"
            r"发(?:消息|微信|短信|邮件)(?:给我)?(?:说|通知)?|打电话(?:给我)?(?:来)?说|来电话说)")
_SAYS_EN = (r"(?:just|finally|also|now|today|yesterday)?\s*(?:said|says|told (?:me|us)|tells (?:me|us)|emailed|"
            r"e-mailed|texted|called|messaged|rang|wrote|confirmed|informed (?:me|us)|let (?:me|us) know|announced)"
            r"(?:\s+(?:me|us))?(?:\s+that)?")
_REPORTED = re.compile(
    r"^\W*(?:(?:今天|昨天|前天|最近|上周|刚才|刚刚|哎|唉|对了|跟你说)\s*)*(?:我的?|我们的?|我家)?"
    rf"(?:(?P<zh_counterpart>{_COUNTERPART_ZH})|{'|'.join(PERSON_NOUNS_ZH)}|我(?:爸|妈|哥|姐|弟|妹|爷|奶|姥)|"
    # "健身房的小刘教练说我体脂降了": someone called by surname, with a title
    r"[\u4e00-\u9fff]{0,5}的?" + _BY_SURNAME_ZH + r"(?:教练|老师|医生|大夫|师傅|经理|总|姐|哥)?)"
    rf"{_SAYS_ZH}[\s,，:：]*|"
    r"^\W*(?:(?:so|and|oh|btw|also|well|lol|ugh|today|yesterday|guess what)\W+)*(?:(?:my|our|the)\s+)?"
    rf"(?:(?P<en_counterpart>{_COUNTERPART_EN})|[a-z\-]+)\s+{_SAYS_EN}[\s,:\-–—]*",
    _I)


# What a landlord or a doctor says of another flat, of people in general or of a time to come is not
# the user's fact: "the flat upstairs rents for 2000", "normal blood pressure is under 120",
# "楼上那家的房租是5000", "一般人的血压是120", "等血压稳定了可以停药" (found in review).
_NOT_THE_USERS = re.compile(r"\b(?:upstairs|downstairs|next door|neighbou?rs?'?|the guy|the flat|the other|normal|average|"
                            r"most people|everyone|anyone|people|in general|usually|if|once|when|team'?s?|company'?s?|"
                            r"department|office)\b|"
                            r"楼上|楼下|隔壁|邻居|那家|别人|一般人|正常人|大部分人|大多数人|一般|正常的|等|如果|要是|公司的|团队|部门", _I)
# ... and what HR says of a group the user is not in is someone else's fact, never the user's: "HR
# said the new starting salary for juniors is 60k" had replaced "my salary is 50k".
_OTHER_GROUP = re.compile(r"\b(?:juniors?|seniors|new hires?|new starters?|graduates|grads|interns?|trainees?|"
                          r"starting (?:salary|pay|wage|rate)|entry[- ]level)\b|新人|新员工|应届生|实习生|校招|起薪", _I)


_CALLED_BY_SURNAME = re.compile(_BY_SURNAME_ZH)


def _reported_subject(text: str, end: int) -> str | None:
    """Whom what a person is said to have said is about, or None when ``text`` reports no one's
    words in its first statement (or reports a relative's or friend's news that names no one)."""
    if speaker_label(text) is not None:
        return None
    reported = _REPORTED.match(text)
    if reported is None or reported.end() >= end:
        return None
    word = reported.group(0)
    counterpart = reported.group("zh_counterpart") or reported.group("en_counterpart")
    if not counterpart and not (_PERSON_ZH_RE.search(word) or _MY_KIN_ZH.search(word) or _CALLED_BY_SURNAME.search(word)
                                or set(re.findall(r"[a-z\-]+", word.lower())) & PERSON_NOUNS_EN):
        return None  # "the weather said ...", "it says ...": no person reports anything
    content = text[reported.end():]
    said_of = subject_of(content)
    if said_of != "self":
        return said_of
    if _OTHER_GROUP.search(content) and not _SELF.search(content):
        return "other"  # "HR说今年应届生起薪一万八": the graduates' pay, not the user's
    if _NOT_THE_USERS.search(content):
        return None  # "most people my age", "the team's budget": the speaker's word, not the user's fact
    if counterpart or _SELF.search(_FIRST_CLAUSE.split(content, 1)[0]):
        return "self"
    return None


# ---- ranking: a question about the user, a memory about someone else -------------------------
_PEOPLE_WORDS = re.compile(
    r"\b(?:family|families|people|person|someone|somebody|anyone|anybody|everyone|everybody|relatives?|"
    r"he|she|him|her|his|hers|they|them|their|who|whom|whose)\b|"
    r"兄弟|姐妹|亲戚|家里人|家人|别人|谁|他|她", _I)
_ME_AND = re.compile(r"^\W*(?:me|i) and\b", _I)
_WE = re.compile(r"\b(?:we|our|us)\b", _I)
_LEAD_EN = r"^\W*(?:(?:so|and|oh|btw|also|well|lol|haha|ugh|today|yesterday|just|guess what)\W+)*"
_LEAD_ZH = r"^\W*(?:(?:今天|昨天|前天|最近|上周|刚才|刚刚|哎|唉|哈哈+|对了|跟你说)\s*)*"
_NOUNS_EN = "|".join(sorted((re.escape(n) for n in PERSON_NOUNS_EN), key=len, reverse=True))
# The statement opens with the other person: "my sister just got ...", "my friend's daughter
# is ...", "he ...", "我爸糖尿病 ...", "我同事说她 ...", "领导说 ...".
_OPENS_WITH_OTHER = re.compile(
    rf"{_LEAD_EN}(?:(?:my|our)\s+(?:[\w\-]+\s+){{0,2}}?(?:{_NOUNS_EN})(?:['’]s)?\b|(?:he|she|they)\b)(?!\s+and\s+i\b)|"
    rf"{_LEAD_ZH}(?:我的?|我们的?|我家)?(?:{'|'.join(PERSON_NOUNS_ZH)})(?![和跟与]我)|{_LEAD_ZH}我(?:爸|妈|哥|姐|弟|妹|爷|奶|姥)"
    rf"(?![爸妈哥姐弟妹爷奶姥和跟与])|{_LEAD_ZH}(?:他|她)(?!们)", _I)
# ... but what they do to, for or about the user is the user's: "妈妈送给我一对耳环", "my dad took
# me to the zoo", "爸爸送给Bart一个玩具", and in the same clause "My doctor put me on metformin",
# "医生说我有高血压", "我老板把我调到北京了" (not "我同事说她一喝咖啡就失眠 跟我以前一样": a later clause).
_USER_IN_IT = re.compile(r"\b(?:me|i|i'm|i've|my|myself)\b|我(?!们)", _I)
_FIRST_CLAUSE = re.compile(r"[，,。.!！?？；;\n]|(?<=[\u4e00-\u9fff])\s+(?=[\u4e00-\u9fff])")
_TO_THE_USER = re.compile(r"(?:送给?|给|带|陪|教|帮|请|接|送)了?(?:我(?!们)|[A-Z][a-z]+)|\b(?:gave|took|brought|taught|helped|"
                          r"bought|sent|invited|drove|showed|surprised|visited) (?:me|[A-Z][a-z]+)\b", _I)


def mentions_a_person(text: str) -> bool:
    """Whether ``text`` names or points to anyone besides the user: a relative or colleague
    (either language, 我爸 included), a name at the head of a clause, he / she, "family", 谁."""
    words = {w.lower() for w in re.findall(r"[A-Za-z][A-Za-z\-']*", text)}
    if words & PERSON_NOUNS_EN or {w[:-2] for w in words if w.endswith("'s")} & PERSON_NOUNS_EN:
        return True
    if _PERSON_ZH_RE.search(text) or _MY_KIN_ZH.search(text) or _PEOPLE_WORDS.search(text):
        return True
    return subject_of(text).startswith("name:")


@lru_cache(maxsize=4096)
def asks_about_the_user(query: str) -> bool:
    """A question about the user alone ("what's my job right now?", "我现在喝咖啡吗"): in the
    first person, with no one else in it. Asked about a sister or "Felix", it is not."""
    first_person = _SELF.search(query) is not None or _WE.search(query) is not None
    return first_person and not mentions_a_person(query) and subject_of(query) == "self"


@lru_cache(maxsize=16384)
def about_someone_else(text: str) -> bool:
    """A memory whose fact is a relative's, a colleague's or a he / she's ("my sister just got a
    job at Pfizer", "我爸糖尿病又严重了"), not the user's: it opens with that person, and is about
    them. Names are left out: the user's own name or a pet's opens a memory as often as another
    person's does ("Bart与家人享用了早餐" is Bart's). A transcript line belongs to its speaker,
    which the speaker part ranks."""
    introduced = _INTRODUCED.match(text)
    if introduced is not None and (introduced.group("name") or "") not in _NOT_INTRODUCED \
            and not (introduced.group("name") or "x").endswith("ing") and speaker_label(text) is None \
            and not _TO_THE_USER.search(text) \
            and not _USER_IN_IT.search(_FIRST_CLAUSE.split(text[introduced.end():], 1)[0]):
        return True  # "Dave from accounting just bought a Tesla": a colleague's, not the user's
    opening = _OPENS_WITH_OTHER.search(text)
    if (speaker_label(text) is not None or _ME_AND.search(text) or opening is None or _TO_THE_USER.search(text)
            or _USER_IN_IT.search(_FIRST_CLAUSE.split(text[opening.end():], 1)[0])):
        return False  # "Bart与家人享用了早餐", "Lisa and her family ...": the named one's, with others
    subject = subject_of(text)
    return subject.startswith(("rel:", "of:")) or subject == "other"
