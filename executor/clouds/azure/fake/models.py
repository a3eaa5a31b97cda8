"""Azure request bodies checked against the request models the Azure SDK for Python ships.

Two kinds of model are in the installed libraries, and both are read:

- TypeSpec-generated models (azure-mgmt-compute, -network, -storage, -keyvault, -resource,
  azure-keyvault-secrets): each field is a ``rest_field`` with its wire name and its
  visibility (``read`` only: the service writes it, a request may not), its type in the class's
  annotations (``Optional[Union[str, "_models.VirtualMachinePriorityTypes"]]``, a model, a
  ``list[...]`` or ``dict[str, ...]``), and "Required." in the class docstring's ``:ivar:``;
- msrest (autorest) models (azure-mgmt-msi, azure-mgmt-authorization): ``_attribute_map``
  names each field's wire key (``properties.principalId``: flattened under ``properties``)
  and type (``str``, ``[str]``, ``{str}``, a model's name), ``_validation`` the required and
  read-only ones.

:func:`check_body` refuses, naming the first, a field the model does not have, a value of the
wrong type, a value outside an enum's values, a read-only field in a request, and a missing
required field.
"""

from __future__ import annotations

import datetime
import enum
import functools
import importlib
import re
import sys
import types
import typing
from typing import Any


class Invalid(ValueError):
    """A request the published API description does not allow."""


def check_body(model: type, value: Any, where: str = "body") -> None:
    """Whether the wire JSON ``value`` is a request body of ``model``.

    Raises:
        Invalid: naming the first field that is not.
    """
    if hasattr(model, "_attribute_map"):
        _check_msrest(model, value, where)
    else:
        _check_typespec(model, value, where)


# TypeSpec-generated models (azure.*._utils.model_base)


@functools.cache
def _typespec_fields(model: type) -> dict[str, tuple[str, Any, bool, bool]]:
    """wire name -> (attribute, type, read-only, required) of a TypeSpec model."""
    model()  # the library computes its field table on the first instance
    package = importlib.import_module(model.__module__.rsplit(".", 1)[0])
    names = {**vars(sys.modules[model.__module__]), "_models": package}
    hints = typing.get_type_hints(model, globalns=names)
    required = _required_in_docstring(model)
    fields = {}
    for attr, rest in model._attr_to_rest_field.items():  # type: ignore[attr-defined]
        read_only = (rest._visibility or []) == ["read"]
        fields[rest._rest_name] = (attr, hints.get(attr, Any), read_only, attr in required)
    return fields


def _required_in_docstring(model: type) -> set[str]:
    required = set()
    for klass in model.__mro__:
        text = klass.__doc__ or ""
        for name, body in re.findall(r":ivar (\w+):(.*?)(?=:ivar |:vartype |\Z)", text, re.S):
            if re.search(r"\bRequired\.", body):
                required.add(name)
    return required


def _check_typespec(model: type, value: Any, where: str) -> None:
    if not isinstance(value, dict):
        raise Invalid(f"{where} is not an object ({model.__name__})")
    mapping = getattr(model, "__mapping__", None)
    fields = _typespec_fields(model)
    if mapping:
        for key, (_, hint, _, _) in fields.items():
            if typing.get_origin(hint) is typing.Literal or key in ("kind", "@odata.type"):
                chosen = mapping.get(value.get(key))
                if chosen is not None and chosen is not model:
                    _check_typespec(chosen, value, where)
                    return
    for key, item in value.items():
        if key not in fields:
            raise Invalid(f"{where}.{key} is not a field of {model.__name__}")
        _attr, hint, read_only, _ = fields[key]
        if read_only:
            raise Invalid(
                f"{where}.{key} is read-only in {model.__name__}: a request may not set it"
            )
        _check_hint(hint, item, f"{where}.{key}")
    for key, (_attr, _hint, read_only, required) in fields.items():
        if required and not read_only and key not in value:
            raise Invalid(f"{where} lacks {key!r}, which {model.__name__} requires")


def _check_hint(hint: Any, value: Any, where: str) -> None:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint is Any or hint is object:
        return
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return
        options = [a for a in args if a is not type(None)]
        enums = [a for a in options if isinstance(a, type) and issubclass(a, enum.Enum)]
        if enums and isinstance(value, str):
            known = {str(m.value).lower() for e in enums for m in e}
            if value.lower() not in known:
                raise Invalid(f"{where}={value!r} is not one of {sorted(known)}")
            return
        problems = []
        for option in options:
            try:
                _check_hint(option, value, where)
                return
            except Invalid as exc:
                problems.append(str(exc))
        raise Invalid(problems[0] if len(problems) == 1 else f"{where}: {'; '.join(problems)}")
    if origin is typing.Literal:
        if value not in args:
            raise Invalid(f"{where}={value!r} is not one of {list(args)}")
        return
    if origin is list:
        if not isinstance(value, list):
            raise Invalid(f"{where} is not a list")
        for i, item in enumerate(value):
            _check_hint(args[0] if args else Any, item, f"{where}[{i}]")
        return
    if origin is dict:
        if not isinstance(value, dict):
            raise Invalid(f"{where} is not an object")
        for key, item in value.items():
            _check_hint(args[1] if len(args) > 1 else Any, item, f"{where}.{key}")
        return
    if isinstance(hint, type):
        if issubclass(hint, enum.Enum):
            known = {str(m.value).lower() for m in hint}
            if not isinstance(value, str) or value.lower() not in known:
                raise Invalid(f"{where}={value!r} is not one of {sorted(known)}")
            return
        if hint is bool:
            ok = isinstance(value, bool)
        elif hint is int:
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif hint is float:
            ok = isinstance(value, int | float) and not isinstance(value, bool)
        elif hint in (str, bytes, bytearray, datetime.datetime, datetime.date, datetime.timedelta):
            ok = isinstance(value, str)
        elif _is_model(hint):
            check_body(hint, value, where)
            return
        else:
            raise Invalid(f"{where}: the fake cannot check a {hint!r}")
        if not ok:
            raise Invalid(f"{where}={value!r} is not a {hint.__name__}")
        return
    raise Invalid(f"{where}: the fake cannot check a {hint!r}")


