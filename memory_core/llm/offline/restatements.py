"""A lasting fact said again in other words: one memory keeps it.

"I'm scared of heights." then, a week later, "Heights terrify me, I can't even stand on a
ladder."; "我开的是特斯拉Model Y" then "我的车是Model Y，白色的". ``updates.restates`` needs the
newer text to repeat nearly every specific word of the older one, so restatements in other
words stayed two active memories, and the older one's words could outrank the newer detail.

``says_again`` reads a pair as one fact when the newer text states a lasting fact of the same
person (the caller has checked the owner), shares with the older one a word that names *what*
the fact is about (not a word that frames it: "allergic", "scared", "like", "weekend", 喜欢,
吃, 周末, 一只), with the same polarity in the clauses that say it, and drops or changes none of
the older one's values (numbers, codes, names). "I'm allergic to cats" / "I'm allergic to
dogs" share only the frame word and stay two facts; so do "我周末喜欢去爬山" / "我周末喜欢去游
泳", "我们家养了一只柯基" / "我们家还养了一只布偶猫" (also an addition: 还), and "I went to Paris
last summer" / "... again this spring" (an event, not a lasting fact; "again" adds).
"""
from __future__ import annotations

import re

from memory_core.llm.offline.slot_facts import facts_of
from memory_core.llm.offline.updates import (_CLAUSES, _REACTION_OPENING, _VALUE_WORDS_EN, _adds, _entities,
                                             _states_a_fact, same_word, specific_words, word_count)
from memory_core.text.facts import negations, says_change, says_correction, signature, statement_words
from memory_core.text.keywords import stem
from memory_core.text.lang import jieba_pos_tokenizer
from memory_core.text.restating import keeps_older
from memory_core.text.similarity import normalize_for_compare

# Words that frame a personal fact rather than name what it is about: the relation (likes,
# fears, allergies, habits), how often or when, how much, and measure words. Two statements that
# share only these are two facts ("allergic to cats" / "allergic to dogs").
_FRAME_EN = frozenset(stem(w) for w in (
    "allergic allergy allergies scared afraid terrified terrify fear fears hate hates dislike dislikes love loves "
    "enjoy enjoys prefer prefers favorite favourite fan like likes want wants usually often always sometimes "
    "every weekend weekends weekday weekdays morning mornings evening evenings night nights day days week month year "
    "eat eats drink drinks play plays go goes went live lives work works job have has own owns pretty quite very "
    "bit little lot lots kind sort again").split())
_FRAME_ZH = frozenset(
    "喜欢 不喜欢 讨厌 爱 爱吃 爱喝 过敏 害怕 怕 吃 喝 去 玩 周末 平时 平常 一般 经常 每周 每天 每次 早上 晚上 "
    "特别 非常 有点 有些 比较 真的 一只 一个 一条 一辆 一家 家里 家养 我家 我们 住 工作 上班 养".split())
_ONE = frozenset({"1"})  # "一只柯基" / "有条柯基": the article 一 reads as the number one
_AGAIN = re.compile(r"\bagain\b|\bonce more\b|又(?![到是])|再次|再一次", re.IGNORECASE)  # not 又到春天了, 又是周一


def _about(words: frozenset[str]) -> frozenset[str]:
    """The words that name what a statement is about (its specific words less the frame)."""
    return frozenset(w for w in words if w not in _FRAME_EN and w not in _FRAME_ZH
                     and not (len(w) == 2 and w[0] == "一"))


def _shared(older: str, newer: str) -> set[str]:
    old_words, new_words = _about(specific_words(older)), _about(specific_words(newer))
    return {o for o in old_words if any(same_word(o, n) for n in new_words)}


def _polarity_of(text: str, words: set[str]) -> set[bool]:
    """Whether each clause of ``text`` that holds one of ``words`` is negated."""
    out = set()
    for clause in _CLAUSES.split(statement_words(text)):
        if any(same_word(w, c) for w in words for c in _about(specific_words(clause))):
            out.add(negations(clause) > 0)
    return out


