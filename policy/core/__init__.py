"""The decision core: every option (stay, move to a pool, on demand in a region, wait) priced
by its expected cost to finish the job, from the risk forecast, the prices and what a move
costs; the least wins (docs/decisions.md).

- :mod:`.beliefs`: per pool, what the forecast and the job's own sightings say now;
- :mod:`.continuation`: what the rest of the job is expected to cost from a work and slack left;
- :mod:`.options`: the options of a tick, each with its expected cost and its parts;
- :mod:`.policy`: the policy the lab, the API, fleets and the supervisor run.
"""
