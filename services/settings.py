"""Settings of the app layer (sign-in, demo mode, scheduler), read like ``memory_core.config``.

They live here and not in ``memory_core.config`` because the engine has no notion of
accounts, demo visitors or a UI; environment variables and ``.env`` set them. Maintenance
thresholds (merge size, lease length) are the engine's settings, not repeated here.
"""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict


class AppSettings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore")

    data_dir: Path = Field(default=Path("./data"), description="Same variable as the engine's DATA_DIR.")
    # Off by default: a deployment offers demo identities only when asked to (scripts/start-app.sh
    # turns it on for the local embedded run), and never once accounts or OIDC are configured.
    demo_mode: bool = Field(default=False, description="Offer the demo users (labelled as a demo) on sign-in.")
    demo_staff: bool = Field(default=True, description="In demo mode, also offer a demo support-staff sign-in "
                                                       "(held to demo users).")
    accounts_file: Path | None = Field(default=None, description="JSON accounts file; default data_dir/accounts.json.")
    accounts_json: str = Field(default="", description="Accounts as a JSON string (same format as the file).")
    staff_emails: Annotated[tuple[str, ...], NoDecode] = Field(default=(), description="OIDC e-mails that get the staff role.")

    login_max_failures: int = 5
    login_window_s: int = 300
    login_lockout_s: int = 300

    chat_top_k: int = 5
    chat_history_turns: int = 6

    scheduler_enabled: bool = True
    scheduler_timezone: str = "UTC"

    @field_validator("staff_emails", mode="before")
    @classmethod
    def _split_emails(cls, value: object) -> object:
        if isinstance(value, str):
            return tuple(part.strip().lower() for part in value.split(",") if part.strip())
        return value

    @property
    def resolved_accounts_file(self) -> Path:
        return self.accounts_file or (self.data_dir / "accounts.json")
