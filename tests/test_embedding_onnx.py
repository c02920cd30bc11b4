"""The ONNX Runtime backend: same vectors as sentence-transformers, export once, choose a backend."""
from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from memory_core.config import BUNDLED_EMBEDDING_MODEL, Settings
from memory_core.embedding import load_embedder
from memory_core.embedding.onnx_embedder import OnnxEmbedder, folder_pooling
from memory_core.embedding.onnx_export import MARKER_FILE, ONNX_DIR, ONNX_FILE, export_onnx, is_exported
from memory_core.embedding.sentence_transformer import SentenceTransformerEmbedder
from memory_core.errors import ModelLoadError

E5_FOLDER = "multilingual-e5-small"

# Every kind of input the write and search paths meet: scripts, emoji, combining marks, empty,
# whitespace, one character, and text far past the 512-token window (truncated identically).
TEXTS = [
    "我对芒果过敏，上周吃了芒果干以后起了疹子。",
    "I'm allergic to mango; last Friday dried mango gave me a rash.",
    "Mañana voy a Zürich — café ☕ con Øyvind",
    "😀🎉👩‍👩‍👧",
    "e\u0301\u0301 a\u0308",
    "",
    "   ",
    "x",
    "长" * 900,
    "long sentence about hiking " * 150,
    "Caroline said: \"it's O'Brien's birthday\" \\ ' \"",
]


def _linked_copy(source: Path, target: Path) -> Path:
    """A model folder whose big files are symlinks to ``source`` (no 470 MB copy)."""
    target.mkdir()
    for item in source.iterdir():
        if item.name.startswith(".") or item.name == ONNX_DIR:
            continue
        if item.is_dir():
            (target / item.name).mkdir()
            for inner in item.iterdir():
                (target / item.name / inner.name).write_bytes(inner.read_bytes())
        elif item.suffix in (".safetensors", ".bin") or item.name == "tokenizer.json":
            (target / item.name).symlink_to(item)
        else:
            (target / item.name).write_bytes(item.read_bytes())
    return target


@pytest.fixture(scope="session")
def embedder(fp32_embedder):  # type: ignore[no-untyped-def]
    """This module checks the fp32 graph (torch parity, names, exports): it overrides the
    product-default fixture."""
    return fp32_embedder


def test_default_backend_is_onnx(embedder) -> None:  # noqa: ANN001
    assert isinstance(embedder, OnnxEmbedder)
    assert Settings(_env_file=None).embedding_backend == "auto"  # type: ignore[call-arg]


@pytest.mark.parametrize("kind", ["passages", "queries"])
def test_onnx_vectors_equal_sentence_transformers(embedder, torch_embedder, kind: str) -> None:  # noqa: ANN001
    onnx = getattr(embedder, f"embed_{kind}")(TEXTS)
    torch = getattr(torch_embedder, f"embed_{kind}")(TEXTS)
    assert onnx.shape == torch.shape == (len(TEXTS), 384) and onnx.dtype == np.float32
    cosines = (onnx * torch).sum(axis=1)
    assert cosines.min() >= 0.99999, f"worst input: {TEXTS[int(cosines.argmin())]!r} cos={cosines.min()}"
    np.testing.assert_allclose(np.linalg.norm(onnx, axis=1), 1.0, atol=1e-5)


def test_batch_composition_does_not_change_a_vector(embedder) -> None:  # noqa: ANN001
    """Length-sorted batching pads short texts next to long ones; the mask must make that moot."""
    alone = np.stack([embedder.embed_passages([t])[0] for t in TEXTS])
    together = embedder.with_batch_size(4).embed_passages(TEXTS)
    np.testing.assert_allclose(together, alone, atol=2e-5)


def test_token_counting_and_budget_match_torch(embedder, torch_embedder) -> None:  # noqa: ANN001
    assert embedder.max_tokens == torch_embedder.max_tokens == 506
    for text in TEXTS:
        assert embedder.count_tokens(text) == torch_embedder.count_tokens(text)


def test_queries_run_while_a_bulk_embed_runs(embedder) -> None:  # noqa: ANN001
    """No global lock: a chat search is not queued behind a whole import batch."""
    bulk = [f"{TEXTS[0]} {i}" for i in range(400)]
    expected = embedder.embed_query(TEXTS[1])
    done = threading.Event()
    query_times: list[bool] = []

    def importer() -> None:
        embedder.embed_passages(bulk)
        done.set()

    thread = threading.Thread(target=importer)
    thread.start()
    time.sleep(0.3)  # the bulk embed (about 2 s) is under way
    try:
        while not done.is_set() and len(query_times) < 20:
            got = embedder.embed_query(TEXTS[1])
            np.testing.assert_allclose(got, expected, atol=1e-5)
            query_times.append(done.is_set())
    finally:
        thread.join(timeout=120)
    assert query_times and not query_times[0], "the first query should have finished before the bulk embed"


