"""Loopback fakes of cloud APIs, each checking every request against the provider's published
API description."""
