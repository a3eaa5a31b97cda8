"""Checkpoints: the manager (step folders, atomic commits, incremental and async saves), the
replicas it writes to, state-dict flattening and the distributed checkpointer."""
