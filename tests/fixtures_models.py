"""Session fixtures for the real offline models (imported by conftest.py).

The bundled e5 model is converted once into a persistent, gitignored folder under
``data/test-models`` so repeated test runs reuse it (conversion writes ~470 MB).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

# Before torch is imported anywhere: busy-waiting OpenMP threads cripple a shared 2-core box,
# and no model hub is reachable.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from memory_core.config import BUNDLED_EMBEDDING_MODEL  # noqa: E402
from memory_core.embedding import load_embedder  # noqa: E402
from memory_core.embedding.base import Embedder  # noqa: E402
from memory_core.embedding.hashing import HashingEmbedder  # noqa: E402
from tests.lanes import uses_fake_parts  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
TEST_MODEL_DIR = REPO_ROOT / "data" / "test-models"


@pytest.fixture(scope="session")
def model_cache_dir() -> Path:
    """Persistent model cache shared by test runs (override with MEMORY_TEST_MODEL_DIR)."""
    path = Path(os.environ.get("MEMORY_TEST_MODEL_DIR", TEST_MODEL_DIR))
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def real_embedder(model_cache_dir: Path) -> Embedder:
    """The bundled multilingual-e5-small as the product runs it (default precision: int8 on
    ONNX), loaded once per process: engine tests exercise what ships."""
    from memory_core.config import Settings

    default = Settings(_env_file=None).embedding_precision  # type: ignore[call-arg]
    return load_embedder(BUNDLED_EMBEDDING_MODEL, model_cache_dir, precision=default)


@pytest.fixture(scope="session")
def fake_embedder() -> Embedder:
    """The hashing embedder: no model, the same vectors everywhere (``test_embedder_contract.py``)."""
    return HashingEmbedder()


@pytest.fixture(scope="module")
def embedder(request: pytest.FixtureRequest) -> Embedder:
    """What this module's engines embed with: the real model, or the hashing embedder when the
    module runs on the stand-ins in this lane (``tests/lanes.py``). The real model is loaded
    only when a module asks for it."""
    if uses_fake_parts(request):
        return request.getfixturevalue("fake_embedder")
    return request.getfixturevalue("real_embedder")


@pytest.fixture(scope="session")
def fp32_embedder(model_cache_dir: Path) -> Embedder:
    """The same model in fp32 on ONNX: the graph whose vectors must equal torch's."""
    return load_embedder(BUNDLED_EMBEDDING_MODEL, model_cache_dir, precision="fp32")


@pytest.fixture(scope="session")
def torch_embedder(model_cache_dir: Path) -> Embedder:
    """The same model on the sentence-transformers (torch) backend, the reference for ONNX."""
    return load_embedder(BUNDLED_EMBEDDING_MODEL, model_cache_dir, backend="torch")


class DelegatingEmbedder(Embedder):
    """The real model behind a wrapper; tests override one method to watch or break it."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name, self.dim, self.max_tokens = inner.name, inner.dim, inner.max_tokens

    def embed_passages(self, texts):  # type: ignore[no-untyped-def]
        return self.inner.embed_passages(texts)

    def embed_queries(self, texts):  # type: ignore[no-untyped-def]
        return self.inner.embed_queries(texts)

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)
