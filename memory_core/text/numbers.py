"""Numbers as people write them in chat, read as digits: Chinese numerals ("六百五十度", the
spoken short form "两千五", "三万"), English number words ("fifteen hundred", "two grand",
"twenty-five") and thousands said with k ("1.5k").

Why: a value compared as written is two values when one telling says "600度" and the next
"六百五十度", or "1500" and "fifteen hundred" (the newer-wins rules in ``facts`` compare values);
and jieba cuts numerals into words that look like other words (六百度 -> 六 / 百度, the firm).
"""
from __future__ import annotations

import re
from functools import lru_cache

from memory_core.text.keywords import keyword_tokens

_I = re.IGNORECASE

EN_NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
EN_NUMBER_WORDS.update({"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70",
                         "eighty": "80", "ninety": "90", "hundred": "100", "a dozen": "12", "dozen": "12",
                         "twice": "2", "once": "1", "both": "2", "couple": "2", "single": "1"})
_ZH_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_ZH_RUN = "零〇一二两三四五六七八九十百千万"
ZH_NUMBER = re.compile(
    rf"(?<![{_ZH_RUN}])(?:"
    # a number with its unit: 三个, 二十八岁, 两千五百块
    rf"[一二两三四五六七八九十][{_ZH_RUN}]*(?=[个只岁条位口年月天周次件本台辆套间楼层号点分块元斤公里米克人名])|"
    # degrees with a ten, hundred or thousand in them (六百度, 三十八度): 一度 is "for a while", 百度 a firm
    rf"[一二两三四五六七八九十][{_ZH_RUN}]*[十百千][{_ZH_RUN}]*(?=度)|"
    # the spoken short form, the unit after the last digit left out: 两千五 (2500), 六百五 (650), 一万二
    rf"[一二两三四五六七八九][万千百][一二两三四五六七八九](?![{_ZH_RUN}])|"
    # a round amount ending in its unit: 月薪三万, 两千, 五百 (not 千万 / 万一: a digit opens it)
    rf"[一二两三四五六七八九][{_ZH_RUN}]*[百千万](?![{_ZH_RUN}]))")


def zh_number(word: str) -> str:
    """Chinese numerals as digits ("十二" -> "12", "两" -> "2", "六百五十" -> "650"), with the
    spoken short form that leaves the last unit out ("两千五" -> "2500", "一万二" -> "12000")."""
    return str(_zh_value(word))


def _zh_value(word: str, short_unit: int = 0) -> int:
    if "万" in word:
        head, _, tail = word.partition("万")
        return (_zh_value(head) if head else 1) * 10000 + (_zh_value(tail, 1000) if tail else 0)
    if short_unit and len(word) == 1 and word in _ZH_DIGITS:
        return _ZH_DIGITS[word] * short_unit  # "一万二": the digit after 万 counts thousands
    total, current = 0, 0
    for ch in word:
        if ch in _ZH_DIGITS:
            current = _ZH_DIGITS[ch]
        else:
            unit = {"十": 10, "百": 100, "千": 1000}[ch]
            total += (current or 1) * unit
            current = 0
    if current and len(word) > 1 and word[-2] in "百千":
        return total + current * {"百": 10, "千": 100}[word[-2]]  # "六百五": fifty, not five
    return total + current


# Compiled once (``signature`` tried 35 pattern strings per text through re's cache).
NUMBER_WORDS = tuple((re.compile(rf"\b{word}\b", _I), digits) for word, digits in EN_NUMBER_WORDS.items())
# Matches wherever one of them does: most texts name no number word, and one search tells.
ANY_NUMBER_WORD = re.compile(r"\b(?:" + "|".join(EN_NUMBER_WORDS) + r")\b", _I)
THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
THOUSANDS_SHORT = re.compile(r"(?<![\w.])(?!401k)(\d+(?:\.\d+)?)\s?k\b", _I)  # not the 401k plan
_EN_UNITS = {w: int(d) for w, d in EN_NUMBER_WORDS.items() if d.isdigit() and " " not in w
             and w not in ("twice", "once", "both", "couple", "single", "dozen", "hundred")}
_EN_UNIT_WORD = r"(?:" + "|".join(sorted(_EN_UNITS, key=len, reverse=True)) + r")"
# A run of number words that is one amount: with hundred / thousand / grand, or tens-units.
_EN_TENS_UNITS = r"(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)-(?:one|two|three|four|five|six|seven|eight|nine)"
EN_COMPOUND = re.compile(
    rf"\b(?:(?:{_EN_TENS_UNITS}|{_EN_UNIT_WORD})[\s-]+)?(?:hundred|thousand|grand)(?:[\s-]+(?:and[\s-]+)?"
    rf"(?:{_EN_TENS_UNITS}|{_EN_UNIT_WORD})(?:[\s-]+{_EN_UNIT_WORD})?(?:[\s-]+(?:hundred|thousand))?)*\b|\b{_EN_TENS_UNITS}\b", _I)


def plain(value: float) -> str:
    return str(int(value)) if value == int(value) else str(value)


def en_compound(words: str) -> int | None:
    """The amount an English number-word run says ("fifteen hundred" -> 1500, "two grand" -> 2000,
    "three thousand two hundred" -> 3200, "twenty-five" -> 25); None when it holds no number."""
    total, current, seen = 0, 0, False
    for word in re.split(r"[\s-]+", words.lower()):
        if word in _EN_UNITS:
            current += _EN_UNITS[word]
            seen = True
        elif word == "hundred":
            current = (current or 1) * 100
            seen = True
        elif word in ("thousand", "grand"):
            total += (current or 1) * 1000
            current, seen = 0, True
    return total + current if seen else None


@lru_cache(maxsize=1)
def number_word_tokens() -> frozenset[str]:
    """English number words as the keyword tokenizer gives them (stemmed: "hundred" -> "hundr")."""
    words = [w for w in _EN_UNITS if w not in ("one",)] + ["hundred", "thousand", "grand"]
    return frozenset(t.lower() for t in keyword_tokens(" ".join(words)))


def zh_numbers(text: str) -> set[str]:
    return {zh_number(m.group(0)) for m in ZH_NUMBER.finditer(text)}

# A numeral with its unit or counter (cut together from a frame: "三千人" leaves no "人" that two
# unrelated counts would share).
ZH_AMOUNT = re.compile(rf"(?:{ZH_NUMBER.pattern})(?:公里|千米|公斤|千克|平米|[个只岁条位口年月天周次件本台辆套间楼层号点分块元斤米克人名度])?")


def spelled_numbers(text: str) -> set[str]:
    """The numbers ``text`` writes in words or characters, as digits: English amounts ("fifteen
    hundred" -> "1500", a compound read as one number, its words then not read alone) and single
    number words ("twice" -> "2"), and Chinese numerals ("六百五十度" -> "650")."""
    numbers: set[str] = set()
    if ANY_NUMBER_WORD.search(text):
        words_left = text
        for m in EN_COMPOUND.finditer(text):
            value = en_compound(m.group(0))
            if value is not None:
                numbers.add(str(value))
                words_left = words_left.replace(m.group(0), " ", 1)
        for pattern, digits in NUMBER_WORDS:
            if pattern.search(words_left):
                numbers.add(digits)
    numbers.update(zh_number(m.group(0)) for m in ZH_NUMBER.finditer(text))
    return numbers
