"""The suite's trace sets: every bundled set, read as pools, with its clock and its reading."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from spotwise.policy.lab.trace_sets import RELATIVE, suite_sets
from tests.conftest import DATA


def test_every_bundled_set_is_read_with_its_clock_and_how_it_became_pools() -> None:
    sets = {s.name: s for s in suite_sets(DATA)}
    assert {
        "aws-02-15-2023",
        "aws-10-26-2022",
        "16-node-aws-08-27-2023",
        "spothedge-GCP1",
        "parcae-p3",
        "bamboo-g4dn",
    } <= set(sets)
    assert sets["aws-02-15-2023"].clock == "2023-02-15 UTC"
    for name in ("spothedge-GCP1", "parcae-p3", "bamboo-g4dn"):
        assert sets[name].clock == RELATIVE  # no date in the files: never a 1970 stand-in
    assert not any("1970" in json.dumps(s.describe().to_dict()) for s in sets.values())
    gcp = sets["spothedge-GCP1"]
    assert gcp.traces.gap_seconds == 150 and len(gcp.traces.pools) == 6
    east1b = gcp.traces.names.index("us-east1-b_a100_40gb_8")
    assert not gcp.traces.available[east1b].any()  # always 0 VMs held: never up
    assert "at least 16 nodes" in sets["parcae-p3"].reading  # half the 32-node cluster


def test_a_capacity_pool_is_up_where_a_node_can_be_had(tmp_path: Path) -> None:
    data = tmp_path / "data"
    folder = data / "traces/spothedge/GCP1"
    folder.mkdir(parents=True)
    (folder / "zone-a_x.json").write_text(
        json.dumps({"metadata": {"gap_seconds": 60}, "data": [0, 2, 4, 1, 0]})
    )
    (data / "traces/cbl/availability/1-node").mkdir(parents=True)
    (data / "traces/cbl/availability/16-node").mkdir(parents=True)
    (gcp,) = suite_sets(data)
    assert gcp.name == "spothedge-GCP1"
    assert (gcp.traces.available[0] == np.array([False, True, True, True, False])).all()
