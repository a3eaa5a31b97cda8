"""Objects checked as a kube-apiserver checks them, against the JSON schemas of Kubernetes'
published OpenAPI that the ``kubernetes-validate`` wheel carries, at one pinned version
(:data:`KUBERNETES_VERSION`), strictly (a field the schema lacks is refused, as the apiserver's
strict field validation refuses it), plus the name rule every object's ``metadata.name`` keeps.
"""

from __future__ import annotations

import re
from typing import Any

KUBERNETES_VERSION = "1.33.0"
"""The Kubernetes whose API the fake plays (a version ``kubernetes-validate`` carries; GKE, EKS,
AKS and CCE all offer 1.33 in 2026)."""
NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
"""A DNS-1123 subdomain: what ``metadata.name`` of a Pod, Job, PDB or Node may be."""
SERVICE_NAME = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
"""A DNS-1035 label: what a Service's name may be."""


class Invalid(Exception):
    """An object the apiserver would refuse (HTTP 422): ``field`` is its path, as the
    apiserver's ``Status.details.causes[].field`` writes it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field, self.message = field, message


def field_path(parts: Any) -> str:
    """``spec.containers[0].image`` from a JSON path's parts."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text or "<object>"


def check_object(body: Any, kind: str, api_version: str) -> None:
    """Whether ``body`` is a ``kind`` of ``api_version`` the apiserver would take; a body
    that leaves out its ``kind`` and ``apiVersion`` takes the endpoint's, as the apiserver's
    decoder gives them (set in ``body``).

    Raises:
        Invalid: naming the first field that is not.
    """
    import kubernetes_validate
    from kubernetes_validate.utils import SchemaNotFoundError, ValidationError

    if not isinstance(body, dict):
        raise Invalid("<object>", "the body is not a JSON object")
    body.setdefault("kind", kind)
    body.setdefault("apiVersion", api_version)
    if body.get("kind") != kind or body.get("apiVersion") != api_version:
        raise Invalid(
            "kind",
            f"this endpoint takes a {kind} of {api_version}, not "
            f"{str(body.get('kind'))[:40]!r} of {str(body.get('apiVersion'))[:40]!r}",
        )
    try:
        kubernetes_validate.validate(body, KUBERNETES_VERSION, strict=True)
    except ValidationError as error:
        raise Invalid(field_path(error.path), error.message[:300]) from None
    except SchemaNotFoundError as error:
        raise Invalid("kind", str(error)[:200]) from None


def check_name(body: dict[str, Any]) -> None:
    """Whether a stored object's ``metadata.name`` (or ``generateName``) is one the apiserver
    takes.

    Raises:
        Invalid: naming ``metadata.name``.
    """
    kind = body.get("kind")
    metadata = body.get("metadata") or {}
    name = metadata.get("name")
    rule = SERVICE_NAME if kind == "Service" else NAME
    if name is not None and (len(name) > 253 or not rule.fullmatch(name)):
        raise Invalid(
            "metadata.name",
            f"{name[:60]!r} is not a valid name (lower-case letters, digits, '-' and '.', "
            "starting and ending with a letter or digit)",
        )
    if name is None and not metadata.get("generateName"):
        raise Invalid("metadata.name", "name or generateName is required")
