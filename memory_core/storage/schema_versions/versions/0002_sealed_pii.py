"""Sealed PII: a memory keeps the phone numbers and e-mail addresses its placeholders stand for,
encrypted (``memory_core/pii_vault.py``), so the user's own reads can give them back.

Nullable, no default: memories written before it keep plain placeholders and read as before.

Revision ID: 0002
Revises: 0001
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("memories", sa.Column("sealed", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("memories") as batch:  # SQLite drops a column only through a copy
        batch.drop_column("sealed")