def _names_a_thing(word: str) -> bool:
    """A value a statement may not drop: a listed English value word (a colour, a size) or a
    Chinese place, person or organisation name or adjective (jieba's ns, nr, nt, nz, a)."""
    if word.isascii():
        return word in _VALUE_WORDS_EN
    tags = [pair.flag for pair in jieba_pos_tokenizer().lcut(word)]
    return any(t in ("ns", "nr", "nt", "nz", "nrt", "a") for t in tags)


def _main_clause_words(text: str) -> frozenset[str]:
    """The about-words of the first clause of ``text`` that has any."""
    for clause in _CLAUSES.split(statement_words(text)):
        words = _about(specific_words(clause))
        if words:
            return words
    return frozenset()


def _degree(word: str) -> bool:
    """A Chinese adverb of degree or manner ("轻微", "稍微"): how much, not what."""
    return not word.isascii() and all(p.flag == "d" for p in jieba_pos_tokenizer().lcut(word))


def says_again(newer: str, older: str) -> bool:
    """``newer`` states again, maybe in other words and with more, the lasting fact ``older``
    states (see the module docstring). The caller has checked both are about the same person
    and short enough to state one fact."""
    if normalize_for_compare(newer) == normalize_for_compare(older):
        return False  # the same words: a duplicate, which the write folds
    # The newer one may be a fragment ("My job? Pharmacist. At the Walgreens on 5th."): the caller
    # has read it as the same person's; only a reaction to someone else says no fact of its own.
    if not facts_of(newer).lasting or _REACTION_OPENING.search(statement_words(newer)) or not _states_a_fact(older):
        return False
    if _adds(newer) or _AGAIN.search(newer) or says_change(newer) or says_correction(newer):
        return False  # an addition, another time, a change or a correction: other rules judge those
    # What the newer one leaves out is kept when it tells the fact again (the memory that replaces
    # the older one keeps its words: memory_core/text/restating.py), and lost otherwise.
    kept = keeps_older(newer, older)
    adds_a_word = bool(_about(specific_words(newer)) - _about(specific_words(older)))
    if word_count(statement_words(newer)) < 0.8 * word_count(statement_words(older)) and not (kept and adds_a_word):
        return False  # saying less (and nothing else) is no restatement: "Lisbon" retires no "I live in Lisbon, near the river"
    so, sn = signature(older), signature(newer)
    if so.persons - sn.persons and sn.persons - so.persons:
        return False  # "my sister" / "my brother": two people
    if not so.values() - _ONE <= sn.values() and not kept:
        return False  # a number, code or grade of the older one dropped or changed
    old_names, new_names = _entities(older), _entities(newer)
    if old_names and new_names and not any(same_word(o, n) or o in n or n in o for o in old_names for n in new_names):
        return False  # one name for another: another thing
    shared = _shared(older, newer)
    if not shared:
        return False
    new_words = _about(specific_words(newer))
    dropped = {o for o in _about(specific_words(older)) if not any(same_word(o, n) for n in new_words)}
    if any(_names_a_thing(w) for w in dropped):
        return False  # "My cat Tom is grey" -> "My cat Tom loves tuna" drops the colour: two facts
    # "my sister Chloe lives in Edinburgh" / "Chloe's still in Edinburgh": the name says who.
    named = bool(_entities(older) & _entities(newer))
    if any(w in dropped and not _degree(w) and not (named and kept and w in so.persons)
           for w in _main_clause_words(older)):
        # What the older one's first statement is about must all be said again: "My cat loves
        # tuna" / "My cat sleeps on the sofa" share the cat, not the fact. Its later clauses
        # may be detail ("I'm allergic to cats, my eyes swell up").
        return False
    polarity_old, polarity_new = _polarity_of(older, shared), _polarity_of(newer, shared)
    return len(polarity_old) == 1 and polarity_old == polarity_new
