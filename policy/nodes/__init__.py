"""The policy lab for N-node jobs: spot capacity as node counts, an on-demand floor under spot
workers, regroups after every change of the node count (as torchrun elastic has)."""
