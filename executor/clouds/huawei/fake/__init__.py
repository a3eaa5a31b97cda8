"""Huawei Cloud on this machine: a loopback fake of the ECS and BSS endpoints Spotwise calls,
each request checked against the SDK's generated models (SOURCE.md)."""
