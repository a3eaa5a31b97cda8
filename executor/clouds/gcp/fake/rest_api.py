"""Checking REST requests against Google API discovery documents that share one endpoint
(Compute Engine, Secret Manager, IAM): which method a path and HTTP method name (two methods
may share a path with different HTTP methods), whether each path parameter matches its pattern,
whether each query parameter is one the method or the API declares, with its type, format and
enum, and whether a request body or an answer has the shape of its schema: no field the schema
lacks, each of its type, format, enum and pattern, maps (``additionalProperties``) included,
and every field the schema annotates as required for the method present. The document format
is at https://developers.google.com/discovery/v1/reference/apis; the tests use the checks
tests/fakes/google/discovery.py makes for one API (Cloud Billing), widened to these."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
INT32 = (-(2**31), 2**31 - 1)
UINT64 = (0, 2**64 - 1)


class Invalid(ValueError):
    """A request or answer the document does not allow."""


def parse_datetime(name: str, value: str) -> datetime:
    """An RFC 3339 time with its offset (``google-datetime``)."""
    if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?(Z|[+-]\d\d:\d\d)", value):
        raise Invalid(f"{name}={value!r} is not an RFC 3339 time with an offset")
    trimmed = re.sub(r"(\.\d{6})\d+", r"\1", value).replace("Z", "+00:00")
    return datetime.fromisoformat(trimmed)


@dataclass(frozen=True, slots=True)
class Api:
    """One discovery document and the URL path its methods live under."""

    doc: dict[str, Any]

    @classmethod
    def load(cls, name: str) -> Api:
        return cls(json.loads((HERE / name).read_text()))

    @property
    def prefix(self) -> str:
        return "/" + self.doc["servicePath"]


@dataclass(frozen=True, slots=True)
class Call:
    """A request the document allows: its API, method id, parameters and body."""

    api: Api
    method_id: str
    method: dict[str, Any]
    params: dict[str, str]
    body: Any


def _methods(resource: dict[str, Any]) -> list[dict[str, Any]]:
    found = list(resource.get("methods", {}).values())
    for child in resource.get("resources", {}).values():
        found += _methods(child)
    return found


def _template(path: str) -> re.Pattern[str]:
    """``v1/{+name}:access`` as a regex with one group per parameter (``+``: may hold '/')."""
    out, pos = "", 0
    for m in re.finditer(r"\{(\+?)([A-Za-z_.]+)\}", path):
        out += re.escape(path[pos : m.start()])
        out += f"(?P<{m.group(2).replace('.', '_')}>{'.+' if m.group(1) else '[^/:]+'})"
        pos = m.end()
    return re.compile("^" + out + re.escape(path[pos:]) + "$")


def find_call(
    apis: list[Api],
    http_method: str,
    path: str,
    query: tuple[tuple[str, str], ...],
    body: bytes,
) -> Call:
    """The method of one of ``apis`` that ``http_method path?query`` calls, checked.

    Raises:
        Invalid: no method has this path and HTTP method, or a parameter or the body breaks
            the document.
    """
    near = []
    for api in apis:
        if not path.startswith(api.prefix):
            continue
        relative = path[len(api.prefix) :]
        for method in _methods({"resources": api.doc["resources"]}):
            found = _template(method["path"]).match(relative)
            if found is None or not _path_params_fit(method, found.groupdict()):
                continue
            if method["httpMethod"] != http_method:
                near.append(f"{method['id']} takes {method['httpMethod']}")
                continue
            return _checked(api, method, found.groupdict(), query, body)
    if near:
        raise Invalid(f"{http_method} {path}: {'; '.join(near)}")
    raise Invalid(f"no method of {', '.join(a.doc['id'] for a in apis)} at {path}")


def _path_params_fit(method: dict[str, Any], values: dict[str, str]) -> bool:
    for name, value in values.items():
        pattern = method.get("parameters", {}).get(name, {}).get("pattern")
        if pattern and not re.fullmatch(pattern.strip("^$"), value):
            return False
    return True


def _checked(
    api: Api,
    method: dict[str, Any],
    params: dict[str, str],
    query: tuple[tuple[str, str], ...],
    raw: bytes,
) -> Call:
    declared = method.get("parameters", {})
    global_params = api.doc.get("parameters", {})
    seen: set[str] = set()
    for key, value in query:
        # Google's system parameters may be written with a leading '$' (system-parameters page)
        name = key[1:] if key.startswith("$") and key[1:] in global_params else key
        spec = declared.get(name) or global_params.get(name)
        if spec is None or spec.get("location") != "query":
            raise Invalid(f"unknown query parameter {key!r} for {method['id']}")
        if name in seen and not spec.get("repeated"):
            raise Invalid(f"query parameter {key!r} given twice")
        seen.add(name)
        _check_parameter(name, value, spec)
        params[name] = value
    for name, spec in declared.items():
        if spec.get("required") and name not in params:
            raise Invalid(f"{method['id']} needs {name!r}")
    body: Any = None
    request = method.get("request")
    if request is None:
        if raw.strip():
            raise Invalid(f"{method['id']} takes no request body")
    else:
        try:
            body = json.loads(raw or b"{}")
        except ValueError as exc:
            raise Invalid(f"{method['id']}: the body is not JSON ({exc})") from None
        check_value(api, request["$ref"], body, method_id=method["id"])
    return Call(api=api, method_id=method["id"], method=method, params=params, body=body)


def _check_parameter(name: str, value: str, spec: dict[str, Any]) -> None:
    kind, fmt = spec.get("type"), spec.get("format")
    if kind == "integer" or fmt in ("int64", "uint64", "int32", "uint32"):
        if not re.fullmatch(r"-?\d+", value):
            raise Invalid(f"{name}={value!r} is not an integer")
        if fmt in ("uint32", "int32") and not INT32[0] <= int(value) <= 2**32:
            raise Invalid(f"{name}={value} is out of range")
    elif kind == "boolean" and value not in ("true", "false"):
        raise Invalid(f"{name}={value!r} is not true or false")
    if "enum" in spec:
        # alt=json;enum-encoding=int: the data format, then an option (system-parameters page)
        head = value.split(";", 1)[0] if name == "alt" else value
        if head not in spec["enum"]:
            raise Invalid(f"{name}={value!r} is not one of {spec['enum']}")
    if "pattern" in spec and not re.fullmatch(spec["pattern"].strip("^$"), value):
        raise Invalid(f"{name}={value!r} does not match {spec['pattern']}")


def check_value(api: Api, schema: str, value: Any, *, method_id: str = "") -> None:
    """Whether ``value`` has the shape of ``schema`` (for a request body, ``method_id`` says
    which fields its annotations require).

    Raises:
        Invalid: naming the first field that does not fit.
    """
    _check(api.doc, {"$ref": schema}, value, schema, method_id)


def _check(doc: dict[str, Any], spec: dict[str, Any], value: Any, where: str, mid: str) -> None:
    if "$ref" in spec:
        spec = doc["schemas"][spec["$ref"]]
    kind = spec.get("type")
    if kind == "object":
        if not isinstance(value, dict):
            raise Invalid(f"{where} is not an object")
        properties = spec.get("properties", {})
        extra = spec.get("additionalProperties")
        for key, item in value.items():
            if key in properties:
                _check(doc, properties[key], item, f"{where}.{key}", mid)
            elif extra is not None:
                _check(doc, extra, item, f"{where}[{key!r}]", mid)
            else:
                raise Invalid(f"{where}.{key} is not in the schema")
        for key, item in properties.items():
            if mid and mid in item.get("annotations", {}).get("required", []) and key not in value:
                raise Invalid(f"{where}.{key} is required by {mid}")
    elif kind == "array":
        if not isinstance(value, list):
            raise Invalid(f"{where} is not an array")
        for i, item in enumerate(value):
            _check(doc, spec["items"], item, f"{where}[{i}]", mid)
    elif kind == "string":
        _check_string(spec, value, where)
    elif kind == "integer":
        if not isinstance(value, int) or isinstance(value, bool):
            raise Invalid(f"{where} is not an integer")
        bounds = {"int32": INT32, "uint32": (0, 2**32 - 1)}.get(spec.get("format", ""))
        if bounds is not None and not bounds[0] <= value <= bounds[1]:
            raise Invalid(f"{where}={value} is out of {spec.get('format')}")
    elif kind == "number":
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise Invalid(f"{where} is not a number")
    elif kind == "boolean" and not isinstance(value, bool):
        raise Invalid(f"{where} is not a boolean")
    elif kind == "any":
        return


def _check_string(spec: dict[str, Any], value: Any, where: str) -> None:
    if not isinstance(value, str):
        raise Invalid(f"{where} is not a string")
    fmt = spec.get("format")
    if fmt in ("int64", "uint64") and not re.fullmatch(r"-?\d+", value):
        raise Invalid(f"{where} is not an {fmt} string")
    if fmt == "uint64" and not UINT64[0] <= int(value) <= UINT64[1]:
        raise Invalid(f"{where} is out of uint64")
    if fmt == "google-datetime":
        parse_datetime(where, value)
    if fmt == "byte" and not re.fullmatch(r"[A-Za-z0-9+/_-]*={0,2}", value):
        raise Invalid(f"{where} is not base64")
    if "enum" in spec and value not in spec["enum"]:
        raise Invalid(f"{where}={value!r} is not one of {spec['enum']}")
    if "pattern" in spec and not re.fullmatch(spec["pattern"].strip("^$"), value):
        raise Invalid(f"{where}={value!r} does not match {spec['pattern']}")
