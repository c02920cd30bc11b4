"""The keyword leg indexes Chinese character pairs beside jieba's words
(``memory_core.text.keywords.cjk_bigrams``): every active memory is marked for re-indexing, as
revision 0003 did, so the reconcile job (``maintenance/reconcile_job.py``) rewrites each one's BM25
text and a question cut differently from the statement it asks about still meets it.

Searches keep working meanwhile: a memory's previous vector and text stay in the store until its
new ones replace them. No schema change; the downgrade has nothing to undo.

Revision ID: 0006
Revises: 0005
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    memories = sa.table("memories", sa.column("status", sa.String), sa.column("vector_written", sa.Boolean))
    op.execute(memories.update().where(memories.c.status == "active").values(vector_written=False))


def downgrade() -> None:
    pass  # the re-index is harmless to keep: nothing to undo
