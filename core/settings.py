"""Every ``SPOTWISE_*`` environment variable, read and checked in one place
(:class:`spotwise.core.environment.Settings`, pydantic-settings; a cloud's endpoints are declared
by the cloud, as :class:`CloudEndpoint`, and read by :func:`endpoint_url`), and where Spotwise
keeps things: the store file, the bundled data folder and its defaults.

:func:`current` and :func:`endpoint_url` read the environment anew on each call: the supervisor
sets variables for the job it launches, and tests set them per test.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import SplitResult, urlsplit

if TYPE_CHECKING:
    from spotwise.core.environment import Settings

STORE_ENV = "SPOTWISE_STORE"
DATA_ENV = "SPOTWISE_DATA"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
"""Hosts a cloud API endpoint may be reached on over plain http (a local server, never the
network: a bearer token travels with every request)."""


class SettingsError(ValueError):
    """A ``SPOTWISE_*`` variable holds a value Spotwise cannot use."""


def current() -> Settings:
    """The settings the environment gives now (:class:`spotwise.core.environment.Settings`).

    Raises:
        SettingsError: naming the variable and what it needs.
    """
    from pydantic import ValidationError

    from spotwise.core.environment import Settings

    try:
        return Settings()
    except ValidationError as exc:
        problems = "; ".join(
            f"SPOTWISE_{str(e['loc'][0]).upper()}: {e['msg']}" for e in exc.errors()
        )
        raise SettingsError(f"{problems}; fix or unset the variable") from None


@dataclass(frozen=True, slots=True)
class CloudEndpoint:
    """An endpoint of a cloud, declared beside the code that calls it (a cloud's ``notice.py``,
    a price collector), that a ``SPOTWISE_*`` variable overrides (a local server for tests);
    :func:`endpoint_url` reads it. A new cloud adds its endpoints there, none here."""

    variable: str
    """The variable that overrides it, e.g. ``SPOTWISE_AWS_IMDS_URL``."""
    default: str
    """The cloud's own endpoint."""
    https: bool = True
    """An API a credential travels to: https, or plain http to this machine only
    (:data:`LOOPBACK_HOSTS`). False for an instance metadata endpoint (plain http, link-local)."""

    def __post_init__(self) -> None:
        if not re.fullmatch(r"SPOTWISE_[A-Z0-9_]+", self.variable):
            raise ValueError(f"{self.variable!r}: an endpoint's variable is SPOTWISE_NAME")
        if (problem := _url_problem(self.default, https=self.https)) is not None:
            raise ValueError(f"{self.variable}'s default {self.default!r} {problem}")


def endpoint_url(endpoint: CloudEndpoint) -> str:
    """``endpoint``'s URL now: its variable's value when set, else its default; without a
    trailing slash.

    Raises:
        SettingsError: naming the variable and what it needs.
    """
    value = os.environ.get(endpoint.variable)
    if value is None:
        return endpoint.default.rstrip("/")
    if (problem := _url_problem(value, https=endpoint.https)) is not None:
        raise SettingsError(f"{endpoint.variable}: {problem}; fix or unset the variable")
    return value.rstrip("/")


def _url_problem(url: str, *, https: bool) -> str | None:
    """What ``url`` lacks as an endpoint (None: nothing)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:  # an IPv6 host's [ without its ]
        return "must be a URL"
    if parts.scheme not in ("https", "http") or not host:
        return "must be an https:// URL" if https else "must be an http:// URL"
    return _api_problem(parts, host) if https else None


def _api_problem(parts: SplitResult, host: str) -> str | None:
    """What an API endpoint a credential travels to lacks: no user, password, query or
    fragment, and https unless it is this machine."""
    if parts.username or parts.password or parts.query or parts.fragment:
        return "must be a URL without user, password, query or fragment"
    if parts.scheme == "http" and host not in LOOPBACK_HOSTS:
        return "must be https:// (plain http only to 127.0.0.1 or localhost)"
    return None


def store_path(override: Path | None = None) -> Path:
    """The store file: ``--store``, else ``$SPOTWISE_STORE``, else the user's data folder.

    Raises:
        SettingsError: for a PostgreSQL URL (it names the operational store, not this file).
    """
    if override is not None:
        if str(override).startswith(("postgresql:", "postgres:")):
            raise SettingsError(
                f"--store {override} looks like a database URL: --store names the DuckDB "
                "file of the market data; set SPOTWISE_OPERATIONAL_STORE=postgresql://... to "
                "keep the jobs, ledger and forecasts in PostgreSQL"
            )
        return override
    if (env := current().store) is not None:
        return env
    from platformdirs import user_data_dir

    return Path(user_data_dir("spotwise", appauthor=False)) / "market.duckdb"


def bundled_data_dir() -> Path:
    """The real data shipped with Spotwise (``$SPOTWISE_DATA`` overrides)."""
    if (env := current().data) is not None:
        return env
    return Path(__file__).resolve().parent.parent / "data"


def bundled_traces() -> Path:
    """The default availability traces: the bundled 9-zone aws-02-15-2023 1-node CBL set."""
    return bundled_data_dir() / "traces/cbl/availability/1-node/aws-02-15-2023"


def bundled_node_traces() -> Path:
    """The default N-node capacity traces: the bundled 3-pool aws-08-27-2023 16-node CBL set."""
    return bundled_data_dir() / "traces/cbl/availability/16-node/aws-08-27-2023"


def bundled_prices() -> Path:
    """The default price history: the bundled AWS describe-spot-price-history CSV."""
    return bundled_data_dir() / "prices/aws_spot_price_history_2019-12_2020-01.csv"


def bundled_advisor_snapshots() -> list[Path]:
    """The bundled AWS Spot Advisor snapshots (one JSON per date)."""
    return sorted((bundled_data_dir() / "advisor").glob("spot-advisor-data_*.json"))
