"""From importance 3 on a memory fades on its date instead of expiring (``Settings.fade_from_importance``,
``memory_core.lifecycle.fades``): it stays searchable and is returned only when relevant. Memories
of importance 3 or more that the expiry job expired by date before this revision are therefore
brought back as they would be now: active (faded), ``expired_at`` cleared, marked for indexing so
the reconcile job writes their vectors again, each with a history entry that says why.

Only a date expiry is undone: the memory's last history entry must be the expiry job's ("expiry
date ... reached", whoever started the run). A memory a person expired, restored and expired again,
or changed after its expiry stays as it is. The revision reads no settings: with
``FADE_FROM_IMPORTANCE`` set above 3 or to 0, the next expiry run expires those memories again
(and says so in their history), which is the behaviour that setting asks for.

Revision ID: 0004
Revises: 0003
"""
from __future__ import annotations

from datetime import datetime, timezone

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

FADE_FROM = 3
ACTOR = "migration:0004"
NOTE = ("faded instead of expired: from importance 3 on a memory now fades on its date (stays searchable, "
        "returned only when relevant); brought back by schema revision 0004")

_memories = sa.table(
    "memories", sa.column("memory_id", sa.String), sa.column("user_id", sa.String),
    sa.column("status", sa.String), sa.column("importance", sa.Integer), sa.column("expired_at", sa.DateTime),
    sa.column("updated_at", sa.DateTime), sa.column("vector_written", sa.Boolean))
_history = sa.table(
    "memory_history", sa.column("id", sa.Integer), sa.column("memory_id", sa.String),
    sa.column("user_id", sa.String), sa.column("action", sa.String), sa.column("actor", sa.String),
    sa.column("at", sa.DateTime), sa.column("before", sa.JSON), sa.column("after", sa.JSON),
    sa.column("note", sa.Text))


def _by_date(action: str, note: str | None) -> bool:
    """The expiry job's entry (``maintenance/expiry.py``: "expiry date 2025-03-01 reached")."""
    text = note or ""
    return action == "expire" and text.startswith("expiry date ") and text.endswith(" reached")


def upgrade() -> None:
    bind = op.get_bind()
    last = (sa.select(sa.func.max(_history.c.id)).where(_history.c.memory_id == _memories.c.memory_id)
            .correlate(_memories).scalar_subquery())
    rows = bind.execute(
        sa.select(_memories.c.memory_id, _memories.c.user_id, _history.c.action, _history.c.note, _history.c.after)
        .join(_history, _history.c.memory_id == _memories.c.memory_id)
        .where(_memories.c.status == "expired", _memories.c.importance >= FADE_FROM, _history.c.id == last)
    ).all()
    now = datetime.now(timezone.utc).replace(tzinfo=None)  # stored naive UTC, as ``UTCDateTime`` writes it
    for memory_id, user_id, action, note, after in rows:
        if not _by_date(action, note):
            continue
        changed = bind.execute(
            _memories.update()
            .where(_memories.c.memory_id == memory_id, _memories.c.status == "expired")
            .values(status="active", expired_at=None, updated_at=now, vector_written=False))
        if not changed.rowcount:
            continue
        before = dict(after or {})
        bind.execute(_history.insert().values(
            memory_id=memory_id, user_id=user_id, action="restore", actor=ACTOR, at=now, before=before,
            after=before | {"status": "active", "expired_at": None}, note=NOTE))


def downgrade() -> None:
    pass  # the memories stay active; the previous code would expire them again on its next run
