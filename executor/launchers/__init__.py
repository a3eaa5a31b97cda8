"""Launchers: where the supervisor starts a training command (one interface, several clouds)."""
