"""The policy lab: policies run against one another on traces, in the simulator.

- :mod:`.bench`: one trace set, the policies side by side (``spotwise bench policy``), and
  :mod:`.node_bench` the same for N-node jobs on :mod:`spotwise.policy.nodes` (``--nodes N``);
- :mod:`.suite`: every bundled trace set (:mod:`.trace_sets`) × job shapes × markets, and its
  verdict (``spotwise bench suite``), on the priced markets of :mod:`.markets`; :mod:`.scenarios`
  generates synthetic sets;
- :mod:`.bids`: a policy with a bid against the same without one (``spotwise bench bids``);
- :mod:`.fleet`: many jobs in tiers under one budget (``spotwise bench fleet``), on the rule of
  :mod:`spotwise.policy.fleet_rule`.
"""
