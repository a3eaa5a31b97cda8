"""A throwaway PostgreSQL server for the tests (pgserver's pip-installed binaries, listening on
a Unix socket in a temporary folder only), and a fresh database per test."""

from __future__ import annotations

import shutil
import uuid
import warnings
from pathlib import Path
from typing import Any


class PostgresServer:
    """One server per test process, its data in ``folder`` until :meth:`stop`;
    :meth:`fresh_database` gives each test its own database."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        with warnings.catch_warnings():  # platformdirs: no XDG_RUNTIME_DIR on CI machines
            warnings.simplefilter("ignore")
            import pgserver

            self._server: Any = pgserver.get_server(self.folder / "data", cleanup_mode="stop")
        self.url: str = self._server.get_uri()

    def fresh_database(self) -> str:
        """A new empty database's URL."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url, autocommit=True) as con:
            con.execute(f"CREATE DATABASE {name}")
        return self.url.replace("/postgres?", f"/{name}?", 1)

    def stop(self) -> None:
        """Stop the server and remove its folder (its data: tens of MB)."""
        self._server.cleanup()
        shutil.rmtree(self.folder, ignore_errors=True)
