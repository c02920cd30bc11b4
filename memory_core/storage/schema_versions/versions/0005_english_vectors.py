"""English vectors: a memory's embedding by the second, English-only encoder (``memory_core/english_leg.py``),
one row per memory, tagged with the model and the content hash it was made from.

A new table, empty at first: memories written before it get their vector when a search first
needs one (and keep it).

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


def upgrade() -> None:
    op.create_table(
        "english_vectors",
        sa.Column("memory_id", sa.String(64), primary_key=True),
        sa.Column("user_id", sa.String(256), nullable=False),
        sa.Column("model", sa.String(128), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
    )
    op.create_index("ix_english_vectors_user_id", "english_vectors", ["user_id"])


def downgrade() -> None:
    op.drop_index("ix_english_vectors_user_id", table_name="english_vectors")
    op.drop_table("english_vectors")