def test_export_is_reused_and_marked(embedder, model_cache_dir: Path) -> None:  # noqa: ANN001
    folder = model_cache_dir / E5_FOLDER
    assert is_exported(folder)
    marker = json.loads((folder / ONNX_DIR / MARKER_FILE).read_text())
    assert marker["weights"] == "model.safetensors" and marker["size"] > 100_000_000
    before = (folder / ONNX_DIR / ONNX_FILE).stat().st_mtime_ns
    assert export_onnx(folder) == folder / ONNX_DIR / ONNX_FILE
    assert (folder / ONNX_DIR / ONNX_FILE).stat().st_mtime_ns == before


def test_fresh_folder_exports_and_goes_stale_when_its_model_changes(embedder, model_cache_dir: Path,  # noqa: ANN001
                                                                     tmp_path: Path) -> None:
    folder = _linked_copy(model_cache_dir / E5_FOLDER, tmp_path / "model")
    assert not is_exported(folder)
    model = load_embedder(str(folder), tmp_path, backend="onnx")
    assert isinstance(model, OnnxEmbedder) and is_exported(folder)
    np.testing.assert_allclose(model.embed_passages(TEXTS[:3]), embedder.embed_passages(TEXTS[:3]), atol=1e-5)
    assert not list((folder / ONNX_DIR).glob(".tmp-*")), "no temporary export file is left behind"
    config = json.loads((folder / "config.json").read_text())
    config["layer_norm_eps"] = 1e-6
    (folder / "config.json").write_text(json.dumps(config, indent=1))
    assert not is_exported(folder), "a changed model config must trigger a new export"


def test_unsupported_pooling_falls_back_to_torch_in_auto_and_fails_in_onnx(
        model_cache_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder = _linked_copy(model_cache_dir / E5_FOLDER, tmp_path / "maxpool")
    pooling = folder / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    config.update(pooling_mode_mean_tokens=False, pooling_mode_max_tokens=True)
    pooling.write_text(json.dumps(config))
    assert folder_pooling(folder) is None
    with pytest.raises(ModelLoadError, match="pooling"):
        load_embedder(str(folder), tmp_path, backend="onnx")
    with caplog.at_level(logging.WARNING):
        model = load_embedder(str(folder), tmp_path, backend="auto")
    assert isinstance(model, SentenceTransformerEmbedder)
    assert "using torch instead" in caplog.text
    assert not (folder / ONNX_DIR).exists()


@pytest.mark.parametrize(("model", "backend", "message"), [
    (BUNDLED_EMBEDDING_MODEL, "tensorflow", "unknown embedding backend"),
    ("sentence-transformers/all-MiniLM-L6-v2", "onnx", "local model folder"),
])
def test_bad_backend_choices_raise(model: str, backend: str, message: str, tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match=message):
        load_embedder(model, tmp_path, backend=backend)


def test_backend_setting_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBEDDING_BACKEND", "torch")
    assert Settings(_env_file=None).embedding_backend == "torch"  # type: ignore[call-arg]
    monkeypatch.setenv("EMBEDDING_BACKEND", "gpu-please")
    with pytest.raises(ValueError, match="embedding_backend"):
        Settings(_env_file=None)  # type: ignore[call-arg]


def test_int8_precision_is_close_to_fp32_and_named_apart(embedder, model_cache_dir: Path) -> None:  # noqa: ANN001
    int8 = load_embedder(BUNDLED_EMBEDDING_MODEL, model_cache_dir, precision="int8")
    assert isinstance(int8, OnnxEmbedder)
    # A distinct name keeps content hashes and embedding caches of the two precisions apart.
    assert int8.name == BUNDLED_EMBEDDING_MODEL + "@int8" and embedder.name == BUNDLED_EMBEDDING_MODEL
    folder = model_cache_dir / E5_FOLDER
    assert is_exported(folder, "int8") and is_exported(folder, "fp32"), "both graphs live side by side"
    a, b = embedder.embed_passages(TEXTS), int8.embed_passages(TEXTS)
    cosines = (a * b).sum(axis=1)
    assert cosines.min() > 0.97 and cosines.mean() > 0.99  # the worst is 900 repeats of one character
    assert not np.allclose(a, b, atol=1e-4), "int8 really is a different graph"
    # Retrieval survives quantisation: each query still finds its own passage first.
    passages = int8.embed_passages([TEXTS[0], TEXTS[1], TEXTS[2]])
    queries = int8.embed_queries(["我对什么水果过敏？", "Which fruit am I allergic to?", "Who is going to Zurich?"])
    assert list((queries @ passages.T).argmax(axis=1)) == [0, 1, 2]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"precision": "fp16"}, "unknown embedding precision"),
    ({"precision": "int8", "backend": "torch"}, "needs the ONNX backend"),
])
def test_bad_precision_choices_raise(kwargs: dict, message: str, model_cache_dir: Path) -> None:
    with pytest.raises(ModelLoadError, match=message):
        load_embedder(BUNDLED_EMBEDDING_MODEL, model_cache_dir, **kwargs)


