"""Small measuring tools: percentiles, load average, peak RSS (this process + Milvus Lite child),
disk usage. No psutil: /proc is read directly (Linux)."""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Sequence

import numpy as np


def pct(samples: Sequence[float], *qs: int) -> dict[str, float]:
    """``{"p50": .., "p95": .., ...}`` in the unit of ``samples`` (nearest-rank on sorted data)."""
    if not samples:
        return {f"p{q}": float("nan") for q in qs}
    arr = np.sort(np.asarray(samples, dtype=float))
    out = {}
    for q in qs:
        idx = min(len(arr) - 1, max(0, int(np.ceil(q / 100 * len(arr))) - 1))
        out[f"p{q}"] = round(float(arr[idx]), 3)
    return out


def load_avg() -> float:
    return round(os.getloadavg()[0], 2)


def _rss_kb(pid: int, field: str = "VmRSS") -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out.extend(int(c) for c in (task / "children").read_text().split())
        except OSError:
            continue
    return out


def _tree(pid: int) -> list[int]:
    pids, todo = [], [pid]
    while todo:
        p = todo.pop()
        pids.append(p)
        todo.extend(_children(p))
    return pids


class PeakRss:
    """Samples the summed RSS of this process and its children (the Milvus Lite server) every
    ``interval_s``; also reads each live process's VmHWM (kernel peak) at the end."""

    def __init__(self, interval_s: float = 0.5) -> None:
        self.peak_kb = 0
        self.by_process_mb: dict[str, float] = {}
        self._interval = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="rss-sampler")

    def _sample(self) -> int:
        return sum(_rss_kb(p) for p in _tree(os.getpid()))

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak_kb = max(self.peak_kb, self._sample())
            self._stop.wait(self._interval)

    def start(self) -> "PeakRss":
        self._thread.start()
        return self

    def stop(self) -> float:
        """Peak in MB: the larger of the sampled sum and the sum of per-process kernel peaks."""
        self._stop.set()
        self._thread.join(timeout=5)
        tree = _tree(os.getpid())
        self.by_process_mb = {str(p): round(_rss_kb(p, "VmHWM") / 1024, 1) for p in tree}
        self.by_process_mb["self"] = self.by_process_mb.pop(str(os.getpid()), 0.0)
        hwm = sum(_rss_kb(p, "VmHWM") for p in tree)
        return round(max(self.peak_kb, self._sample(), hwm) / 1024, 1)


def disk_mb(path: Path) -> float:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return round(total / 1024 / 1024, 1)


class Timer:
    def __enter__(self) -> "Timer":
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.ms = (time.perf_counter() - self.start) * 1000
