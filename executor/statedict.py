"""Nested training state split into a JSON skeleton and a flat dict of tensors (no pickle).

Leaves may be None, bool, int, float, str, torch tensors and numpy arrays; containers may be
dicts (any int or str keys), lists and tuples. Tensors become ``{"__tensor__": key}``, arrays
``{"__ndarray__": key}``; dicts with non-string keys and tuples are tagged so they come back as
they were.
"""

from __future__ import annotations

import mmap
from typing import Any

import numpy as np
import torch

from executor.errors import CheckpointError


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
        if "__tensor__" in skeleton:
            return tensors[skeleton["__tensor__"]]
        if "__ndarray__" in skeleton:
            return tensors[skeleton["__ndarray__"]].numpy()
        if "__tuple__" in skeleton:
            return tuple(unflatten(v, tensors) for v in skeleton["__tuple__"])
        if "__dict__" in skeleton:
            return {k: unflatten(v, tensors) for k, v in skeleton["__dict__"]}
        return {k: unflatten(v, tensors) for k, v in skeleton.items()}
    return skeleton


def tensor_bytes(tensor: torch.Tensor) -> memoryview:
    """The raw bytes of a contiguous CPU tensor, whatever its dtype."""
    if tensor.numel() == 0:
        return memoryview(b"")
    return memoryview(tensor.reshape(-1).view(torch.uint8).numpy().data)


def tensor_from_bytes(
    data: bytes | bytearray | memoryview, dtype: str, shape: list[int]
) -> torch.Tensor:
    """A tensor from raw bytes written by :func:`tensor_bytes`."""
    torch_dtype = getattr(torch, dtype.removeprefix("torch."))
    if len(data) == 0:
        return torch.empty(shape, dtype=torch_dtype)
    # A writable buffer is viewed in place; anything else is copied once.
    buffer = (
        data
        if isinstance(data, bytearray | mmap.mmap)
        or (isinstance(data, memoryview) and not data.readonly)
        else bytearray(data)
    )
    raw = torch.frombuffer(buffer, dtype=torch.uint8)
    return raw.view(torch_dtype).reshape(shape)
