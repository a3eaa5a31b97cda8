"""What is wrong with the key file GOOGLE_APPLICATION_CREDENTIALS names, said as what it is,
by ``collect gcp`` and the GCP launcher alike (real files, Google's own library)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from spotwise.pricing.clouds.gcp.credentials import key_file_problem

FIX = "point it at a service account key file, or unset it, then run again"


@pytest.fixture
def key_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No gcloud configuration, no metadata server; the key file a test names."""
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))
    monkeypatch.setenv("NO_GCE_CHECK", "True")
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path / "key.json"


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (None, "which does not exist"),
        ("{not json", "which is not JSON (a key file is)"),
        ("[1, 2]", "a JSON file but no Google credentials file (type None)"),
        (
            '{"type": "certificate"}',
            "a JSON file but no Google credentials file (type 'certificate')",
        ),
    ],
)
def test_a_broken_key_file_is_named_with_what_is_wrong(
    key_env: Path, monkeypatch: pytest.MonkeyPatch, content: str | None, said: str
) -> None:
    if content is not None:
        key_env.write_text(content)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key_env))
    assert key_file_problem() == (
        f"GOOGLE_APPLICATION_CREDENTIALS names {str(key_env)!r}, {said}: {FIX}"
    )


def test_a_key_file_google_refuses_says_what_google_said(
    key_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import google.auth

    key_env.write_text('{"type": "service_account"}')
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key_env))
    with pytest.raises(Exception) as refused:
        google.auth.default()
    line = key_file_problem(refused.value)
    assert line is not None and "which Google's library cannot load" in line
    google_said = line.split("missing fields ", 1)[1]  # google-auth lists them in set order
    assert "client_email" in google_said and "token_uri" in google_said


def test_unset_or_empty_is_no_key_file_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    assert key_file_problem() is None
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", "")
    assert key_file_problem() is None


@pytest.mark.slow  # CLI subprocesses
@pytest.mark.parametrize(
    ("args", "who"),
    [
        (["collect", "gcp", "--gpu", "A100"], "collect gcp"),
        (
            [
                *("run", "--launcher", "gcp", "--project", "proj-123456", "--image", "img"),
                *("--bucket", "b-1", "--service-account", "acct-1234", "--", "true"),
            ],
            "--launcher gcp",
        ),
    ],
)
@pytest.mark.parametrize(("content", "said"), [(None, "which does not exist"), ("x", "not JSON")])
def test_every_gcp_command_says_what_is_wrong_with_the_key_file_not_that_none_is_set(
    tmp_path: Path, store_file: Path, args: list[str], who: str, content: str | None, said: str
) -> None:
    key = tmp_path / "key.json"
    if content is not None:
        key.write_text(content)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "CLOUDSDK_"))}
    env.update(
        CLOUDSDK_CONFIG=str(tmp_path / "no-gcloud"),
        NO_GCE_CHECK="true",
        HOME=str(tmp_path),
        SPOTWISE_STORE=str(store_file),
        GOOGLE_APPLICATION_CREDENTIALS=str(key),
    )
    result = subprocess.run(
        [sys.executable, "-m", "spotwise", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: {who}: GOOGLE_APPLICATION_CREDENTIALS names {str(key)!r}")
    assert said in lines[0] and "no Google credentials found" not in lines[0]