def test_auto_precision_quantises_only_the_bundled_model_on_onnx(model_cache_dir: Path) -> None:
    """The default: int8 where its recall was measured (the bundled e5-small on ONNX), fp32 for a
    user's own model folder or the torch backend, and explicit choices pass through."""
    from memory_core.embedding import resolve_precision

    assert Settings(_env_file=None).embedding_precision == "auto"  # type: ignore[call-arg]
    assert resolve_precision(BUNDLED_EMBEDDING_MODEL, "auto", "auto") == "int8"
    assert resolve_precision(BUNDLED_EMBEDDING_MODEL, "onnx", "auto") == "int8"
    assert resolve_precision(BUNDLED_EMBEDDING_MODEL, "torch", "auto") == "fp32"
    assert resolve_precision("/models/my-own-encoder", "auto", "auto") == "fp32"
    assert resolve_precision(BUNDLED_EMBEDDING_MODEL, "auto", "fp32") == "fp32"
    loaded = load_embedder(BUNDLED_EMBEDDING_MODEL, model_cache_dir, precision="auto")
    assert isinstance(loaded, OnnxEmbedder) and loaded.name == BUNDLED_EMBEDDING_MODEL + "@int8"
    # With torch, "auto" is not an error (int8 + torch is): it means fp32.
    torch_one = load_embedder(BUNDLED_EMBEDDING_MODEL, model_cache_dir, backend="torch", precision="auto")
    assert isinstance(torch_one, SentenceTransformerEmbedder) and torch_one.name == BUNDLED_EMBEDDING_MODEL


def test_auto_precision_falls_back_to_fp32_when_int8_cannot_load(model_cache_dir: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    """A default must not stop the app: if the int8 graph cannot be built (say the quantiser is
    missing), "auto" logs why and serves the fp32 encoder; an explicit int8 still fails loudly."""
    import memory_core.embedding as embedding
    from memory_core.embedding import clear_embedder_cache

    real_load = OnnxEmbedder.load.__func__  # type: ignore[attr-defined]

    def failing_int8(cls, folder, name=None, batch_size=16, precision="fp32"):  # type: ignore[no-untyped-def]
        if precision == "int8":
            raise ModelLoadError("quantiser unavailable (injected)")
        return real_load(cls, folder, name=name, batch_size=batch_size, precision=precision)

    # an empty loader cache of the test's own: clearing the process's one would drop the session's
    # model from it, and a later test in this worker would load (and hold) a second copy
    monkeypatch.setattr(embedding, "_CACHE", {})
    clear_embedder_cache()
    monkeypatch.setattr(OnnxEmbedder, "load", classmethod(failing_int8))
    try:
        with caplog.at_level(logging.WARNING):
            loaded = load_embedder(BUNDLED_EMBEDDING_MODEL, model_cache_dir, precision="auto")
        assert loaded.name == BUNDLED_EMBEDDING_MODEL and "int8 encoder unavailable" in caplog.text
        with pytest.raises(ModelLoadError, match="quantiser unavailable"):
            load_embedder(BUNDLED_EMBEDDING_MODEL, model_cache_dir, precision="int8")
    finally:
        clear_embedder_cache()


def test_worker_threads_do_not_spin_by_default_and_spinning_changes_no_vector(embedder, model_cache_dir: Path) -> None:  # noqa: ANN001
    """Busy-waiting ORT threads took a core from the rest of the app on two cores (see
    ``OnnxEmbedder.load``); the option is a scheduling choice only, never a numeric one."""
    assert isinstance(embedder, OnnxEmbedder)
    key = "session.intra_op.allow_spinning"
    assert embedder._session.get_session_options().get_session_config_entry(key) == "0"
    spinning = OnnxEmbedder.load(model_cache_dir / E5_FOLDER, name=embedder.name, spin=True)
    assert spinning._session.get_session_options().get_session_config_entry(key) == "1"
    assert np.array_equal(spinning.embed_passages(TEXTS[:4]), embedder.embed_passages(TEXTS[:4]))
