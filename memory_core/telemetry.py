"""Off-the-hot-path bookkeeping: latency rows and access-count bumps are queued and written
by one background thread, so a cache hit costs no database write."""
from __future__ import annotations

import logging
import queue
import threading
from datetime import datetime
from typing import Any, Sequence

from memory_core.storage.errors import DATABASE_DOWN
from memory_core.sql_ports import TelemetryRepository

log = logging.getLogger(__name__)
MAX_BATCH = 500  # queued records written per transaction


class Recorder:
    def __init__(self, repo: TelemetryRepository, max_queue: int = 10_000) -> None:
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
        """Write what is queued in bursts: everything waiting (up to ``MAX_BATCH``) goes in one
        transaction, instead of two commits per search."""
        while True:
            batch = [self._queue.get()]
            while len(batch) < MAX_BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            metrics: list[dict[str, Any]] = []
            accesses: list[tuple[list[str], datetime]] = []
            for kind, payload in batch:
                if kind == "metric":
                    metrics.append(payload)
                elif kind == "access":
                    accesses.append(payload)
                else:  # a flush or stop marker: what was queued before it is written first
                    self._write(metrics, accesses)
                    metrics, accesses = [], []
                    if kind == "flush":
                        payload.set()
                    else:
                        return
            self._write(metrics, accesses)

    def _write(self, metrics: list[dict[str, Any]], accesses: list[tuple[list[str], datetime]]) -> None:
        count = len(metrics) + len(accesses)
        if not count:
            return
        try:
            self._repo.record_telemetry(metrics, accesses)
        except DATABASE_DOWN as exc:  # the database is unreachable: drop the burst, never block a search
            log.warning("telemetry write of %d record(s) failed: %s", count, exc)
        except Exception as exc:
            if count == 1:
                log.warning("telemetry write failed: %s", exc)
                return
            # One bad record must not lose the burst: write them one by one, logging the failures.
            for values in metrics:
                self._write([values], [])
            for access in accesses:
                self._write([], [access])
