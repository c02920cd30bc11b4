"""Keyword tokens for the keyword (BM25) leg of search and for overlap scoring.

Chinese has no spaces, and Milvus Lite's analyzers handle either Chinese or English well but
not both; so we segment here, once, the same way for stored text and for queries, and hand
Milvus pre-segmented, whitespace-joined text (:func:`bm25_text`). Chinese runs go through
jieba's search mode (words plus their sub-words, so "北京市" also matches "北京"), and the BM25
leg also gets each run's character pairs (:func:`cjk_bigrams`); Latin runs are lowercased and
lightly stemmed so "allergies"/"allergy" and "hiking"/"hike" meet.
"""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from memory_core.text.lang import CJK_CLASS, jieba_tokenizer

# ISO dates stay one token (normalize_relative_dates writes them); then CJK runs; then
# Latin words (with an inner apostrophe: don't, user's); then numbers (3.5 stays whole).
_TOKEN_RE = re.compile(
    rf"(?P<date>\d{{4}}-\d{{2}}-\d{{2}})"
    rf"|(?P<cjk>[{CJK_CLASS}]+)"
    r"|(?P<word>[A-Za-z]+(?:['’][A-Za-z]+)*)"
    r"|(?P<num>\d+(?:\.\d+)?)"
)

EN_STOPWORDS: frozenset[str] = frozenset(
    """a an the and or but if then else of to in on at by for with about from into over after
    before under between through during without within as is am are was were be been being do
    does did doing done have has had having i me my mine myself we us our ours you your yours
    he him his she her hers it its they them their theirs this that these those there here
    what which who whom whose when where why how all any both each few more most other some
    such no nor not only own same so than too very can could will would shall should may might
    must just also up down out off again once s t don't doesn't didn't isn't aren't wasn't
    weren't won't can't i'm i've i'd i'll you're it's that's there's let's please hey hi hello
    ok okay yes yeah oh um uh""".split()
)
ZH_STOPWORDS: frozenset[str] = frozenset(
    """的 了 着 过 是 在 和 与 及 或 也 都 就 还 又 而 但 把 被 让 给 对 向 从 到 于 为 以 之 其
    我 你 您 他 她 它 我们 你们 他们 她们 它们 自己 这 那 这个 那个 这些 那些 这里 那里 这样 那样
    吗 呢 吧 啊 呀 哦 嗯 哈 么 嘛 啦 哇 呃 一个 一下 一些 有 没 没有 不 很 太 更 最 非常 什么 怎么
    怎么样 为什么 哪 哪里 哪儿 谁 几 多少 请 请问 帮 帮我 一下子 可以 能 会 要 想 告诉 知道 就是 还是 然后
    所以 因为 如果 虽然 但是 并且 而且 或者 个 些 位 之前 之后 时候""".split()
)
STOPWORDS: frozenset[str] = EN_STOPWORDS | ZH_STOPWORDS

_VOWELS = set("aeiou")


def _is_consonant(word: str, i: int) -> bool:
    ch = word[i]
    if ch in _VOWELS:
        return False
    if ch == "y":
        return i == 0 or not _is_consonant(word, i - 1)
    return True


def _measure(stem: str) -> int:
    """Porter's m: the number of vowel-consonant sequences in ``stem``."""
    m, prev_vowel = 0, False
    for i in range(len(stem)):
        vowel = not _is_consonant(stem, i)
        if prev_vowel and not vowel:
            m += 1
        prev_vowel = vowel
    return m


def _has_vowel(stem: str) -> bool:
    return any(not _is_consonant(stem, i) for i in range(len(stem)))


def _ends_cvc(stem: str) -> bool:
    return (
        len(stem) >= 3
        and _is_consonant(stem, len(stem) - 3)
        and not _is_consonant(stem, len(stem) - 2)
        and _is_consonant(stem, len(stem) - 1)
        and stem[-1] not in "wxy"
    )


