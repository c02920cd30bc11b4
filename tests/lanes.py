"""Which parts a test module runs on: the real ones (Milvus Lite, the bundled e5 model) or the
stand-ins (``InMemoryVectorStore``, ``HashingEmbedder``) that pass the same contract tests
(``test_vector_store_contract.py``, ``test_embedder_contract.py``).

The rule: every test runs on the real parts in the full run (``.ci/run``, ``scripts/run-tests.sh``
with no ``-m``), which is what they were written for. In the fast lane (``-m "not slow"``, or any
marker expression that leaves slow tests out) the modules in ``FAKE_PARTS_FILES`` run on the
stand-ins instead; every other module keeps the real parts there too, and so does a test marked
``real_parts`` (its engines from ``make_engine`` or from settings get the real store and model).
A module is listed only when its tests pass unchanged on the stand-ins: none of them depends on
what the model understands (paraphrases, translations) or on Milvus itself (its files, its child
process, its errors). ``MEMORY_TEST_PARTS=real`` or ``=fake`` overrides the choice (e.g.
``MEMORY_TEST_PARTS=real scripts/run-tests.sh -m "not slow"``: the fast selection on real parts).
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Iterator

import pytest

if TYPE_CHECKING:
    from memory_core.config import Settings
    from memory_core.embedding.base import Embedder

# Modules whose tests check plumbing that the stand-ins serve as well as the real parts (each
# was run on them; a test in one that needs the real parts is marked ``real_parts``). Kept on the
# real parts in every lane, by what they test: Milvus itself (test_milvus_store, test_vector_damage,
# test_lite_quiet, test_engine_repair's faults injected into Milvus stores), the model
# (test_embedding*), and what only the model's understanding decides (test_truth_over_time,
# test_maintenance_conflicts, test_maintenance_expiry's simulated year, test_engine_scenario,
# test_api_http_search's "which fruit should I avoid?", test_app_demo).
FAKE_PARTS_FILES: frozenset[str] = frozenset({
    "test_api_http.py",
    "test_api_outage.py",
    "test_api_ratelimit.py",
    "test_app_pages.py",
    "test_chat_path.py",
    "test_config.py",
    "test_engine_cache.py",
    "test_engine_isolation.py",
    "test_engine_lifecycle.py",
    "test_engine_ports.py",
    "test_engine_retrieval.py",
    "test_engine_validation.py",
    "test_expansion.py",
    "test_fixtures.py",
    "test_llm_endpoint.py",
    "test_maintenance_archive.py",
    "test_maintenance_merge.py",
    "test_maintenance_reconcile.py",
    "test_rerank.py",
    "test_services_admin.py",
    "test_services_analytics.py",
    "test_services_auth.py",
    "test_services_chat.py",
    "test_services_scheduler.py",
    "test_services_throttle.py",
    "test_sql_keyword.py",
    "test_storage_sql.py",
    "test_telemetry.py",
    "test_write_overlap.py",
})

PARTS_ENV = "MEMORY_TEST_PARTS"


def leaves_out_slow(config: pytest.Config) -> bool:
    """True when the run's ``-m`` expression deselects a test marked only ``slow``."""
    expression = str(config.getoption("markexpr", "") or "")
    if not expression:
        return False
    try:
        from _pytest.mark.expression import Expression

        return not Expression.compile(expression).evaluate(lambda name, **_: name == "slow")
    except Exception:  # noqa: BLE001 - a private pytest API; fall back to reading the text
        return "not slow" in " ".join(expression.split())


def fake_parts_run(config: pytest.Config) -> bool:
    """Whether listed modules run on the stand-ins in this run."""
    choice = os.environ.get(PARTS_ENV, "").strip().lower()
    if choice in ("real", "fake"):
        return choice == "fake"
    if choice:
        raise pytest.UsageError(f"{PARTS_ENV} must be 'real' or 'fake', not {choice!r}")
    return leaves_out_slow(config)


def uses_fake_parts(request: pytest.FixtureRequest) -> bool:
    """Whether the module asking runs on the stand-ins (module- or function-scoped requests)."""
    module = getattr(request, "module", None)
    name = os.path.basename(getattr(module, "__file__", "") or "")
    return name in FAKE_PARTS_FILES and fake_parts_run(request.config)


@pytest.fixture(scope="module", autouse=True)
def _stand_ins_for_engines_opened_from_settings(request: pytest.FixtureRequest) -> Iterator[None]:
    """In a module on the stand-ins, an engine opened from settings alone (``open_memory(settings)``,
    the app's ``get_engine``) gets them too: the vector store the settings name becomes an
    in-memory one, and the bundled model the hashing embedder. Stores are kept per Milvus uri
    and collection for the module, so an engine reopened on the same settings finds its vectors
    as it would in the same Lite file. Stores built directly (``MilvusVectorStore(...)``) stay real."""
    if not uses_fake_parts(request):
        yield
        return
    import memory_core.embedding as embedding
    import memory_core.vector_open as vector_open
    from memory_core.config import BUNDLED_EMBEDDING_MODEL, BUNDLED_ENGLISH_MODEL
    from memory_core.vectors.memory_store import InMemoryVectorStore

    stores: dict[tuple[str, str], InMemoryVectorStore] = {}
    real_load = embedding.load_embedder
    fake = request.getfixturevalue("fake_embedder")

    def open_vectors(settings: "Settings", dim: int, settled: object = None) -> InMemoryVectorStore:
        # ``settled`` chooses a Milvus server's read consistency; one process's memory is always current
        key = (settings.resolved_milvus_uri, settings.milvus_collection)
        known = stores.get(key)
        if known is not None and known.dim != dim:
            raise ValueError(f"{key} holds {known.dim}-d vectors, not {dim}-d")
        stores[key] = known.reopen() if known is not None else InMemoryVectorStore(dim)
        return stores[key]

    def load_embedder(model: str, *args: object, **kwargs: object) -> "Embedder":
        if model in (BUNDLED_EMBEDDING_MODEL, BUNDLED_ENGLISH_MODEL):  # the English leg reads hashes too
            return fake
        return real_load(model, *args, **kwargs)  # type: ignore[arg-type]

    _REAL.update(open_vectors=vector_open.open_vectors, load_embedder=real_load)
    patch = pytest.MonkeyPatch()
    patch.setattr(vector_open, "open_vectors", open_vectors)
    patch.setattr(embedding, "load_embedder", load_embedder)
    try:
        yield
    finally:
        patch.undo()


_REAL: dict[str, object] = {}  # the functions the module fixture above replaced, for ``real_parts``


@pytest.fixture(autouse=True)
def _real_parts_for_marked_tests(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test marked ``real_parts`` in a module on the stand-ins opens its engines on the real
    parts (``make_engine`` also hands it the real model)."""
    if request.node.get_closest_marker("real_parts") is None or not uses_fake_parts(request):
        return
    import memory_core.embedding as embedding
    import memory_core.vector_open as vector_open

    monkeypatch.setattr(vector_open, "open_vectors", _REAL["open_vectors"])
    monkeypatch.setattr(embedding, "load_embedder", _REAL["load_embedder"])


def wants_real_parts(request: pytest.FixtureRequest) -> bool:
    """For function-scoped fixtures: the test runs on the real parts (its module does, or it is
    marked ``real_parts``)."""
    return not uses_fake_parts(request) or request.node.get_closest_marker("real_parts") is not None
