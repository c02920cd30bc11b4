"""Entity extraction, keyword tokens and language detection on zh / en / mixed text."""
from __future__ import annotations

import threading

import pytest

from memory_core.text.entities import MAX_ENTITIES, extract_entities
from memory_core.text.keywords import keyword_text, keyword_tokens, stem
from memory_core.text.lang import detect_language, jieba_tokenizer


@pytest.mark.parametrize(
    "text,must_have",
    [
        ("我对芒果过敏", ["芒果"]),
        ("用户张三对芒果过敏，不要推荐任何芒果相关的食品", ["张三", "芒果"]),
        ("上周我和李明去了上海迪士尼", ["李明", "上海", "迪士尼"]),
        ("我在腾讯工作，住在深圳南山区", ["腾讯", "深圳", "南山区"]),
        ("我喜欢喝咖啡和吃火锅", ["咖啡", "火锅"]),
        ("我喜欢iPhone和华为手机", ["iPhone", "华为"]),
        ("我2024年3月5日去了东京，花了3000元", ["2024-03-05", "东京", "3000元"]),
        ("我女儿今年5岁", ["女儿", "5岁"]),
        ("Yesterday Alice and I went to the Louvre in Paris.", ["Alice", "Louvre", "Paris"]),
        ("I am allergic to peanuts and shellfish.", ["peanuts", "shellfish"]),
        ("My sister works at Google in New York since 2024-03-05.", ["Google", "New York", "2024-03-05"]),
        ("The meeting with Bob Smith is on March 5, 2024, ping @bobsmith", ["Bob Smith", "2024-03-05", "@bobsmith"]),
        ("I ran 10 km in 2 hours", ["10 km", "2 hours"]),
        ("Tell me about the Bank of China", ["Bank of China"]),
        ("I live in San Francisco and work for OpenAI", ["San Francisco", "OpenAI"]),
    ],
)
def test_expected_entities_found(text: str, must_have: list[str]) -> None:
    got = extract_entities(text)
    for entity in must_have:
        assert entity in got, (text, got)


@pytest.mark.parametrize(
    "text,must_not_have",
    [
        ("Yesterday Alice went home.", ["Yesterday"]),
        ("The weather is nice. I think so.", ["The", "I"]),
        ("Tell me about the Bank of China", ["Tell"]),
        ("用户张三对芒果过敏，不要推荐任何芒果相关的食品", ["用户", "食品", "过敏"]),
        ("我的邮箱是[EMAIL]，电话[PHONE]", ["EMAIL", "PHONE", "[EMAIL]"]),
        ("Email me at [EMAIL] or call [PHONE]", ["EMAIL", "PHONE"]),
        ("write to bob@example.com", ["@example"]),
    ],
)
def test_noise_is_excluded(text: str, must_not_have: list[str]) -> None:
    got = extract_entities(text)
    for entity in must_not_have:
        assert entity not in got, (text, got)


def test_small_talk_has_no_entities() -> None:
    assert extract_entities("Hi there! How are you?") == []
    assert extract_entities("你好，谢谢！") == []


def test_deduplicated_order_preserving_and_capped() -> None:
    got = extract_entities("芒果，芒果，芒果。我对芒果过敏，也对花生过敏")
    assert got == ["芒果", "花生"]
    many = "、".join(["北京", "上海", "广州", "深圳", "杭州", "南京", "成都", "重庆", "武汉", "西安", "天津", "苏州", "长沙", "青岛"])
    got = extract_entities(f"我去过{many}")
    assert len(got) == MAX_ENTITIES and got[:3] == ["北京", "上海", "广州"]


def test_stemmer() -> None:
    pairs = {"allergies": "allergy", "hiking": "hike", "hiked": "hike", "running": "run", "cities": "city",
             "mangoes": "mango", "peanuts": "peanut", "loved": "love", "need": "need", "agreed": "agree",
             "glasses": "glass", "bus": "bus", "is": "is"}
    assert {w: stem(w) for w in pairs} == pairs


def test_keyword_tokens_english() -> None:
    tokens = keyword_tokens("I'm allergic to PEANUTS and went hiking on 2024-05-31 for 3.5 hours!")
    assert tokens == ["allergic", "peanut", "go", "hike", "2024-05-31", "3.5", "hour"]