def _is_model(kind: type) -> bool:
    """A TypeSpec model (a subclass of an SDK's ``_utils.model_base.Model``, whose field table
    exists only once one was made) or an msrest one."""
    typespec = any(
        k.__name__ == "Model" and k.__module__.endswith("model_base") for k in kind.__mro__
    )
    return typespec or hasattr(kind, "_attribute_map")


# msrest (autorest) models


def _msrest_tree(model: type) -> dict[str, Any]:
    """The wire layout of an msrest model: key -> (attribute, type) or a nested layout."""
    tree: dict[str, Any] = {}
    for attr, spec in model._attribute_map.items():  # type: ignore[attr-defined]
        path = [p.replace("\\.", ".") for p in re.split(r"(?<!\\)\.", spec["key"])]
        node = tree
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = (attr, spec["type"])
    return tree


def _check_msrest(model: type, value: Any, where: str) -> None:
    if not isinstance(value, dict):
        raise Invalid(f"{where} is not an object ({model.__name__})")
    rules = getattr(model, "_validation", {})
    seen: set[str] = set()
    _walk_msrest(model, _msrest_tree(model), value, where, rules, seen)
    for attr, rule in rules.items():
        if rule.get("required") and not rule.get("readonly") and attr not in seen:
            key = model._attribute_map[attr]["key"]  # type: ignore[attr-defined]
            raise Invalid(f"{where} lacks {key!r}, which {model.__name__} requires")


def _walk_msrest(
    model: type,
    tree: dict[str, Any],
    value: dict[str, Any],
    where: str,
    rules: dict[str, Any],
    seen: set[str],
) -> None:
    for key, item in value.items():
        if key not in tree:
            raise Invalid(f"{where}.{key} is not a field of {model.__name__}")
        node = tree[key]
        if isinstance(node, dict):
            if not isinstance(item, dict):
                raise Invalid(f"{where}.{key} is not an object")
            _walk_msrest(model, node, item, f"{where}.{key}", rules, seen)
            continue
        attr, kind = node
        if rules.get(attr, {}).get("readonly"):
            raise Invalid(
                f"{where}.{key} is read-only in {model.__name__}: a request may not set it"
            )
        seen.add(attr)
        _check_msrest_type(model, kind, item, f"{where}.{key}")
        known = _known_values(model).get(attr)
        if known and kind == "str" and str(item).lower() not in known:
            raise Invalid(f"{where}.{key}={item!r} is not one of {sorted(known)}")


@functools.cache
def _known_values(model: type) -> dict[str, set[str]]:
    """attribute -> the values its docstring says are known (an extensible enum sent as str)."""
    text = model.__doc__ or ""
    known = {}
    for name, body in re.findall(r":ivar (\w+):(.*?)(?=:ivar |:vartype |\Z)", text, re.S):
        listed = re.search(r"Known values are: (.*?)\.\s*$", " ".join(body.split()))
        if listed:
            known[name] = {v.lower() for v in re.findall(r'"([^"]+)"', listed.group(1))}
    return known


def _check_msrest_type(model: type, kind: str, value: Any, where: str) -> None:
    if value is None:
        return
    if kind.startswith("[") and kind.endswith("]"):
        if not isinstance(value, list):
            raise Invalid(f"{where} is not a list")
        for i, item in enumerate(value):
            _check_msrest_type(model, kind[1:-1], item, f"{where}[{i}]")
        return
    if kind.startswith("{") and kind.endswith("}"):
        if not isinstance(value, dict):
            raise Invalid(f"{where} is not an object")
        for key, item in value.items():
            _check_msrest_type(model, kind[1:-1], item, f"{where}.{key}")
        return
    plain: dict[str, type | tuple[type, ...]] = {
        "str": str,
        "bool": bool,
        "int": int,
        "long": int,
        "float": (int, float),
        "iso-8601": str,
        "rfc-1123": str,
        "duration": str,
        "date": str,
        "base64": str,
        "bytearray": str,
        "object": object,
    }
    if kind in plain:
        wanted = plain[kind]
        if (isinstance(value, bool) and kind != "bool") or not isinstance(value, wanted):
            raise Invalid(f"{where}={value!r} is not a {kind}")
        return
    package = sys.modules[model.__module__.rsplit(".", 1)[0]]
    nested = getattr(package, kind, None) or getattr(
        importlib.import_module(model.__module__), kind, None
    )
    if nested is None:
        raise Invalid(f"{where}: the fake cannot check a {kind}")
    if isinstance(nested, type) and issubclass(nested, enum.Enum):
        if not isinstance(value, str) or value.lower() not in {
            str(m.value).lower() for m in nested
        }:
            raise Invalid(f"{where}={value!r} is not a {kind}")
        return
    _check_msrest(nested, value, where)
