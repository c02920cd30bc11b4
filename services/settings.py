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

from services.throttle import ThrottlePolicy


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

    # Sign-in throttling (services/throttle.py): exponential backoff per name and client, per
    # client across names, and per name across clients (capped short, so a guesser cannot keep
    # the real person out for long). No hard lockout.
    login_free_failures: int = 3
    login_client_budget: int = 20
    login_name_budget: int = 10
    login_max_delay_s: float = 900.0
    login_name_max_delay_s: float = 30.0
    login_window_s: float = 3600.0
    # Behind a reverse proxy every visitor has the proxy's address: name the header the proxy
    # sets to the client's address (e.g. X-Forwarded-For; its last entry is used, the one the
    # proxy itself added). Only set this when the app is reachable through that proxy alone.
    trusted_proxy_header: str = ""

    # Sign-in kept across a reload (services/session_token.py): a signed cookie valid this many
    # hours (0: sign-in lasts as long as the browser tab's session, as before). The key is
    # SESSION_SECRET, or a random one kept in DATA_DIR/session.key.
    session_hours: float = 12.0
    session_secret: str = ""

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

    def throttle_policy(self) -> ThrottlePolicy:
        return ThrottlePolicy(free_failures=self.login_free_failures, client_budget=self.login_client_budget,
                              name_budget=self.login_name_budget, max_delay_s=self.login_max_delay_s,
                              name_max_delay_s=self.login_name_max_delay_s, window_s=self.login_window_s)
