"""Lasting traits of the user (a height, colour blindness, a night owl, a computer platform) are a
kind of constraint (``memory_core.text.constraints``, kind ``trait``): they reach every request of
their topic, as an allergy reaches every food request. Memories written before this revision
were labelled without that kind, so the active ones with no constraint kind are read again with
the rules and labelled ``trait`` where they state one. Nothing else changes.

Revision ID: 0005
Revises: 0004
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_memories = sa.table("memories", sa.column("memory_id", sa.String), sa.column("content", sa.Text),
                     sa.column("status", sa.String), sa.column("constraint_kind", sa.String))


def upgrade() -> None:
    from memory_core.text.constraints import constraint_kind  # the rules as they are now

    bind = op.get_bind()
    after = ""
    while True:
        rows = bind.execute(
            sa.select(_memories.c.memory_id, _memories.c.content)
            .where(_memories.c.memory_id > after, _memories.c.status == "active",
                   _memories.c.constraint_kind.is_(None))
            .order_by(_memories.c.memory_id).limit(2000)).all()
        if not rows:
            return
        traits = [memory_id for memory_id, content in rows if constraint_kind(content or "") == "trait"]
        if traits:
            bind.execute(_memories.update().where(_memories.c.memory_id.in_(traits)).values(constraint_kind="trait"))
        after = rows[-1][0]


def downgrade() -> None:
    bind = op.get_bind()
    bind.execute(_memories.update().where(_memories.c.constraint_kind == "trait").values(constraint_kind=None))
