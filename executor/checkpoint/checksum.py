"""The checksum of a checkpoint's files, and which one a manifest names.

sha256: hashlib releases the GIL on large buffers (hashing runs beside the writes) and, on a CPU
with SHA extensions, hashes faster than a disk writes. It also decides which tensors an
incremental save may take from its base, which a 32-bit CRC (``google-crc32c`` is installed, and
faster) is too short for: one collision in four billion changed tensors would keep a stale one.
"""

from __future__ import annotations

import hashlib
import mmap
from collections.abc import Iterable
from typing import Any

from spotwise.executor.errors import CheckpointError

ALGORITHM = "sha256"
"""The checksum new manifests name."""
KNOWN = frozenset({"sha256"})
"""The checksums a manifest may name."""

Buffer = bytes | bytearray | memoryview | mmap.mmap


def digest(chunks: Iterable[Buffer], algorithm: str = ALGORITHM) -> str:
    """The hex digest of the chunks, in order."""
    hasher = hashlib.new(algorithm)
    for chunk in chunks:
        hasher.update(chunk)
    return hasher.hexdigest()


def checksum_of(manifest: dict[str, Any], where: str) -> tuple[str, str]:
    """The algorithm a manifest's file digests use, and the key they sit under: format 2 has
    sha256 under ``"sha256"``; format 3 names it in ``"checksum"``, digests under ``"digest"``.

    Raises:
        CheckpointError: a checksum this version does not know.
    """
    if manifest.get("format") == 2:
        return "sha256", "sha256"
    algorithm = manifest.get("checksum")
    if algorithm not in KNOWN:
        raise CheckpointError(f"{where}: unknown checksum {str(algorithm)[:40]!r} in the manifest")
    return str(algorithm), "digest"
