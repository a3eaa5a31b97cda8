"""The floor every other package stands on: the ``SPOTWISE_*`` settings and where things live,
the clock, how long work reports progress, and the clouds' metadata endpoints. It imports
nothing else of Spotwise."""
