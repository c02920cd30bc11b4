"""Alembic's environment for the memory schema, run by ``memory_core.storage.migrations``.

Online only, on the connection the caller opened (``config.attributes["connection"]``) and
inside the transaction it holds: the caller owns the lock and the commit, so a failed step
leaves nothing behind. Revisions applied now are appended to ``config.attributes["applied"]``.
"""
from __future__ import annotations

from typing import Any

from alembic import context

from memory_core.storage.schema import Base

config = context.config
connection = config.attributes.get("connection")
if connection is None or context.is_offline_mode():
    raise RuntimeError("the memory schema migrates online, through memory_core.storage.migrations.migrate()")
applied: list[str] = config.attributes.setdefault("applied", [])


def _record(*, step: Any, **_: Any) -> None:
    if step.is_upgrade and not step.is_stamp:
        applied.append(str(step.up_revision_id))


context.configure(connection=connection, target_metadata=Base.metadata, on_version_apply=_record,
                  compare_type=True)
with context.begin_transaction():
    context.run_migrations()
