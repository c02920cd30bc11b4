"""pymilvus waits for a new index by sleeping 0.5 s before each look at its state
(``GrpcHandler.wait_for_creating_index``), so every collection the store creates costs at least
1 s of sleep (two indexes: dense and BM25) even though Milvus Lite builds the index of an empty
collection at once. The store creates a shard collection on a user's first write, so the suite
slept about that long in most engine tests.

``poll_index_state_quickly`` replaces that wait for the test process with one that asks the same
question of the same Milvus (Lite or server) sooner: after 5 ms, then twice as long each time up
to pymilvus' own 0.5 s. It still returns only when Milvus says the index is built (or failed)
and keeps the call's timeout, so nothing a test checks changes; only the idle time goes.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Optional

FIRST_LOOK_S = 0.005
LONGEST_WAIT_S = 0.5  # pymilvus' fixed interval


def poll_index_state_quickly() -> Callable[[], None]:
    """Install the quicker wait on pymilvus' gRPC handler; returns the undo."""
    from pymilvus.client import grpc_handler
    from pymilvus.client.types import IndexState
    from pymilvus.decorators import retry_on_rpc_failure
    from pymilvus.exceptions import MilvusException

    handler = grpc_handler.GrpcHandler
    original = handler.__dict__["wait_for_creating_index"]

    @retry_on_rpc_failure()
    def wait_for_creating_index(self: Any, collection_name: str, index_name: str,
                                timeout: Optional[float] = None, **kwargs: Any) -> tuple[bool, str]:
        timestamp = self.alloc_timestamp()
        start = time.time()
        pause = FIRST_LOOK_S
        while True:
            time.sleep(pause)
            state, fail_reason = self.get_index_state(collection_name, index_name, timeout=timeout,
                                                      timestamp=timestamp, **kwargs)
            if state == IndexState.Finished:
                return True, fail_reason
            if state == IndexState.Failed:
                return False, fail_reason
            if isinstance(timeout, int) and time.time() - start > timeout:
                raise MilvusException(message=f"collection {collection_name} create index {index_name} "
                                              f"timeout in {timeout}s")
            pause = min(pause * 2, LONGEST_WAIT_S)

    handler.wait_for_creating_index = wait_for_creating_index  # type: ignore[method-assign]

    def undo() -> None:
        handler.wait_for_creating_index = original  # type: ignore[method-assign]

    return undo
