"""Errors of the policy package: each says what was wrong, where, and what to do."""

from __future__ import annotations


class PolicyError(Exception):
    """Base class of every error the policy package raises on purpose."""


class TraceError(PolicyError):
    """A trace folder or pools file that cannot be used."""


class UnknownPolicy(PolicyError):
    """A policy name that is not registered."""
