"""The optional cross-encoder reranker, exercised with real (tiny, locally built) models.

No cross-encoder ships in any installable package, so the test builds small BERT
classifiers (with a small XLM-R style tokenizer made by our tokenizer builder) and saves them the
two ways a user would have one: a plain Hugging Face folder and a sentence-transformers
``CrossEncoder.save`` folder.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memory_core.errors import ModelLoadError
from memory_core.rerank import CrossEncoderReranker, Reranker, load_reranker

QUERY = "Which food am I allergic to?"
TEXTS = [
    "I'm allergic to peanuts, so I avoid anything that contains nuts.",
    "我住在俄勒冈州波特兰市枫树街42号。",
    "I drive a blue Toyota Prius.",
]


def _write_small_tokenizer(folder: Path) -> int:
    """A unigram tokenizer over the characters and words of the test texts; returns its size."""
    from memory_core.embedding.tokenizer_build import build_tokenizer, write_tokenizer_files

    specials = ["<s>", "<pad>", "</s>", "<unk>"]
    words = {"\u2581" + w for t in [QUERY, *TEXTS] for w in t.split()}
    chars = {c for t in [QUERY, *TEXTS] for c in t if not c.isspace()} | {"\u2581"}
    pieces = [(p, 0.0) for p in specials] + [(w, -3.0) for w in sorted(words)] + [(c, -6.0) for c in sorted(chars)]
    pieces.append(("<mask>", 0.0))
    write_tokenizer_files(build_tokenizer(pieces, unk_id=3), folder)
    return len(pieces)


def _build_hf_classifier(folder: Path, num_labels: int, seed: int) -> Path:
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    vocab_size = _write_small_tokenizer(folder)
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=512, num_labels=num_labels)
    model = BertForSequenceClassification(config)
    with torch.no_grad():  # spread the logits well outside [0, 1] so squashing is visible
        model.bert.pooler.dense.weight.mul_(50.0)
        model.classifier.weight.mul_(40.0)
        model.classifier.bias.fill_(0.5)
    model.save_pretrained(folder)
    return folder


def _raw_logits(folder: Path, query: str, texts: list[str]) -> np.ndarray:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    batch = tok([query] * len(texts), texts, padding=True, truncation=True, return_tensors="pt")
    with torch.no_grad():
        return model(**batch).logits.numpy().astype(np.float64)


@pytest.fixture(scope="module")
def hf_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build_hf_classifier(tmp_path_factory.mktemp("ce") / "tiny-ce", num_labels=1, seed=0)


def test_scores_are_sigmoid_of_logits(hf_cross_encoder: Path) -> None:
    reranker = CrossEncoderReranker(str(hf_cross_encoder))
    assert isinstance(reranker, Reranker) and reranker.name == "tiny-ce"
    scores = reranker.score(QUERY, TEXTS)
    assert len(scores) == len(TEXTS) and all(isinstance(s, float) for s in scores)
    assert all(0.0 <= s <= 1.0 for s in scores)
    logits = _raw_logits(hf_cross_encoder, QUERY, TEXTS).reshape(-1)
    assert np.abs(logits).max() > 1.0, "logits should be outside [0, 1] so squashing is tested"
    np.testing.assert_allclose(scores, 1.0 / (1.0 + np.exp(-logits)), atol=1e-4)
    # Scores do not depend on batching or on the other candidates.
    assert reranker.score(QUERY, TEXTS[1:2])[0] == pytest.approx(scores[1], abs=1e-5)
    assert reranker.score(QUERY, []) == []


def test_two_label_model_uses_probability_of_relevant(tmp_path: Path) -> None:
    folder = _build_hf_classifier(tmp_path / "two-label", num_labels=2, seed=1)
    scores = CrossEncoderReranker(str(folder)).score(QUERY, TEXTS)
    logits = _raw_logits(folder, QUERY, TEXTS)
    expected = np.exp(logits[:, 1]) / np.exp(logits).sum(axis=1)
    np.testing.assert_allclose(scores, expected, atol=1e-4)


def test_folder_saved_by_sentence_transformers_loads(tmp_path: Path, hf_cross_encoder: Path) -> None:
    from sentence_transformers import CrossEncoder

    saved = tmp_path / "st-saved"
    CrossEncoder(str(hf_cross_encoder), device="cpu", local_files_only=True).save(str(saved))
    reranker = load_reranker(str(saved))
    assert reranker is not None
    np.testing.assert_allclose(reranker.score(QUERY, TEXTS),
                               CrossEncoderReranker(str(hf_cross_encoder)).score(QUERY, TEXTS), atol=1e-5)


def test_load_reranker_none_and_memoised(hf_cross_encoder: Path) -> None:
    assert load_reranker(None) is None
    assert load_reranker("") is None
    assert load_reranker("   ") is None
    first = load_reranker(str(hf_cross_encoder))
    assert first is not None and load_reranker(str(hf_cross_encoder)) is first


@pytest.mark.parametrize("path", ["/no/such/cross-encoder", "cross-encoder/ms-marco-MiniLM-L-6-v2"])
def test_missing_model_raises_model_load_error(path: str) -> None:
    with pytest.raises(ModelLoadError, match="does not exist"):
        load_reranker(path)


def test_folder_without_a_model_raises_model_load_error(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"model_type": "bert"}')
    with pytest.raises(ModelLoadError, match="could not load"):
        CrossEncoderReranker(str(tmp_path))
