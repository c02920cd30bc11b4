"""The path of a chat message: at most five files from the page to the stores (issue 20).

A chat turn's search reaches a store through page -> services/chat.py -> memory_core/engine.py ->
memory_core/retrieval.py (which makes every store call of a search; recall.py, ranking.py and
sql_keyword.py only compute) -> the store adapter. Every read a chat turn makes of the vector
store and of SQL is caught here with the call stack it came down, and the project files on it
from services/chat.py to the adapter are counted: a helper that starts calling a store itself
(a sixth file on the path) fails this test, which prints the path it found.

The turns cover every store call of a search: the dense and keyword legs, a named speaker and a
named time window, the core memories, neighbours, constraints, the SQL keyword leg (a vector store
without BM25) and the outage fallback (the vector store down).

The remember step after a reply (ChatService.remember: every SQL and vector call, reads and
writes, of a write, a near-duplicate and a newer-wins correction in English and in Chinese) is
measured the same way: page -> services/chat.py -> memory_core/engine.py ->
memory_core/write_pipeline.py (which makes every store call of a write; write_chunks.py,
write_dedup.py and conflict_rules.py only compute) -> the store adapter.
"""
from __future__ import annotations

import inspect
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest

from memory_core import FixedClock
from memory_core.sql_ports import MemoryReadRepository
from services.chat import ChatService, new_session_id
from tests.app_support import ALICE

ROOT = Path(__file__).resolve().parents[1]
PAGE = "pages/1_💬_Chat.py"
SERVICE = "services/chat.py"
STORE_PACKAGES = ("memory_core/vectors/", "memory_core/storage/")  # adapters: one "store" file each
MAX_FILES = 4  # services/chat.py .. the store adapter, inclusive; the page is the fifth file, above
VECTOR_READS = ("search_dense", "search_dense_many", "search_keyword")
SQL_READS = tuple(sorted({name for klass in MemoryReadRepository.__mro__ if getattr(klass, "_is_protocol", False)
                          for name in vars(klass) if not name.startswith("_")}
                         | {"get", "get_many", "status_and_content", "messages", "session_messages"}))


@dataclass(frozen=True)
class StoreCall:
    port: str  # "vector" or "sql"
    method: str
    files: tuple[str, ...]  # project files, outermost first, the adapter's file last

    def path(self) -> list[str]:
        """The files from the chat service down to the store, a run of frames inside an adapter
        package counted as one ("store")."""
        files = list(self.files[self.files.index(SERVICE):])
        out: list[str] = []
        for name in files:
            shown = f"store ({name})" if name.startswith(STORE_PACKAGES) else name
            if out and (out[-1] == shown or (shown.startswith("store") and out[-1].startswith("store"))):
                continue
            if shown not in out:
                out.append(shown)
        return out

    def shown(self) -> str:
        """The whole path, the page included (one file above the service)."""
        return " -> ".join([PAGE, *self.path()])


def project_file(filename: str) -> str | None:
    """``filename`` relative to the repository root when it is project code (not a test, not
    an installed package), else None."""
    if ".venv" in Path(filename).parts or "site-packages" in filename:
        return None
    try:
        relative = Path(filename).resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return None
    return None if relative.startswith("tests/") else relative


