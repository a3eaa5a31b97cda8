"""What Spotwise knows of each cloud below the executor: one profile per cloud (its ``collect``
line, its object store's list prices, how ``spotwise run`` is written for it), registered by
name in :data:`~pricing.clouds.registry.PROFILES`."""
