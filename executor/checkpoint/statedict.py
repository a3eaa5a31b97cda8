"""Nested training state split into a JSON skeleton and a flat dict of tensors (no pickle).

Leaves may be None, bool, int, float, str, torch tensors and numpy arrays; containers may be
dicts (any int or str keys), lists and tuples. Tensors become ``{"__tensor__": key}``, arrays
``{"__ndarray__": key}``; dicts with non-string keys and tuples are tagged so they come back as
they were.
"""

from __future__ import annotations

import math
import mmap
from typing import Any

import numpy as np
import torch

from spotwise.executor.errors import CheckpointError


def flatten(state: Any) -> tuple[Any, dict[str, torch.Tensor]]:
    """Split ``state`` into a JSON-able skeleton and tensors keyed by their path."""
    tensors: dict[str, torch.Tensor] = {}

    def walk(node: Any, path: str) -> Any:
        if isinstance(node, torch.Tensor):
            tensors[path] = node
            return {"__tensor__": path}
        if isinstance(node, np.ndarray):
            tensors[path] = torch.from_numpy(np.ascontiguousarray(node))
            return {"__ndarray__": path}
        if node is None or isinstance(node, bool | int | float | str):
            return node
        if isinstance(node, np.generic):
            return node.item()
        if isinstance(node, dict):
            if all(isinstance(k, str) for k in node):
                return {k: walk(v, f"{path}/{k}") for k, v in node.items()}
            return {"__dict__": [[k, walk(v, f"{path}/{k}")] for k, v in node.items()]}
        if isinstance(node, tuple):
            return {"__tuple__": [walk(v, f"{path}/{i}") for i, v in enumerate(node)]}
        if isinstance(node, list):
            return [walk(v, f"{path}/{i}") for i, v in enumerate(node)]
        raise CheckpointError(
            f"cannot checkpoint {path or 'the state'}: {type(node).__name__} is not a tensor, "
            "array, number, string or container; convert it to one of those"
        )

    return walk(state, ""), tensors


def unflatten(skeleton: Any, tensors: dict[str, torch.Tensor]) -> Any:
    """The nested state back from its skeleton and tensors."""
    if isinstance(skeleton, list):
        return [unflatten(v, tensors) for v in skeleton]
    if isinstance(skeleton, dict):
        return _unflatten_dict(skeleton, tensors)
    return skeleton


def _unflatten_dict(skeleton: dict[str, Any], tensors: dict[str, torch.Tensor]) -> Any:
    """A skeleton's dict back: a tensor, an array, a tuple, a dict with any keys, or a dict."""
    if "__tensor__" in skeleton:
        return tensors[skeleton["__tensor__"]]
    if "__ndarray__" in skeleton:
        return tensors[skeleton["__ndarray__"]].numpy()
    if "__tuple__" in skeleton:
        return tuple(unflatten(v, tensors) for v in skeleton["__tuple__"])
    if "__dict__" in skeleton:
        return {k: unflatten(v, tensors) for k, v in skeleton["__dict__"]}
    return {k: unflatten(v, tensors) for k, v in skeleton.items()}


def tensor_bytes(tensor: torch.Tensor) -> memoryview:
    """The raw bytes of a contiguous CPU tensor, whatever its dtype."""
    if tensor.numel() == 0:
        return memoryview(b"")
    return memoryview(tensor.reshape(-1).view(torch.uint8).numpy().data)


DTYPES: dict[str, torch.dtype] = {
    f"torch.{name}": getattr(torch, name)
    for name in (
        "float64",
        "float32",
        "float16",
        "bfloat16",
        "float8_e4m3fn",
        "float8_e5m2",
        "complex32",
        "complex64",
        "complex128",
        "int64",
        "int32",
        "int16",
        "int8",
        "uint64",
        "uint32",
        "uint16",
        "uint8",
        "bool",
    )
    if isinstance(getattr(torch, name, None), torch.dtype)
}
"""The dtypes a checkpoint may name (``"torch.float32"``, ...): anything else is refused."""


def tensor_from_bytes(
    data: bytes | bytearray | memoryview, dtype: str, shape: list[int]
) -> torch.Tensor:
    """A tensor from raw bytes written by :func:`tensor_bytes`.

    Raises:
        CheckpointError: a dtype outside :data:`DTYPES`, a bad shape, or a byte count that
            does not match them.
    """
    torch_dtype = DTYPES.get(dtype)
    if torch_dtype is None:
        raise CheckpointError(f"unknown tensor dtype {dtype[:40]!r} in the checkpoint")
    if not _is_shape(shape):
        raise CheckpointError(f"bad tensor shape {str(shape)[:80]} in the checkpoint")
    numel = math.prod(shape)
    if numel * torch_dtype.itemsize != len(data):
        raise CheckpointError(
            f"tensor of {dtype} {shape} needs {numel * torch_dtype.itemsize} bytes, "
            f"the checkpoint holds {len(data)}"
        )
    if len(data) == 0:
        return torch.empty(shape, dtype=torch_dtype)
    raw = torch.frombuffer(_writable(data), dtype=torch.uint8)
    return raw.view(torch_dtype).reshape(shape)


def _is_shape(shape: object) -> bool:
    """A list of whole numbers (not bools), none negative."""
    return isinstance(shape, list) and all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape
    )


def _writable(data: bytes | bytearray | memoryview) -> bytearray | mmap.mmap | memoryview:
    """``data`` itself when it is a writable buffer (viewed in place), else a copy of it."""
    if isinstance(data, bytearray | mmap.mmap) or (
        isinstance(data, memoryview) and not data.readonly
    ):
        return data
    return bytearray(data)