def recording(calls: list[StoreCall], port: str, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    # unwrapped: a ``@contextmanager`` method (``session``) is defined in the adapter, not in contextlib
    adapter = project_file(inspect.getsourcefile(inspect.unwrap(original)) or "")

    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        frames = [project_file(frame.filename) for frame in traceback.extract_stack()[:-1]]
        files = tuple(f for f in frames + [adapter] if f is not None)
        calls.append(StoreCall(port, name, files))
        return original(self, *args, **kwargs)

    return wrapper


@pytest.fixture
def watched(make_engine, monkeypatch):  # type: ignore[no-untyped-def]
    """An engine with memories to find, its store reads recorded (from the adapter classes the
    pipeline holds, so a wrapper put between the pipeline and an adapter is on the path too)."""
    from datetime import datetime, timedelta, timezone

    now = datetime(2025, 6, 20, 12, 0, tzinfo=timezone.utc)
    engine = make_engine(clock=FixedClock(now))
    for days, text in [(30, "I am allergic to peanuts"), (20, "My favourite drink is green tea"),
                       (9, "Caroline: I started a pottery class at the community centre"),
                       (9, "Melanie: That sounds lovely, what did you make?"),
                       (8, "Caroline: A small bowl for my cat's food"),
                       (2, "I went hiking in the hills near Lisbon last weekend")]:
        engine.add("alice", text, actor="test", session_id="s1", at=now - timedelta(days=days))
    calls: list[StoreCall] = []
    retriever = engine.retriever
    for port, store, names in (("vector", retriever.vectors, VECTOR_READS), ("sql", retriever.repo, SQL_READS)):
        for name in names:
            original = getattr(type(store), name, None)
            if callable(original):
                monkeypatch.setattr(type(store), name, recording(calls, port, name, original))
    return engine, calls


def turn(chat: ChatService, text: str) -> None:
    prepared = chat.prepare_turn(ALICE, new_session_id(), text)
    "".join(prepared.stream())
    chat.finish_turn(prepared)


def test_a_chat_message_reaches_every_store_within_five_files(watched, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    engine, calls = watched
    chat = ChatService(engine)
    turn(chat, "What did Caroline make at her pottery class last week?")  # speaker, window, neighbours
    turn(chat, "Can you recommend a snack for my hike?")  # a constraint bears on it
    # A vector store without BM25: the keyword leg comes from SQL.
    monkeypatch.setattr(type(engine.retriever.vectors), "native_keyword", property(lambda self: False))
    turn(chat, "Which drink do I like?")

    # The vector store down: SQL's keyword scan stands in for recall.
    def down(*args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("vector store down")

    monkeypatch.setattr(engine.retriever.vectors, "search_dense", down)
    turn(chat, "Where did I go hiking?")

    from_chat = [c for c in calls if SERVICE in c.files]
    assert from_chat, "no store read was recorded from a chat turn: the wraps were not hit"
    hit = {(c.port, c.method) for c in from_chat}
    # What a search asks of each store (a call missing here means the test no longer covers it).
    assert {("vector", "search_dense"), ("vector", "search_keyword")} <= hit, sorted(hit)
    assert {("sql", m) for m in ("get_many", "core_memory_ids", "speakers_present", "ids_with_event_in",
                                 "adjacent_active", "constraints", "keyword_candidates")} <= hit, sorted(hit)
    shown = sorted({f"{call.shown()}  [{call.port}.{call.method}]" for call in from_chat})
    print("\n".join(shown))  # with -s: every path a chat turn took to a store
    assert all(call.path()[-1].startswith("store") for call in from_chat), shown  # the adapter comes last
    too_long = sorted({call.shown() for call in from_chat if len(call.path()) > MAX_FILES})
    assert not too_long, "a chat message reaches a store through more than 5 files:\n" + "\n".join(too_long)


def test_the_path_counts_what_it_should() -> None:
    """The counting itself: tests and installed packages are left out, frames inside an adapter
    package are one file, and a helper between the pipeline and the store is one file more."""
    venv = str(ROOT / ".venv/lib/python3.11/site-packages/sqlalchemy/orm/session.py")
    files = [project_file(f) for f in (str(ROOT / "tests/test_chat_path.py"), str(ROOT / "services/chat.py"),
                                       str(ROOT / "memory_core/engine.py"), str(ROOT / "memory_core/retrieval.py"),
                                       str(ROOT / "memory_core/storage/repository.py"), venv,
                                       str(ROOT / "memory_core/storage/memory_reads.py"))]
    assert files[0] is None and files[5] is None
    call = StoreCall("sql", "get_many", tuple(f for f in files if f is not None))
    assert call.path() == ["services/chat.py", "memory_core/engine.py", "memory_core/retrieval.py",
                           "store (memory_core/storage/repository.py)"]
    longer = StoreCall("sql", "get_many", call.files[:3] + ("memory_core/recall.py",) + call.files[3:])
    assert len(longer.path()) == MAX_FILES + 1


@pytest.mark.parametrize("module", ["memory_core/recall.py", "memory_core/ranking.py", "memory_core/sql_keyword.py",
                                    "memory_core/write_chunks.py", "memory_core/write_dedup.py",
                                    "memory_core/conflict_rules.py"])
def test_the_pipelines_cores_import_no_port(module: str) -> None:
    """recall, ranking and the SQL keyword leg compute on what the retrieval pipeline read; the
    chunks, near-duplicate and newer-wins rules on what the write pipeline read: none of them
    can reach a store (no SQL port, no vector store, no embedder among what they import)."""
    import ast

    tree = ast.parse((ROOT / module).read_text(encoding="utf-8"))
    imported = {f"{node.module}.{alias.name}" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                for alias in node.names}
    ports = {name for name in imported if name.startswith("memory_core.sql_ports.")
             or name.endswith((".VectorStore", ".Embedder", ".SqlRepositoryPort"))}
    assert not ports, f"{module} imports {sorted(ports)}"



# ---- the remember step ---------------------------------------------------------------------------
# After a reply, ChatService.remember writes what the user said: engine.add -> write_pipeline.py,
# which reads what the near-duplicate rules (write_dedup.py) and the newer-wins rules
# (conflict_rules.py) look at, and makes the writes they decide: rows, history, vectors, the
# supersede transaction, the re-index of a newer memory that inherited an importance or a key.


@pytest.fixture
def watched_writes(make_engine, monkeypatch):  # type: ignore[no-untyped-def]
    """An engine whose every store call is recorded: each method of the SQL port and of the vector
    store, reads and writes (insert, add_history, update_*, upsert, delete ...), wrapped on the
    adapter classes that the write pipeline, the retriever and the engine's parts hold (one
    object each, checked), so a helper between any of them and an adapter is on the path."""
    from datetime import datetime, timezone

    from memory_core.sql_ports import REPOSITORY_MEMBERS
    from memory_core.vectors.base import VectorStore

    clock = FixedClock(datetime(2025, 6, 20, 12, 0, tzinfo=timezone.utc))
    engine = make_engine(clock=clock)
    assert engine.writer.repo is engine.parts.repo is engine.retriever.repo
    assert engine.writer.vectors is engine.parts.vectors is engine.retriever.vectors
    vector_methods = sorted(n for n in vars(VectorStore) if not n.startswith("_"))
    calls: list[StoreCall] = []
    for port, store, names in (("vector", engine.parts.vectors, vector_methods),
                               ("sql", engine.parts.repo, REPOSITORY_MEMBERS)):
        for name in names:
            original = getattr(type(store), name, None)
            if callable(original):  # properties (native_keyword, database, location) are not calls
                monkeypatch.setattr(type(store), name, recording(calls, port, name, original))
    return engine, clock, calls


@pytest.mark.real_parts  # newer-wins needs the model: the hashing stand-in finds no candidate to put to the rules
def test_remembering_a_message_reaches_every_store_within_five_files(watched_writes) -> None:  # type: ignore[no-untyped-def]
    from datetime import timedelta

    from tests.app_support import ZHANG

    engine, clock, calls = watched_writes
    chat = ChatService(engine)

    def remember(principal: Any, text: str) -> Any:
        clock.set(clock.now() + timedelta(minutes=5))  # each statement newer than the last
        return chat.remember(principal, "s-remember", text, new_session_id())

    berlin = remember(ALICE, "I live in Berlin.")
    assert remember(ALICE, "I live in Berlin.").deduplicated == berlin.created  # a repeat refreshes it
    # Pinned (a staff edit, not a chat call): the correction inherits its importance, so the
    # conflict step re-indexes the newer memory (write_pipeline.index_records).
    engine.update(berlin.created[0], actor="test", importance=5)
    lisbon = remember(ALICE, "I moved to Lisbon.")
    remember(ZHANG, "我住在北京")
    shanghai = remember(ZHANG, "我搬到上海了")
    assert lisbon.replaced_contents == ["I live in Berlin."], lisbon
    assert shanghai.replaced_contents == ["我住在北京"], shanghai
    assert engine.get(lisbon.created[0]).importance == 5

    from_chat = [c for c in calls if SERVICE in c.files]
    hit = {(c.port, c.method) for c in from_chat}
    # What remembering asks of each store (a call missing here means the test no longer covers it).
    assert {("vector", m) for m in ("insert_new", "search_dense_many", "delete", "upsert")} <= hit, sorted(hit)
    assert {("sql", m) for m in ("session", "insert", "add_history", "set_vector_written", "hashes_to_ids", "get",
                                 "get_many", "update_fields", "update_if_status", "recent_active_entities")} <= hit, \
        sorted(hit)
    shown = sorted({f"{call.shown()}  [{call.port}.{call.method}]" for call in from_chat})
    print("\n".join(shown))  # with -s: every path remembering took to a store
    assert all(call.path()[-1].startswith("store") for call in from_chat), shown  # the adapter comes last
    too_long = sorted({call.shown() for call in from_chat if len(call.path()) > MAX_FILES}, key=len)
    assert not too_long, "remembering a message reaches a store through more than 5 files:\n" + "\n".join(too_long)
