"""What Spotwise knows of each cloud below the executor: one folder per cloud, ``NAME/``, its
profile in its ``__init__.py`` (its ``spotwise collect`` command's flags and run, its object
store's list prices, how ``spotwise run`` is written for it) with its price sources and its
collector beside it, registered by name in :data:`~pricing.clouds.registry.PROFILES`."""
