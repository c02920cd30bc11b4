"""The real-server fixture itself: it answers, reports its version, and nothing of it is
reachable except through 127.0.0.1 (Milvus 2.3.5 binds every interface it can see)."""
from __future__ import annotations

import re
import subprocess

import pytest

pytestmark = pytest.mark.slow


def _listeners(netns_pid: int | None = None) -> list[tuple[str, int, set[int]]]:
    """(local address, port, owning pids) of every listening TCP socket, from ``ss -ltnpH``,
    on the host or inside the network namespace of ``netns_pid``."""
    cmd = ["ss", "-ltnpH"]
    if netns_pid is not None:
        cmd = ["nsenter", f"--net=/proc/{netns_pid}/ns/net", *cmd]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        fields = line.split()
        address, _, port = fields[3].rpartition(":")
        pids = {int(p) for p in re.findall(r"pid=(\d+)", line)}
        rows.append((address, int(port), pids))
    return rows


def _comm(pid: int) -> str:
    """A process's name; "" for one that exited since it was listed (a short-lived shell of the
    bridge: reading its /proc entry raced its exit and failed the test once)."""
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except (FileNotFoundError, ProcessLookupError):
        return ""


def test_server_answers_with_its_version(milvus_server) -> None:
    from memory_core.vectors import pymilvus_import  # noqa: F401
    from pymilvus import MilvusClient

    client = MilvusClient(uri=milvus_server.uri, timeout=10, alias="test-milvus-server-version")
    try:
        assert client.get_server_version(timeout=10).startswith("v2.3.5")
    finally:
        client.close()
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", milvus_server.uri)


def test_nothing_of_the_server_listens_beyond_loopback(milvus_server) -> None:
    server_pids = set(milvus_server.server_pids())
    assert len(server_pids) >= 3  # sh, the two inner bridges, milvus
    host = _listeners()
    # No Milvus process listens on the host at all, on any address ...
    assert not [row for row in host if row[2] & server_pids]
    # ... and the only way in is the bridge, on 127.0.0.1 only.
    bridge = [row for row in host if milvus_server.bridge_pid() in row[2]]
    assert bridge == [("127.0.0.1", milvus_server.port, {milvus_server.bridge_pid()})]
    # Inside its namespace Milvus binds every interface (the reason for the namespace) ...
    milvus_pid = next(p for p in server_pids if _comm(p) == "milvus")
    inside = _listeners(milvus_pid)
    assert ("*", 19530, {milvus_pid}) in [(a, p, pids & {milvus_pid}) for a, p, pids in inside]
    # ... and loopback is the only interface there is.
    links = subprocess.run(["nsenter", f"--net=/proc/{milvus_pid}/ns/net", "ip", "-o", "link", "show"],
                           capture_output=True, text=True, check=True).stdout
    assert [line.split(":")[1].strip() for line in links.splitlines()] == ["lo"]


def test_a_flushed_collection_loads(milvus_server) -> None:
    """Sealed segments load (they did not without the namespace's own /proc: Milvus read its
    memory use as 0 and retried the load forever)."""
    import numpy as np

    from memory_core.vectors import pymilvus_import  # noqa: F401
    from memory_core.vectors.schema import create_collection
    from pymilvus import MilvusClient

    client = MilvusClient(uri=milvus_server.uri, timeout=60, alias="test-milvus-server-flush")
    try:
        create_collection(client, "flushed", 8, partition_key=True, bm25=False, timeout=120)
        rng = np.random.default_rng(0)
        client.insert("flushed", [{"memory_id": f"m{i}", "user_id": f"u{i % 3}", "embedding": rng.random(8).tolist(),
                                   "text": "", "importance": 3, "created_at": 0, "expires_at": 0,
                                   "memory_type": "declarative", "content_hash": ""} for i in range(300)], timeout=60)
        client.flush("flushed", timeout=120)
        client.release_collection("flushed", timeout=60)
        client.load_collection("flushed", timeout=120)
        assert client.query("flushed", filter='user_id == "u1"', output_fields=["count(*)"],
                            timeout=60)[0]["count(*)"] == 100
    finally:
        client.drop_collection("flushed", timeout=60)
        client.close()
