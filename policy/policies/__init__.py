"""Built-in policies (registered by name in :mod:`spotwise.policy.registry`)."""
