"""Real backends with a fault switched on: constructor injection, no patching."""
from __future__ import annotations

import os
import socket
import threading
from typing import Sequence

from sqlalchemy.engine import make_url

from memory_core.errors import BackendUnavailable
from memory_core.vectors.base import VectorRecord
from memory_core.vectors.milvus_store import MilvusVectorStore


class FailingWritesStore(MilvusVectorStore):
    """A real Milvus Lite store whose writes fail while ``failing`` is set (Milvus outage)."""

    failing = True

    def _write(self, records: Sequence[VectorRecord], fresh: bool) -> None:  # upsert and insert_new
        if self.failing:
            raise BackendUnavailable("injected: milvus write failed")
        super()._write(records, fresh)


class DownStore(MilvusVectorStore):
    """A real store that answers nothing while ``down`` is set (Milvus unreachable)."""

    down = True

    def _check(self) -> None:
        if self.down:
            raise BackendUnavailable("injected: milvus unavailable")

    def _write(self, records, fresh):  # type: ignore[no-untyped-def]
        self._check()
        super()._write(records, fresh)

    def search_dense(self, vector, flt, limit):  # type: ignore[no-untyped-def]
        self._check()
        return super().search_dense(vector, flt, limit)

    def search_keyword(self, text, flt, limit):  # type: ignore[no-untyped-def]
        self._check()
        return super().search_keyword(text, flt, limit)

    def ping(self) -> bool:
        return not self.down and super().ping()


class DiesOnUpsertStore(MilvusVectorStore):
    """Kills the whole process at the vector write: the SQL commit has happened, nothing else."""

    def _write(self, records: Sequence[VectorRecord], fresh: bool) -> None:
        os._exit(17)


class WriteDuringReconcileStore(MilvusVectorStore):
    """A real store that runs ``before_read`` once, just before reconcile's next read of the
    user list or of a user's hashes: a write landing in the middle of a reconcile."""

    before_read = None  # type: ignore[var-annotated]

    def _fire(self) -> None:
        hook, self.before_read = self.before_read, None
        if hook is not None:
            hook()

    def all_user_ids(self):  # type: ignore[no-untyped-def]
        self._fire()
        return super().all_user_ids()

    def user_hashes(self, user_id):  # type: ignore[no-untyped-def]
        self._fire()
        return super().user_hashes(user_id)


class FailingDeletesStore(MilvusVectorStore):
    """A real store whose vector deletes fail while ``failing`` is set: the vector of a memory
    that left retrieval stays behind until reconcile removes it."""

    failing = False

    def delete(self, memory_ids, user_id=None):  # type: ignore[no-untyped-def]
        if self.failing:
            raise BackendUnavailable("injected: milvus delete failed")
        return super().delete(memory_ids, user_id)


class PostgresRelay:
    """A TCP relay in front of the real PostgreSQL. ``close`` makes the database unreachable:
    the pooled connections die and new ones are refused (nothing in the engine is replaced)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 5432) -> None:
        self._target = (host, port)
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def url_through(self, url: str) -> str:
        """``url`` (a database on the relayed server) reached through this relay."""
        return make_url(url).set(host="127.0.0.1", port=self.port).render_as_string(hide_password=False)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
                upstream = socket.create_connection(self._target)
            except OSError:
                return
            with self._lock:
                if self._closed:
                    client.close()
                    upstream.close()
                    return
                self._open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        for sock in (a, b):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def drop_connections(self) -> None:
        """Cut every open connection but keep accepting new ones: what a database restart
        looks like to a client pool, without touching the machine's PostgreSQL."""
        with self._lock:
            sockets, self._open = self._open, []
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            sockets, self._open = self._open, []
        for sock in [self._server, *sockets]:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
