"""Sentence-aligned chunking: limits always respected, overlap carried, text never lost."""
from __future__ import annotations

import re

import pytest

from memory_core.text.chunking import chunk_text, split_sentences


def char_count(text: str) -> int:
    return len(text)


def word_count(text: str) -> int:
    """A rough multilingual token count: one per CJK character, one per Latin word/number."""
    return len(re.findall(r"[\u4e00-\u9fff]|[A-Za-z0-9]+|[^\sA-Za-z0-9\u4e00-\u9fff]", text))


def _letters(text: str) -> str:
    return re.sub(r"\s+", "", text)


def test_short_text_is_one_stripped_chunk() -> None:
    assert chunk_text("  我住在北京。 \n", 50, 10, char_count) == ["我住在北京。"]
    assert chunk_text("Hello world.", 50, 10, word_count) == ["Hello world."]


def test_empty_text_gives_no_chunks() -> None:
    assert chunk_text("   \n ", 50, 10, char_count) == []


def test_split_sentences_zh_en_and_newlines() -> None:
    text = "你好！真的吗？！我住在北京；I live in Beijing. It costs 3.5 dollars, see example.com\n新的一行"
    assert split_sentences(text) == [
        "你好！", "真的吗？！", "我住在北京；", "I live in Beijing.", "It costs 3.5 dollars, see example.com", "新的一行",
    ]


def test_packs_sentences_and_respects_limit_zh() -> None:
    sentences = [f"第{i}句话的内容稍微长一些。" for i in range(30)]
    text = "".join(sentences)
    chunks = chunk_text(text, 40, 14, char_count)
    assert len(chunks) > 1
    assert all(len(c) <= 40 for c in chunks)
    # Every sentence appears in some chunk, whole.
    for s in sentences:
        assert any(s in c for c in chunks), s
    # Chunks start on sentence boundaries.
    assert all(c.startswith("第") for c in chunks)


def test_overlap_carries_trailing_sentence() -> None:
    sentences = [f"Sentence number {i} is here." for i in range(12)]
    text = " ".join(sentences)
    chunks = chunk_text(text, 20, 6, word_count)
    assert all(word_count(c) <= 20 for c in chunks)
    for prev, nxt in zip(chunks, chunks[1:]):
        last_sentence = split_sentences(prev)[-1]
        assert nxt.startswith(last_sentence), (prev, nxt)


def test_no_overlap_when_zero() -> None:
    sentences = [f"Sentence number {i} is here." for i in range(12)]
    chunks = chunk_text(" ".join(sentences), 20, 0, word_count)
    joined = " ".join(chunks)
    assert joined == " ".join(sentences)


def test_long_sentence_split_on_clauses() -> None:
    text = "这是一个很长的句子，其中有好几个分句，每个分句都不算太长，但是合在一起就超过了限制，所以需要按逗号切开。"
    chunks = chunk_text(text, 20, 0, char_count)
    assert all(len(c) <= 20 for c in chunks)
    assert all(c.endswith(("，", "。")) for c in chunks)
    assert "".join(chunks) == text


def test_unbreakable_text_is_hard_split() -> None:
    text = "a" * 95
    chunks = chunk_text(text, 30, 5, char_count)
    assert all(len(c) <= 30 for c in chunks)
    assert "".join(chunks) == text


def test_hard_split_prefers_spaces_in_latin_text() -> None:
    text = " ".join(["word"] * 40)  # one "sentence" with no punctuation
    chunks = chunk_text(text, 25, 0, char_count)
    assert all(len(c) <= 25 for c in chunks)
    assert all(w == "word" for c in chunks for w in c.split())


def test_mixed_language_content_is_preserved() -> None:
    text = "我昨天去了上海。I met Alice at the Bund. 我们吃了小笼包！Then we took the metro home. " * 6
    chunks = chunk_text(text, 30, 8, word_count)
    assert all(word_count(c) <= 30 for c in chunks)
    assert _letters("".join(chunks)).count("小笼包") >= 6


@pytest.mark.parametrize("max_tokens,overlap", [(1, 0), (3, 2), (10, 9), (10, 50)])
def test_degenerate_budgets_terminate_and_fit(max_tokens: int, overlap: int) -> None:
    text = "短句。另一个短句！Third one? 第四句话比较长一点点。"
    chunks = chunk_text(text, max_tokens, overlap, char_count)
    assert chunks and all(len(c) <= max_tokens for c in chunks)


def test_invalid_budget_rejected() -> None:
    with pytest.raises(ValueError):
        chunk_text("text", 0, 0, char_count)
