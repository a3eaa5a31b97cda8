"""The ``SPOTWISE_*`` environment variables as one pydantic-settings model (imported only when
settings are read: pydantic-settings takes a tenth of a second to import)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DATABASE_URL_SCHEMES = ("postgresql://", "postgres://")
"""How a PostgreSQL URL starts."""
DEFAULT_MAX_IN_FLIGHT = 4
"""Requests the policy API serves at once per worker: with ~5 ms of work each, a served request
waits at most ~20 ms behind the others."""


class Settings(BaseSettings):
    """The ``SPOTWISE_*`` variables (name = ``SPOTWISE_`` + the field in capitals); a cloud's
    endpoints are the cloud's own (:class:`spotwise.core.settings.CloudEndpoint`)."""

    model_config = SettingsConfigDict(env_prefix="SPOTWISE_", extra="ignore", frozen=True)

    store: Path | None = None
    """The store file (``--store`` beats it)."""
    operational_store: str | None = None
    """A PostgreSQL URL for the jobs, ledger, forecasts and placement scores (default: a SQLite
    file beside the store file)."""
    data: Path | None = None
    """The bundled data folder (default: the one shipped with Spotwise)."""
    store_wait_s: float = Field(default=30.0, ge=0)
    """Seconds an open waits for a store another process holds."""
    store_wait_log: Path | None = None
    """A file (made 0600) to which every store call that opens the store file appends how long
    it waited for it, and the process: what a soak of many processes measures."""
    api_token: str | None = None
    """The policy API's bearer token (``spotwise serve``, and clients of it)."""
    api_max_in_flight: int = Field(default=DEFAULT_MAX_IN_FLIGHT, ge=1, le=10_000)
    """Requests the policy API serves at once per worker; past it, 503 + Retry-After."""
    api_max_per_client: int | None = Field(default=None, ge=1, le=10_000)
    """Of those, the most one client (peer address) may hold (default: all but a quarter)."""
    api_traces: Path | None = None
    api_models: Path | None = None
    pool: str | None = None
    """Set by the supervisor: the pool the job runs in."""
    market: str | None = None
    """Set by the supervisor: spot or on-demand."""
    mtbf_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Mean seconds between preemptions, for the guard's checkpoint interval."""
    checkpoint_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Seconds between the guard's checkpoints (``spotwise run --checkpoint-minutes``; default:
    Young/Daly from the measured stall and the MTBF)."""
    notice_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Seconds between a SIGTERM and the instance's end, the guard's window for its last save
    (set in a Kubernetes Pod: its platform's grace; default 30)."""
    notices: str = ""
    """Cloud notice sources to watch, comma-separated (the clouds' names: aws, gcp, ...)."""
    heartbeat_file: Path | None = None
    """Set by the supervisor: where the guard writes its step count."""
    fresh_if_damaged: bool = False
    """Let the guard start over from step 0 when checkpoints exist but none is intact (else it
    refuses: losing every step done must never be silent)."""

    @field_validator("operational_store")
    @classmethod
    def _database_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(DATABASE_URL_SCHEMES):
            raise ValueError("must be a postgresql:// URL (unset it to keep them in the store)")
        return value
