"""Clouds played on this machine, to try Spotwise and test it without an account: what they
share (:mod:`.base`, :mod:`.metadata`); each cloud's own play is in its folder under
``executor/clouds/``."""
