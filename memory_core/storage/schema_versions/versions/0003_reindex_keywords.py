"""The keyword leg reads irregular past forms as their verb ("flew" is "fly",
``memory_core.text.keywords``): every active memory is marked for re-indexing, so the vector
store's BM25 text is rewritten by the reconcile job (``maintenance/reconcile_job.py`` picks up
rows whose vector is not written) instead of old memories being found by the old tokens only.

Searches keep working meanwhile: a memory's previous vector and text stay in the store until its
new ones replace them. No schema change; the downgrade has nothing to undo.

Revision ID: 0003
Revises: 0002
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    memories = sa.table("memories", sa.column("status", sa.String), sa.column("vector_written", sa.Boolean))
    op.execute(memories.update().where(memories.c.status == "active").values(vector_written=False))


def downgrade() -> None:
    pass  # the re-index is harmless to keep: nothing to undo