# Irregular past forms to their verb, so "I flew to Madrid" is found by "where did I fly?" and
# "Bart went to the zoo" by "I'm going to the zoo". Measured (python -m bench.quality --methods
# full, tune / validate): MADial en recall@5 .417 / .523 -> .432 / .541, LoCoMo cat 1-4
# recall@10 .774 / .752 -> .774 / .755. Words that are as often something else (left, rose,
# bit, lay, wound) are not in it. Alembic revision 0003 re-indexes stored memories with it.
_IRREGULAR: dict[str, str] = {
    "went": "go", "gone": "go", "goes": "go", "ate": "eat", "eaten": "eat", "drank": "drink", "drunk": "drink",
    "drove": "drive", "driven": "drive", "flew": "fly", "flown": "fly", "bought": "buy", "brought": "bring",
    "caught": "catch", "taught": "teach", "thought": "think", "swam": "swim", "swum": "swim", "ran": "run",
    "rode": "ride", "ridden": "ride", "wrote": "write", "written": "write", "spoke": "speak",
    "spoken": "speak", "took": "take", "taken": "take", "gave": "give", "given": "give", "saw": "see",
    "seen": "see", "met": "meet", "began": "begin", "begun": "begin", "broke": "break", "broken": "break",
    "chose": "choose", "chosen": "choose", "fell": "fall", "fallen": "fall", "felt": "feel", "found": "find",
    "got": "get", "gotten": "get", "grew": "grow", "grown": "grow", "heard": "hear", "kept": "keep",
    "knew": "know", "known": "know", "lost": "lose", "made": "make", "paid": "pay", "sang": "sing",
    "sung": "sing", "sat": "sit", "slept": "sleep", "sold": "sell", "sent": "send", "spent": "spend",
    "stood": "stand", "told": "tell", "understood": "understand", "won": "win", "wore": "wear", "worn": "wear",
    "woke": "wake", "woken": "wake", "threw": "throw", "thrown": "throw", "built": "build", "held": "hold",
    "fought": "fight", "fed": "feed", "blew": "blow", "blown": "blow", "froze": "freeze", "frozen": "freeze",
    "forgot": "forget", "forgotten": "forget", "drew": "draw", "drawn": "draw", "hid": "hide",
    "hidden": "hide", "stole": "steal", "stolen": "steal", "shook": "shake", "shaken": "shake", "tore": "tear",
    "torn": "tear", "became": "become", "came": "come"
}


def stem(word: str) -> str:
    """A light English stemmer: Porter steps 1a-1b plus possessives, with ``ies`` -> ``y``, after
    irregular past forms are read as their verb (``_IRREGULAR``).

    Enough to make plural/past/-ing forms meet (allergies/allergy, hiked/hiking/hike,
    cities/city) without Porter's aggressive later steps, which would make tokens harder
    to read in explanations. Applied identically to stored text and queries.
    """
    w = word.lower().replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    w = _IRREGULAR.get(w, w)
    if len(w) <= 3:
        return w
    # Step 1a: plurals.
    if w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif (w.endswith("oes") and len(w) > 5) or w.endswith(("ches", "shes", "xes", "zzes")):
        w = w[:-2]  # mangoes -> mango, dishes -> dish, boxes -> box
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    # Step 1b: -eed / -ed / -ing.
    if w.endswith("eed"):
        if _measure(w[:-3]) > 0:
            w = w[:-1]
        return w
    for suffix in ("ing", "ed"):
        if w.endswith(suffix) and _has_vowel(w[: -len(suffix)]) and len(w) - len(suffix) >= 2:
            w = w[: -len(suffix)]
            if w.endswith(("at", "bl", "iz")):
                w += "e"
            elif len(w) >= 2 and w[-1] == w[-2] and w[-1] not in "lsz" and _is_consonant(w, len(w) - 1):
                w = w[:-1]
            elif _measure(w) == 1 and _ends_cvc(w):
                w += "e"
            break
    return w