def test_irregular_past_forms_meet_their_verb_and_ambiguous_words_stay() -> None:
    """"I flew to Madrid" is found by "where did I fly?"; "left" (a side) and "rose" (a flower)
    are not read as verbs."""
    assert keyword_tokens("I flew to Madrid, we ate paella and swam") == ["fly", "madrid", "eat", "paella", "swim"]
    assert set(keyword_tokens("Where did I fly? What do we eat?")) >= {"fly", "eat"}
    assert keyword_tokens("Bart went to the zoo") == keyword_tokens("Bart goes to the zoo")
    assert keyword_tokens("turn left at the rose garden") == ["turn", "left", "rose", "garden"]


def test_keyword_tokens_chinese_search_mode_and_stopwords() -> None:
    tokens = keyword_tokens("我住在北京市海淀区，对芒果过敏。")
    assert {"北京", "北京市", "海淀区", "芒果", "过敏"} <= set(tokens)
    assert "我" not in tokens and "的" not in tokens and "，" not in tokens


def test_keyword_tokens_mixed_and_text_form() -> None:
    assert keyword_tokens("我喜欢iPhone 15") == ["喜欢", "iphone", "15"]
    assert keyword_text("我喜欢iPhone 15") == "喜欢 iphone 15"
    assert keyword_text("的 了 the and") == ""


def test_same_tokens_for_query_and_document_forms() -> None:
    doc = set(keyword_tokens("She loves hiking in the mountains"))
    query = set(keyword_tokens("who hiked mountain trails"))
    assert {"hike", "mountain"} <= doc & query


@pytest.mark.parametrize(
    "text,lang",
    [("我住在北京", "zh"), ("I live in Beijing", "en"), ("我喜欢iPhone", "zh"), ("I love 北京", "en"),
     ("我想买一台MacBook Pro", "zh"), ("", "en"), ("12345", "en"), ("你好 hi", "zh")],
)
def test_detect_language(text: str, lang: str) -> None:
    assert detect_language(text) == lang


def test_jieba_loads_once_across_threads() -> None:
    seen: list[int] = []

    def load() -> None:
        seen.append(id(jieba_tokenizer()))

    threads = [threading.Thread(target=load) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(seen)) == 1 and len(seen) == 4


def test_private_dictionary_does_not_leak_into_global_jieba() -> None:
    import jieba

    jieba_tokenizer()
    # Our tokenizer removes "喝咖啡" as a word; the global one must still have it.
    assert "喝咖啡" in jieba.lcut("我喜欢喝咖啡")
    assert "喝咖啡" not in jieba_tokenizer().lcut("我喜欢喝咖啡")


def test_cached_keyword_tokens_cannot_be_corrupted_by_a_caller() -> None:
    """keyword_tokens is memoised (the write path tokenises each text twice); every caller gets
    its own list, so one that edits its result cannot change what the next caller sees."""
    text = "我对芒果过敏 and I love hiking"
    first = keyword_tokens(text)
    first.append("injected")
    first[0] = "changed"
    second = keyword_tokens(text)
    assert "injected" not in second and "changed" not in second
    assert "芒果" in second and "hike" in second


def test_memoised_pos_tagging_equals_jiebas_own() -> None:
    """The POS tagger remembers its HMM answers for unknown-character runs (the costly step of a
    write's analysis); its output must be jieba's own, word for word and tag for tag, and the
    memo must really be in use (a jieba upgrade that renames the hook would bypass it silently)."""
    import jieba.posseg

    from bench.latency.corpus import SentencePool
    from memory_core.text.lang import jieba_pos_tokenizer

    ours = jieba_pos_tokenizer()
    stock = jieba.posseg.POSTokenizer(jieba_tokenizer())
    stock.word_tag_tab = dict(ours.word_tag_tab)  # the same dictionary fixes, no memo
    texts = [t for t in SentencePool(size=3000).sentences if any("\u4e00" <= c <= "\u9fff" for c in t)]
    texts += ["和张伟约好在星巴克见面", "我叫赵敏，住在杭州西湖区", "Bart在圣诞节晚会上跳舞", "我的我的我的", "嗯嗯啊啊哦"]
    assert len(texts) > 1000
    before = type(ours)._tag_run.cache_info()
    for _ in range(2):  # the second pass answers from the memo
        for text in texts:
            assert [(p.word, p.flag) for p in ours.cut(text)] == [(p.word, p.flag) for p in stock.cut(text)], text
    after = type(ours)._tag_run.cache_info()
    assert after.hits - before.hits > len(texts) // 2
