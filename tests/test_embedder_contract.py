"""The embedder port's contract, held by the bundled e5 model and by the hashing embedder alike.

The hashing embedder (``memory_core.embedding.hashing``) stands in for the model in the fast test
lane; every test here runs on both, so the stand-in keeps the port's promises: ``dim`` wide,
float32, unit length, the same vector for the same text, a batch equal to its texts one by one,
Chinese, emoji and over-long text accepted, and the weakest meaning any test may lean on: a
text is nearer to a rewording that shares its words than to an unrelated one. What only the
real model knows (synonyms, translation, its cosine levels) is tested in ``test_embedding.py``.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memory_core.embedding.base import Embedder
from memory_core.embedding.hashing import HashingEmbedder

TEXTS = [
    "I am allergic to mangoes",
    "我对芒果过敏",
    "明天下午和Alice开会讨论Milvus项目",
    "",
    "   ",
    "😀🎉",
    "Bob moved to Shanghai in 2021, and his sister Carol lives in Beijing.",
]
KINDS = ["e5", "hashing"]
# The bundled model runs int8 with dynamic quantisation: activations are scaled per batch, so a
# text's vector moves a little with its batch-mates (measured max |diff| 0.021 for passages, 0.026
# for queries on TEXTS). The hashing embedder has no batch at all: exactly equal.
BATCH_ATOL = {"e5": 5e-2, "hashing": 0.0}


@pytest.fixture(scope="module", params=KINDS)
def model(request: pytest.FixtureRequest) -> Embedder:
    if request.param == "e5":
        return request.getfixturevalue("real_embedder")
    return HashingEmbedder()


def kind_of(model: Embedder) -> str:
    return "hashing" if isinstance(model, HashingEmbedder) else "e5"


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


def test_shape_dtype_and_unit_length(model: Embedder) -> None:
    assert model.dim == 384 and isinstance(model.name, str) and model.name
    assert isinstance(model.max_tokens, int) and model.max_tokens > 0
    for embed in (model.embed_passages, model.embed_queries):
        vectors = embed(TEXTS)
        assert vectors.shape == (len(TEXTS), model.dim)
        assert vectors.dtype == np.float32
        assert np.all(np.isfinite(vectors))
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        assert embed([]).shape == (0, model.dim)


def test_same_text_same_vector(model: Embedder) -> None:
    first = model.embed_passages(TEXTS)
    again = model.embed_passages(TEXTS)
    np.testing.assert_allclose(again, first, atol=1e-6)
    np.testing.assert_allclose(model.embed_query(TEXTS[1]), model.embed_queries([TEXTS[1]])[0], atol=1e-6)


def test_a_batch_equals_its_texts_one_by_one(model: Embedder) -> None:
    atol = BATCH_ATOL[kind_of(model)]
    together = model.embed_passages(TEXTS)
    alone = np.stack([model.embed_passages([t])[0] for t in TEXTS])
    np.testing.assert_allclose(together, alone, atol=atol)
    queries = model.embed_queries(TEXTS)
    np.testing.assert_allclose(queries, np.stack([model.embed_query(t) for t in TEXTS]), atol=atol)


def test_over_long_text_is_accepted(model: Embedder) -> None:
    long_text = "我喜欢在周末去山里徒步。" * 400 + " hiking " * 2000
    assert model.count_tokens(long_text) > model.max_tokens
    vector = model.embed_passages([long_text])[0]
    assert vector.shape == (model.dim,) and abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5


def test_count_tokens_grows_with_the_text(model: Embedder) -> None:
    assert model.count_tokens("") == 0
    one, two = model.count_tokens("mango allergy"), model.count_tokens("mango allergy " * 2)
    assert 0 < one < two
    assert model.count_tokens("我对芒果过敏") > 0


@pytest.mark.parametrize(("text", "rewording", "unrelated"), [
    ("I am allergic to mangoes", "I'm allergic to mango", "The train to Paris leaves at nine"),
    ("我对芒果过敏", "我芒果过敏了", "明天去北京开会"),
    ("Alice works at Milvus as an engineer", "Alice is an engineer at Milvus", "我喜欢吃火锅"),
])
def test_a_rewording_with_shared_words_is_nearer_than_an_unrelated_text(
        model: Embedder, text: str, rewording: str, unrelated: str) -> None:
    q, near, far = model.embed_queries([text])[0], *model.embed_passages([rewording, unrelated])
    assert cos(q, near) > cos(q, far) + 0.05


def test_the_hashing_embedder_is_the_same_in_another_process() -> None:
    """Python's ``hash`` of a str differs per process (PYTHONHASHSEED); the hashing embedder must
    not use it, or a vector stored by one process would not be found by the next."""
    code = ("import sys, numpy as np; from memory_core.embedding.hashing import HashingEmbedder; "
            "sys.stdout.write(HashingEmbedder().embed_passages(['我对芒果过敏 mango'])[0].tobytes().hex())")
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True,
                         env={"PYTHONHASHSEED": "12345", "PATH": "/usr/bin:/bin"}, timeout=60).stdout
    here = HashingEmbedder().embed_passages(["我对芒果过敏 mango"])[0]
    assert np.frombuffer(bytes.fromhex(out), dtype=np.float32).tolist() == here.tolist()


def test_hashing_embedder_refuses_what_the_port_does_not_take() -> None:
    with pytest.raises(TypeError):
        HashingEmbedder().embed_passages("one string, not a list")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        HashingEmbedder().embed_passages([None])  # type: ignore[list-item]
    with pytest.raises(ValueError):
        HashingEmbedder(dim=4)
