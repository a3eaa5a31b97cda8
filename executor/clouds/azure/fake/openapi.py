"""Azure request bodies checked against Azure's published REST API specification: the OpenAPI
(Swagger 2.0) documents of github.com/Azure/azure-rest-api-specs, vendored in this folder's
``spec/`` (what was kept, and from which commit: this folder's ``SOURCE.md``).

:func:`check_definition` refuses, naming the first, a field the definition does not have, a
read-only field in a request, a missing required field, a value of the wrong type, and a value
outside a closed enum. An enum Azure marks ``x-ms-enum.modelAsString: true`` is open, as the
service takes it: its values are the known ones, not the only ones (a VM size such as
``Standard_NC24ads_A100_v4`` is a free string there). ``$ref`` is followed across the
documents as the specification writes it; a definition that was not vendored is refused by
name, so a field Spotwise starts sending is vendored before it is trusted.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from spotwise.executor.clouds.azure.fake.models import Invalid

SPEC = Path(__file__).parent / "spec"
VIRTUAL_MACHINE = "Microsoft.Compute/ComputeRP/stable/2025-04-01/virtualMachine.json"
"""Compute's document of the ``VirtualMachine`` definition (Virtual Machines - Create Or
Update's body)."""
_KINDS: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "boolean": bool,
    "integer": int,
    "number": (int, float),
    "object": dict,
    "array": list,
}


@functools.cache
def _document(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def check_definition(document: str, name: str, value: Any, where: str = "body") -> None:
    """Whether the wire JSON ``value`` is a ``name`` of ``document`` (a path under
    :data:`SPEC`).

    Raises:
        Invalid: naming the first field that is not.
    """
    _check({"$ref": f"#/definitions/{name}"}, SPEC / document, value, where)


def _resolve(schema: dict[str, Any], base: Path, where: str) -> tuple[dict[str, Any], Path, str]:
    """The schema a ``$ref`` names (followed to the end), its document and its name."""
    name = ""
    while "$ref" in schema:
        target, _, pointer = schema["$ref"].partition("#")
        document = (base.parent / target).resolve() if target else base
        name = pointer.removeprefix("/definitions/")
        found = _document(document).get("definitions", {}).get(name)
        if found is None:
            raise Invalid(
                f"{where}: the fake has no {name} of {document.name} (vendor it from Azure's "
                "specification: spotwise/executor/clouds/azure/fake/SOURCE.md)"
            )
        schema, base = found, document
    return schema, base, name


def _fields(
    schema: dict[str, Any], base: Path, where: str
) -> tuple[dict[str, tuple[dict[str, Any], Path]], set[str]]:
    """An object definition's fields (its own and its ``allOf`` parents') and required ones."""
    fields = {key: (item, base) for key, item in schema.get("properties", {}).items()}
    required = set(schema.get("required", ()))
    for parent in schema.get("allOf", ()):
        resolved, document, _ = _resolve(parent, base, where)
        more, needed = _fields(resolved, document, where)
        fields = {**more, **fields}
        required |= needed
    return fields, required


def _check(schema: dict[str, Any], base: Path, value: Any, where: str) -> None:
    schema, base, name = _resolve(schema, base, where)
    kind = schema.get("type") or ("object" if "properties" in schema or "allOf" in schema else None)
    if kind is None:
        return  # any value
    wanted = _KINDS[kind]
    if (isinstance(value, bool) and kind != "boolean") or not isinstance(value, wanted):
        article = "an" if kind[0] in "aeio" else "a"
        raise Invalid(f"{where}={value!r:.80} is not {article} {kind}")
    closed = "enum" in schema and not schema.get("x-ms-enum", {}).get("modelAsString", False)
    if closed and str(value).lower() not in {str(v).lower() for v in schema["enum"]}:
        raise Invalid(f"{where}={value!r} is not one of {schema['enum']}")
    if isinstance(value, list):
        for i, item in enumerate(value):
            _check(schema.get("items", {}), base, item, f"{where}[{i}]")
    elif isinstance(value, dict):
        _check_object(schema, base, value, where, name or "object")


def _check_object(
    schema: dict[str, Any], base: Path, value: dict[str, Any], where: str, name: str
) -> None:
    fields, required = _fields(schema, base, where)
    extra = schema.get("additionalProperties")
    for key, item in value.items():
        if key not in fields:
            if not isinstance(extra, dict):
                raise Invalid(f"{where}.{key} is not a field of {name}")
            _check(extra, base, item, f"{where}.{key}")
            continue
        field, document = fields[key]
        if field.get("readOnly"):
            raise Invalid(f"{where}.{key} is read-only in {name}: a request may not set it")
        _check(field, document, item, f"{where}.{key}")
    for key in sorted(required - set(value)):
        if not fields.get(key, ({}, base))[0].get("readOnly"):
            raise Invalid(f"{where} lacks {key!r}, which {name} requires")
