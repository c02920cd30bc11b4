"""Off-the-hot-path bookkeeping: latency rows and access-count bumps are queued and written
by one background thread, so a cache hit costs no database write."""
from __future__ import annotations

import logging
import queue
import threading
from datetime import datetime
from typing import Any, Sequence

from memory_core.storage.repository import SqlRepository

log = logging.getLogger(__name__)


class Recorder:
    def __init__(self, repo: SqlRepository, max_queue: int = 10_000) -> None:
        self._repo = repo
        self._queue: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=max_queue)
        self._thread = threading.Thread(target=self._run, name="memory-recorder", daemon=True)
        self._thread.start()

    def metric(self, values: dict[str, Any]) -> None:
        self._put(("metric", values))

    def accessed(self, memory_ids: Sequence[str], at: datetime) -> None:
        if memory_ids:
            self._put(("access", (list(memory_ids), at)))

    def _put(self, item: tuple[str, Any]) -> None:
        try:
            self._queue.put_nowait(item)
        except queue.Full:  # telemetry must never slow or fail a search
            log.warning("telemetry queue full; dropping a %s record", item[0])

    def flush(self, timeout_s: float = 10.0) -> None:
        """Wait until everything queued so far is written (tests, shutdown)."""
        done = threading.Event()
        self._put(("flush", done))
        done.wait(timeout_s)

    def close(self) -> None:
        self.flush()
        self._put(("stop", None))

    def _run(self) -> None:
        while True:
            kind, payload = self._queue.get()
            try:
                if kind == "stop":
                    return
                if kind == "flush":
                    payload.set()
                elif kind == "metric":
                    self._repo.record_metric(payload)
                elif kind == "access":
                    ids, at = payload
                    self._repo.bump_access(ids, at)
            except Exception as exc:
                log.warning("telemetry write failed: %s", exc)
