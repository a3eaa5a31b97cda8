"""The AWS launcher's shipped code: uploads that skip content already in the bucket (moto)."""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest

from spotwise.executor.clouds.aws.shipping import ship, upload
from spotwise.executor.clouds.code_bundle import pack_workdir
from spotwise.executor.errors import ExecutorError
from tests.executor.clouds.test_code_bundle import make_tree


def test_unchanged_code_is_not_uploaded_twice(moto_server: str, tmp_path: Path) -> None:
    s3 = boto3.client("s3", endpoint_url=moto_server, region_name="us-east-1")
    s3.create_bucket(Bucket="code")
    root = make_tree(tmp_path / "w", {"train.py": "print(1)\n"})
    wheel = tmp_path / "spotwise-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"PK not really")
    said: list[str] = []
    first = ship(s3, "code", root, wheel=wheel, say=said.append)
    second = ship(s3, "code", root, wheel=wheel, say=said.append)
    assert first == second
    done = [line.rsplit("(", 1)[1] for line in said if line.endswith(")")]
    assert done == ["uploaded)"] * 2 + ["already there)"] * 2
    # what it is doing is said before it does it: packing, then each upload
    assert said[0] == f"workdir: packing {root}"
    assert said[1].startswith("workdir: putting 1 file")
    body = s3.get_object(Bucket="code", Key=first.workdir_key)["Body"].read()
    assert body[:2] == b"\x1f\x8b"  # gzip
    bundle = pack_workdir(root, make_tree(tmp_path / "again", {}))
    assert upload(s3, "code", bundle) is False
    with pytest.raises(ExecutorError, match="s3://missing-bucket/"):
        upload(s3, "missing-bucket", bundle)
