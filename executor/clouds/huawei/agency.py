"""The server's agency (its identity): temporary AK/SK and security token from the ECS metadata's
``openstack/latest/securitykey``, asked directly, never through a proxy.

This module imports only the standard library: the on-instance agent imports it."""

from __future__ import annotations

import json
import urllib.request

SECURITY_KEY = "openstack/latest/securitykey"


def agency_keys(metadata_url: str, timeout: float = 5.0) -> dict[str, str]:
    """The agency's ``access``, ``secret`` and ``securitytoken``."""
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with direct.open(f"{metadata_url}/{SECURITY_KEY}", timeout=timeout) as answer:
        credential: dict[str, str] = json.load(answer)["credential"]
    return credential
