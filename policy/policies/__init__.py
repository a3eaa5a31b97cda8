"""Built-in policies (registered by name in :mod:`spotwise.policy.registry`) and what they share:
a job's side of the risk forecast (:mod:`.risk`, :mod:`.past_fit`)."""
