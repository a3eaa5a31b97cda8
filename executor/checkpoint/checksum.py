"""The checksum of a checkpoint's files, and which one a manifest names.

XXH3-128 (``xxhash``): it catches what a checksum is for here (a torn, truncated or bit-flipped
file; a tensor that changed since the incremental save's base) at 10-13 GB/s a core, where
sha256 (with the CPU's SHA extensions) hashed 0.8-1.7 GB/s: on a 1 GB state beside other work,
sha256 was a second of CPU in every durable save, xxh3 a tenth. Its 128 bits keep the incremental
save's "unchanged" test sound, which a 32-bit CRC was too short for (one collision in four billion
changed tensors would keep a stale one); it is no defence against someone forging a tensor, nor
was the file checksum meant to be (the manifest is sealed with sha256 either way). Manifests
written with sha256 (format 2, and format 3 before xxh3) still verify.
"""

from __future__ import annotations

import hashlib
import mmap
from collections.abc import Iterable
from typing import Any, Protocol

import xxhash

from spotwise.executor.errors import CheckpointError

ALGORITHM = "xxh3-128"
"""The checksum new manifests name."""
KNOWN = frozenset({"xxh3-128", "sha256"})
"""The checksums a manifest may name."""

Buffer = bytes | bytearray | memoryview | mmap.mmap


class _Hasher(Protocol):
    def update(self, data: Buffer, /) -> None: ...

    def hexdigest(self) -> str: ...


def digest(chunks: Iterable[Buffer], algorithm: str = ALGORITHM) -> str:
    """The hex digest of the chunks, in order."""
    hasher: _Hasher = xxhash.xxh3_128() if algorithm == "xxh3-128" else hashlib.new(algorithm)
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
