"""What is wrong with the key file ``GOOGLE_APPLICATION_CREDENTIALS`` names, in words: a
missing file, one that cannot be read, or one that is not a Google credentials file. Google's
library answers all of them as "no credentials found"; ``collect gcp`` and the GCP launcher
say which it is (:func:`key_file_problem`)."""

from __future__ import annotations

import json
import os

from spotwise.core.echo import echo

VARIABLE = "GOOGLE_APPLICATION_CREDENTIALS"
KEY_TYPES = (
    "service_account",
    "authorized_user",
    "external_account",
    "impersonated_service_account",
)
"""The ``type`` of the credentials files google-auth reads."""


def key_file_problem(refused: BaseException | None = None) -> str | None:
    """One line saying what is wrong with the file :data:`VARIABLE` names and what to do (a
    credentials file: what google-auth said when it ``refused`` it), or None when the variable
    is unset, or names a credentials file nothing refused."""
    path = os.environ.get(VARIABLE, "")
    if not path:
        return None
    named = f"{VARIABLE} names {echo(path, 120)}"
    fix = "point it at a service account key file, or unset it, then run again"
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read(1_000_000)
    except FileNotFoundError:
        return f"{named}, which does not exist: {fix}"
    except (OSError, UnicodeDecodeError) as exc:
        return f"{named}, which cannot be read ({type(exc).__name__}): {fix}"
    try:
        doc = json.loads(text)
    except ValueError:
        return f"{named}, which is not JSON (a key file is): {fix}"
    kind = doc.get("type") if isinstance(doc, dict) else None
    if kind not in KEY_TYPES:
        return f"{named}, a JSON file but no Google credentials file (type {echo(kind)}): {fix}"
    if refused is not None:
        said = " ".join(str(refused.args[-1] if refused.args else refused).split())
        return (
            f"{named}, which Google's library cannot load ({echo(said, 160, quote=False)}): {fix}"
        )
    return None