def keyword_tokens(text: str) -> list[str]:
    """Search tokens of ``text`` in order (duplicates kept, so BM25 sees term frequency).

    Chinese: jieba search-mode words; English: lowercased, stemmed words; numbers and ISO
    dates kept whole; stopwords and punctuation dropped.
    """
    return list(_keyword_tokens(text))


@lru_cache(maxsize=2048)  # the write path tokenises each text twice (importance rules, BM25 field)
def _keyword_tokens(text: str) -> tuple[str, ...]:
    text = unicodedata.normalize("NFKC", text)
    tokens: list[str] = []
    for m in _TOKEN_RE.finditer(text):
        kind = m.lastgroup
        value = m.group()
        if kind == "cjk":
            for tok in jieba_tokenizer().cut_for_search(value, HMM=True):
                tok = tok.strip()
                if tok and tok not in ZH_STOPWORDS:
                    tokens.append(tok)
        elif kind == "word":
            low = value.lower().replace("’", "'")
            if low in EN_STOPWORDS:
                continue
            stemmed = stem(low)
            if stemmed and stemmed not in EN_STOPWORDS:
                tokens.append(stemmed)
        else:
            tokens.append(value)
    return tuple(tokens)


def keyword_text(text: str) -> str:
    """:func:`keyword_tokens` joined by single spaces: pre-segmented input for a BM25 analyzer."""
    return " ".join(keyword_tokens(text))


# Chinese character bigrams for the BM25 leg, beside jieba's words. jieba cuts the same phrase
# differently in a question and in a statement ("我家住哪" -> 家住, "我家在苏州" -> 我家; "要写区"
# -> 写区, "工业园区" -> 园区), and a word cut differently is no match at all; the characters'
# pairs are the same on both sides. Each pair is written as one opaque ASCII token ("q" + the two
# code points in the letters a-p + "q"), so Milvus' jieba analyzer, its filters and its English
# stemmer (no suffix ends in "q") pass it through as one token, and the SQL keyword leg decodes
# it back for its LIKE lookup (``bigram_chars``).
_CJK_RUN = re.compile(f"[{CJK_CLASS}]{{2,}}")
_HEX_TO_LETTER = str.maketrans("0123456789abcdef", "abcdefghijklmnop")
_LETTER_TO_HEX = str.maketrans("abcdefghijklmnop", "0123456789abcdef")
_BIGRAM_TOKEN = re.compile(r"q([a-p]{5})([a-p]{5})q")


def bigram_token(a: str, b: str) -> str:
    """The opaque token of the character pair ``a`` ``b``."""
    return f"q{format(ord(a), '05x').translate(_HEX_TO_LETTER)}{format(ord(b), '05x').translate(_HEX_TO_LETTER)}q"


def bigram_chars(token: str) -> str | None:
    """The two characters a :func:`bigram_token` stands for (None for any other token)."""
    m = _BIGRAM_TOKEN.fullmatch(token)
    if m is None:
        return None
    return "".join(chr(int(part.translate(_LETTER_TO_HEX), 16)) for part in m.groups())


@lru_cache(maxsize=2048)
def cjk_bigrams(text: str) -> tuple[str, ...]:
    """The bigram tokens of every run of Chinese characters in ``text`` (stopwords included: a
    pair like 我家 carries what 我 alone does not)."""
    text = unicodedata.normalize("NFKC", text)
    return tuple(bigram_token(run[i], run[i + 1]) for run in _CJK_RUN.findall(text) for i in range(len(run) - 1))


def bm25_tokens(text: str) -> list[str]:
    """What the BM25 leg indexes and asks with: :func:`keyword_tokens` and the Chinese bigrams."""
    return keyword_tokens(text) + list(cjk_bigrams(text))


def bm25_text(text: str) -> str:
    """:func:`bm25_tokens` joined by single spaces (the keyword leg's pre-segmented text)."""
    return " ".join(bm25_tokens(text))
