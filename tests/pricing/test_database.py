"""The PostgreSQL store's SQL: DuckDB's ``?`` placeholders as psycopg's, URLs without passwords."""

from __future__ import annotations

from spotwise.pricing.database import _placeholders, redacted


def test_placeholders_and_redaction() -> None:
    assert _placeholders("SELECT * FROM t WHERE a = ? AND b LIKE '50%?' AND c = ?") == (
        "SELECT * FROM t WHERE a = %s AND b LIKE '50%%?' AND c = %s"
    )
    assert _placeholders("SELECT 100 % 7, 'it''s ?'") == "SELECT 100 %% 7, 'it''s ?'"
    assert redacted("postgresql://u:pw@db:5432/x") == "postgresql://u:***@db:5432/x"
    assert redacted("postgresql://db/x") == "postgresql://db/x"
