"""The wire form of Huawei Cloud's APIs, read from the installed SDK's generated code at start-up:
each operation's method and path (the client's ``_NAME_http_info``), its query names, and each
model's JSON names and types (``attribute_map`` and ``openapi_types``), its required fields (those
its ``__init__`` sets unconditionally). :func:`check` holds a JSON value to a model and names the
first field that breaks it."""

from __future__ import annotations

import importlib
import inspect
import re
from dataclasses import dataclass
from types import ModuleType
from typing import Any

_REQUIRED = re.compile(r"^ {8}self\.(\w+) = \1$", re.MULTILINE)
"""An ``__init__`` line that sets a field whatever was given: a required field (the optional ones
sit under ``if NAME is not None:``)."""
_SCALARS: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "int": (int,),
    "bool": (bool,),
    "float": (int, float),
    "decimal.Decimal": (int, float, str),
    "date": (str,),
    "datetime": (str,),
}


class WireError(ValueError):
    """A request that the SDK's models do not allow: ``field`` is its JSON path."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field


@dataclass(frozen=True, slots=True)
class Operation:
    """One API operation as the SDK sends it."""

    name: str
    method: str
    path: str
    """With ``{placeholders}``, e.g. ``/v1.1/{project_id}/cloudservers``."""
    request: str
    response: str
    query: frozenset[str]
    body: str | None
    """The model of the request's JSON body (its ``body`` field's type); None without one."""

    def match(self, method: str, path: str) -> dict[str, str] | None:
        """The path's placeholders' values if ``method path`` is this operation, else None."""
        if method != self.method:
            return None
        names = re.findall(r"\{(\w+)\}", self.path)
        pattern = re.sub(r"\\\{\w+\\\}", "([^/]+)", re.escape(self.path))
        found = re.fullmatch(pattern, path)
        return dict(zip(names, found.groups(), strict=True)) if found else None


@dataclass(frozen=True, slots=True)
class Sdk:
    """One service's SDK package (``huaweicloudsdkecs.v2``): its client and models."""

    package: ModuleType
    client: Any

    @classmethod
    def load(cls, package: str, client: str) -> Sdk:
        """The installed SDK ``package`` (a fixed name of this module's callers, never input).

        Raises:
            RuntimeError: the SDK is not installed, naming the extra that brings it.
        """
        try:
            module = importlib.import_module(package)
        except ImportError as missing:
            raise RuntimeError(
                f"{package} is not installed: pip install 'spotwise[huawei]'"
            ) from missing
        return cls(module, getattr(module, client))

    def model(self, name: str) -> Any:
        """The generated model class ``name`` (a name the SDK's own types give)."""
        return getattr(self.package, name)

    def operation(self, name: str) -> Operation:
        """The operation the client's method ``name`` (``create_servers``) sends."""
        request_name = "".join(word.title() for word in name.split("_")) + "Request"
        request_class = self.model(request_name)
        request = request_class()
        for attribute in request_class.attribute_map:
            setattr(request, attribute, "x")
        info = getattr(self.client, f"_{name}_http_info")(request)
        body = request_class.openapi_types.get("body")
        return Operation(
            name=name,
            method=info["method"],
            path=info["resource_path"],
            request=info["request_type"],
            response=info["response_type"],
            query=frozenset(key for key, _ in info["query_params"]),
            body=body,
        )

    def required(self, model: str) -> frozenset[str]:
        """The JSON names of ``model``'s required fields."""
        source = inspect.getsource(self.model(model).__init__)
        attributes = self.model(model).attribute_map
        return frozenset(attributes[a] for a in _REQUIRED.findall(source) if a in attributes)

    def check(self, kind: str, value: Any, where: str = "body", *, complete: bool = True) -> None:
        """Hold ``value`` (parsed JSON) to the SDK type ``kind`` (``'PrePaidServer'``,
        ``'list[str]'``, ``'dict(str, str)'``, ``'int'``); ``complete=False`` (an answer) lets
        required fields be missing.

        Raises:
            WireError: naming the first field (its JSON path) of a wrong type, unknown to the
                model, or required and missing.
        """
        if value is None:
            return
        if kind.startswith("list["):
            if not isinstance(value, list):
                raise WireError(where, f"a {kind} is a JSON array, not {_json_kind(value)}")
            for i, item in enumerate(value):
                self.check(kind[5:-1], item, f"{where}[{i}]", complete=complete)
            return
        if kind.startswith("dict("):
            if not isinstance(value, dict):
                raise WireError(where, f"a {kind} is a JSON object, not {_json_kind(value)}")
            inner = kind[5:-1].split(",", 1)[1].strip()
            for key, item in value.items():
                self.check(inner, item, f"{where}.{key}", complete=complete)
            return
        if kind == "object":
            return
        if kind in _SCALARS:
            allowed = _SCALARS[kind]
            if (isinstance(value, bool) and bool not in allowed) or not isinstance(value, allowed):
                raise WireError(where, f"a {kind}, not {_json_kind(value)} {str(value)[:40]!r}")
            return
        self._check_model(kind, value, where, complete)

    def _check_model(self, name: str, value: Any, where: str, complete: bool) -> None:
        if not isinstance(value, dict):
            raise WireError(where, f"a {name} is a JSON object, not {_json_kind(value)}")
        model = self.model(name)
        by_wire = {wire: attribute for attribute, wire in model.attribute_map.items()}
        for key in value:
            if key not in by_wire:
                known = ", ".join(sorted(by_wire))
                raise WireError(f"{where}.{key}", f"{name} has no such field (it has {known})")
        for key in sorted(self.required(name) - set(value)) if complete else ():
            raise WireError(f"{where}.{key}", f"required by {name}, missing")
        for key, item in value.items():
            kind = model.openapi_types[by_wire[key]]
            self.check(kind, item, f"{where}.{key}", complete=complete)


def _json_kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), "a number" if isinstance(value, int | float) else "null"
    )
