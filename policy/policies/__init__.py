"""Built-in policies (registered by name in :mod:`policy.registry`)."""
