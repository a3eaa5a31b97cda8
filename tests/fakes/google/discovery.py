"""Checking requests and answers against a Google API discovery document (the format is at
https://developers.google.com/discovery/v1/reference/apis): which method a path names, whether
each query parameter is one the method or the API takes, with the type, format, enum and pattern
the document gives, and whether an answer has the shape of the method's response schema."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spotwise.executor.clouds.gcp.fake.rest_api import Invalid, parse_datetime

DOCUMENT = Path(__file__).with_name("cloudbilling.v1.json")
INT32 = (-(2**31), 2**31 - 1)


@dataclass(frozen=True, slots=True)
class Call:
    """A request the document allows: its method's id and its parameters by name."""

    method_id: str
    method: dict[str, Any]
    params: dict[str, str]


def load(path: Path = DOCUMENT) -> dict[str, Any]:
    return json.loads(path.read_text())


def _methods(resource: dict[str, Any]) -> list[dict[str, Any]]:
    found = list(resource.get("methods", {}).values())
    for child in resource.get("resources", {}).values():
        found += _methods(child)
    return found


def _template(path: str) -> re.Pattern[str]:
    """``v1/{+parent}/skus`` as a regex with one group per parameter (``+``: may hold '/')."""
    out, pos = "", 0
    for m in re.finditer(r"\{(\+?)([A-Za-z_.]+)\}", path):
        out += re.escape(path[pos : m.start()])
        out += f"(?P<{m.group(2).replace('.', '_')}>{'.+' if m.group(1) else '[^/]+'})"
        pos = m.end()
    return re.compile("^" + out + re.escape(path[pos:]) + "$")


def check_request(
    doc: dict[str, Any], http_method: str, path: str, query: tuple[tuple[str, str], ...]
) -> Call:
    """The method ``http_method path?query`` calls, its parameters checked.

    Raises:
        Invalid: no method has this path and HTTP method, or a parameter is unknown, repeated,
            missing or of the wrong type, format, enum value or pattern.
    """
    prefix = "/" + doc["servicePath"]
    if not path.startswith(prefix):
        raise Invalid(f"{path} is not under the service path {prefix!r}")
    relative = path[len(prefix) :]
    for method in _methods({"resources": doc["resources"]}):
        found = _template(method["path"]).match(relative)
        if found is None:
            continue
        if method["httpMethod"] != http_method:
            raise Invalid(f"{relative} takes {method['httpMethod']}, not {http_method}")
        params = {k: v for k, v in found.groupdict().items()}
        declared = method.get("parameters", {})
        global_params = doc.get("parameters", {})
        seen: set[str] = set()
        for key, value in query:
            # Google's system parameters may be written with a leading '$' (system-parameters
            # page); the document lists them without it.
            name = key[1:] if key.startswith("$") and key[1:] in global_params else key
            spec = declared.get(name) or global_params.get(name)
            if spec is None or spec.get("location") != "query":
                raise Invalid(f"unknown query parameter {key!r} for {method['id']}")
            if name in seen and not spec.get("repeated"):
                raise Invalid(f"query parameter {key!r} given twice")
            seen.add(name)
            _check_value(name, value, spec)
            params[name] = value
        for name, spec in declared.items():
            if spec.get("required") and name not in params:
                raise Invalid(f"{method['id']} needs {name!r}")
            if spec.get("location") == "path" and name in params:
                _check_value(name, params[name], spec)
        return Call(method_id=method["id"], method=method, params=params)
    raise Invalid(f"no method of {doc['id']} at {relative}")


def _check_value(name: str, value: str, spec: dict[str, Any]) -> None:
    kind, fmt = spec.get("type"), spec.get("format")
    if kind == "integer":
        if not re.fullmatch(r"-?\d+", value):
            raise Invalid(f"{name}={value!r} is not an integer")
        if fmt == "int32" and not INT32[0] <= int(value) <= INT32[1]:
            raise Invalid(f"{name}={value} is out of int32")
    elif kind == "boolean" and value not in ("true", "false"):
        raise Invalid(f"{name}={value!r} is not true or false")
    if fmt == "google-datetime":
        parse_datetime(name, value)
    if "enum" in spec:
        # alt=json;enum-encoding=int: the data format, then an option (system-parameters page)
        head = value.split(";", 1)[0] if name == "alt" else value
        if head not in spec["enum"]:
            raise Invalid(f"{name}={value!r} is not one of {spec['enum']}")
    if "pattern" in spec and not re.search(spec["pattern"], value):
        raise Invalid(f"{name}={value!r} does not match {spec['pattern']}")


def check_answer(doc: dict[str, Any], schema: str, value: Any, where: str = "") -> None:
    """Whether ``value`` has the shape of ``schema`` (no field the schema lacks, each of its
    type and format).

    Raises:
        Invalid: naming the first field that does not fit.
    """
    _check_schema(doc, {"$ref": schema}, value, where or schema)


def _check_schema(doc: dict[str, Any], spec: dict[str, Any], value: Any, where: str) -> None:
    if "$ref" in spec:
        spec = doc["schemas"][spec["$ref"]]
    kind = spec.get("type")
    if kind == "object":
        if not isinstance(value, dict):
            raise Invalid(f"{where} is not an object")
        properties = spec.get("properties", {})
        for key, item in value.items():
            if key not in properties:
                raise Invalid(f"{where}.{key} is not in the schema")
            _check_schema(doc, properties[key], item, f"{where}.{key}")
    elif kind == "array":
        if not isinstance(value, list):
            raise Invalid(f"{where} is not an array")
        for i, item in enumerate(value):
            _check_schema(doc, spec["items"], item, f"{where}[{i}]")
    elif kind == "string":
        if not isinstance(value, str):
            raise Invalid(f"{where} is not a string")
        if spec.get("format") == "int64" and not re.fullmatch(r"-?\d+", value):
            raise Invalid(f"{where} is not an int64 string")
        if spec.get("format") == "google-datetime":
            parse_datetime(where, value)
        if "enum" in spec and value not in spec["enum"]:
            raise Invalid(f"{where}={value!r} is not one of {spec['enum']}")
    elif kind == "integer":
        if not isinstance(value, int) or isinstance(value, bool):
            raise Invalid(f"{where} is not an integer")
    elif kind == "number":
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise Invalid(f"{where} is not a number")
    elif kind == "boolean" and not isinstance(value, bool):
        raise Invalid(f"{where} is not a boolean")
