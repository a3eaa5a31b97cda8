"""The pools beyond their prices: where each one is and who shares it.

- :mod:`.clouds`: what a plan knows of each cloud beside its compute prices (its checkpoint
  storage and egress list prices, how ``spotwise run`` launches there, its preemption notice);
- :mod:`.regions`: each pool's region and what a checkpoint costs to move between regions;
- :mod:`.shared_pools`: the nodes of spot pools that several jobs share (a fleet).
"""
