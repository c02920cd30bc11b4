"""Language detection and the shared, lazily loaded jieba segmenter.

The engine treats every text as Chinese or English (mixed text is common: "我喜欢iPhone").
jieba's first load reads its bundled dictionary and takes seconds, so it happens once per
process, on first use, under a lock. We keep a *private* ``jieba.Tokenizer`` rather than the
module-level default so that our few dictionary fixes (e.g. "过敏" as a verb, not a person's
name) never leak into other code that uses jieba.
"""
from __future__ import annotations

import logging
import re
import threading
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # pragma: no cover - typing only
    import jieba
    import jieba.posseg

Language = Literal["zh", "en"]

# CJK Unified Ideographs + Extension A + Compatibility Ideographs.
CJK_CLASS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_RE = re.compile(f"[{CJK_CLASS}]")
_LATIN_WORD_RE = re.compile(r"[A-Za-z]+")

# Dictionary fixes applied to the private tokenizer: (word, freq, POS tag).
_ADD_WORDS: tuple[tuple[str, int, str], ...] = (
    ("过敏", 20000, "v"),
    ("咖啡", 20000, "n"),
    ("零食", 20000, "n"),
    ("火锅", 20000, "n"),
    ("奶茶", 20000, "n"),
    ("香菜", 20000, "n"),
    ("吸入器", 5000, "n"),
    ("肾上腺素笔", 5000, "n"),
)
# Dictionary entries that glue a verb onto a noun and are tagged as names ("喝咖啡" nr).
_DEL_WORDS: tuple[str, ...] = ("喝咖啡", "吃火锅", "喝奶茶", "吃芒果")

_lock = threading.Lock()
_tokenizer: "jieba.Tokenizer | None" = None
_pos_tokenizer: "jieba.posseg.POSTokenizer | None" = None


def is_cjk(ch: str) -> bool:
    """True for a single CJK ideograph."""
    return bool(_CJK_RE.fullmatch(ch))


def has_cjk(text: str) -> bool:
    return _CJK_RE.search(text) is not None


def detect_language(text: str) -> Language:
    """``"zh"`` when CJK ideographs outnumber Latin words, else ``"en"``.

    One Chinese character carries roughly as much as one English word, so we compare the
    count of ideographs with the count of Latin words (not letters). Text with neither
    (digits, emoji, empty) is reported as English.
    """
    cjk = len(_CJK_RE.findall(text))
    latin_words = len(_LATIN_WORD_RE.findall(text))
    return "zh" if cjk > latin_words else "en"


def _load() -> None:
    global _tokenizer, _pos_tokenizer
    import jieba
    import jieba.posseg

    jieba.setLogLevel(logging.WARNING)
    tok = jieba.Tokenizer()
    tok.initialize()
    for word, freq, tag in _ADD_WORDS:
        tok.add_word(word, freq, tag)
    for word in _DEL_WORDS:
        # Not ``del_word``: that also registers a force-split in jieba's *global* HMM.
        tok.total -= tok.FREQ.get(word, 0)
        tok.FREQ[word] = 0
    pos = _memoised_pos_tokenizer_class()(tok)
    # Merge the added words' tags now, under the lock, rather than lazily on first cut
    # (jieba does that merge without a lock).
    pos.makesure_userdict_loaded()
    _pos_tokenizer = pos
    _tokenizer = tok


# Distinct unknown-character runs whose HMM tagging is remembered (a few MB at most).
POS_HMM_MEMO_SIZE = 50_000


def _memoised_pos_tokenizer_class() -> type:
    """jieba's POS tagger with its HMM step memoised.

    Why: jieba tags a run of characters its dictionary does not know ("我的", "去了", "叫赵敏")
    with a Viterbi over ~250 joint segment/POS states; that step was 80% of POS tagging and the
    largest part of a write's analysis (0.39 of 0.50 ms per text on the latency corpus). It is a
    pure function of the run (jieba's tables are module constants), and runs repeat: function-word
    pairs and the names a user keeps mentioning. Output is identical to jieba's
    (``tests/test_entities.py`` compares them). ``_POSTokenizer__cut`` is jieba 0.42.1's private
    HMM method (pinned in requirements.txt); a test fails if the hook stops being called.
    """
    from functools import lru_cache

    import jieba.posseg

    base = jieba.posseg.POSTokenizer
    hmm = base._POSTokenizer__cut  # type: ignore[attr-defined]

    class MemoisedPOSTokenizer(base):  # type: ignore[misc, valid-type]
        @staticmethod
        @lru_cache(maxsize=POS_HMM_MEMO_SIZE)
        def _tag_run(run: str) -> tuple[tuple[str, str], ...]:
            # The tables are module constants, so one tokenizer's answer is every tokenizer's.
            return tuple((p.word, p.flag) for p in hmm(None, run))

        def _POSTokenizer__cut(self, sentence: str):  # type: ignore[no-untyped-def]  # noqa: N802
            for word, flag in self._tag_run(sentence):
                yield jieba.posseg.pair(word, flag)

    return MemoisedPOSTokenizer


def jieba_tokenizer() -> "jieba.Tokenizer":
    """The process-wide private jieba tokenizer (loaded on first call, thread-safe)."""
    if _tokenizer is None:
        with _lock:
            if _tokenizer is None:
                _load()
    assert _tokenizer is not None
    return _tokenizer


def jieba_pos_tokenizer() -> "jieba.posseg.POSTokenizer":
    """The POS tagger bound to :func:`jieba_tokenizer` (loaded on first call, thread-safe)."""
    if _pos_tokenizer is None:
        jieba_tokenizer()
    assert _pos_tokenizer is not None
    return _pos_tokenizer
