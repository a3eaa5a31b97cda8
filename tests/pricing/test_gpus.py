"""The GPU equivalence table (data/gpu_shapes.csv) and its reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from spotwise.pricing import gpus
from spotwise.pricing.errors import InputError
from spotwise.pricing.ingest import detect_format
from tests.conftest import DATA


def test_the_table_covers_each_asked_family_of_each_cloud() -> None:
    names = {(s.cloud, s.shape) for s in gpus.read_shapes()}
    for cloud, prefix in [
        *(("aws", f) for f in ("p2.", "p3.", "p4d.", "p5.", "g4dn.", "g5.", "g6.")),
        *(("gcp", f) for f in ("a2-", "a3-", "g2-")),
        ("gcp", "n1-standard-8+1xnvidia-tesla-t4"),
        ("gcp", "n1-standard-8+1xnvidia-tesla-v100"),
        *(("azure", f) for f in ("Standard_NC6s_v3", "Standard_NC24ads_A100_v4")),
        *(("azure", f) for f in ("Standard_ND96isr_H100_v5", "Standard_NC4as_T4_v3")),
        *(("huawei", f) for f in ("p3.", "p2s.", "pi2.")),
    ]:
        assert any(c == cloud and s.startswith(prefix) for c, s in names), (cloud, prefix)
    assert all(s.source.startswith("https://") for s in gpus.read_shapes())


def test_shapes_answers_gpu_times_count_on_a_cloud() -> None:
    one_a100 = gpus.shapes("a100", 1)
    assert {(s.cloud, s.shape) for s in one_a100} == {
        ("gcp", "a2-highgpu-1g"),
        ("gcp", "a2-ultragpu-1g"),
        ("azure", "Standard_NC24ads_A100_v4"),
        ("huawei", "p3.2xlarge.8"),
    }
    assert [s.shape for s in gpus.shapes("V100", 8, cloud="aws")] == [
        "p3.16xlarge",
        "p3dn.24xlarge",
    ]
    assert gpus.shapes("L4", cloud="azure") == ()  # Azure sells no L4 size
    v100 = gpus.shape_of("gcp", "n1-standard-8+1xnvidia-tesla-v100")
    assert v100 is not None and v100.machine_type == "n1-standard-8"
    assert (v100.gpu_count, v100.vcpus, v100.memory_gb) == (1, 8, 30.0)


def test_the_table_agrees_with_the_gpu_counts_of_the_bundled_gcp_prices() -> None:
    import pandas as pd

    bundled = pd.read_csv(DATA / "prices" / "gcp_spot_ondemand_changepoints.csv")
    counts = bundled.drop_duplicates("machine_type").set_index("machine_type")["gpu_count"]
    checked = 0
    for shape in gpus.on_cloud("gcp"):
        if shape.shape in counts.index:
            assert counts[shape.shape] == shape.gpu_count, shape.shape
            checked += 1
    assert checked >= 15


def test_data_load_recognises_the_table_and_stores_nothing() -> None:
    fmt = detect_format(DATA / "gpu_shapes.csv")
    parsed = fmt.read(DATA / "gpu_shapes.csv")
    assert (fmt.name, parsed.frames, parsed.rows_read) == ("gpu-shapes", {}, 84)


@pytest.mark.parametrize(
    ("line", "where"),
    [
        ("gcp,a2-highgpu-1g,A100,one,40,12,85,,https://x.example", "line 2, field 'gpu_count'"),
        ("oracle,bm.gpu4,A100,8,40,64,2048,,https://x.example", "line 2, field 'cloud'"),
        ("gcp,a2-highgpu-1g,A100,1,40,12,85,,http://x.example", "line 2, field 'source'"),
        ("gcp,a2 highgpu;rm -rf,A100,1,40,12,85,,https://x.example", "line 2, field 'shape'"),
    ],
)
def test_a_bad_row_is_named_by_line_and_field(tmp_path: Path, line: str, where: str) -> None:
    table = tmp_path / "gpu_shapes.csv"
    table.write_text(",".join(gpus.COLUMNS) + "\n" + line + "\n")
    with pytest.raises(InputError, match=where):
        gpus.read_shapes(table)


def test_cloud_of_names_the_one_cloud_whose_table_rows_have_the_shape() -> None:
    assert gpus.cloud_of("p3.2xlarge") == "aws"
    assert gpus.cloud_of("a2-highgpu-1g") == "gcp"
    assert gpus.cloud_of("standard_nc6s_v3") == "azure"  # Azure's names whatever their case
    assert gpus.cloud_of("x9") is None


def test_a_shape_two_clouds_claim_is_owned_by_neither(tmp_path: Path) -> None:
    table = tmp_path / "gpu_shapes.csv"
    rows = [f"{c},same-1g,A100,1,40,12,85,,https://x.example" for c in ("gcp", "azure")]
    table.write_text("\n".join([",".join(gpus.COLUMNS), *rows]) + "\n")
    assert gpus.cloud_of("same-1g", table) is None


def test_the_table_gives_each_cloud_its_equivalent_shapes() -> None:
    one = {c: [s.shape for s in found] for c, found in gpus.equivalents("A100", 1).items()}
    assert one == {
        "aws": ["p4d.24xlarge", "p4de.24xlarge"],  # AWS sells A100s eight at a time
        "gcp": ["a2-highgpu-1g", "a2-ultragpu-1g"],
        "azure": ["Standard_NC24ads_A100_v4"],
        "huawei": ["p3.2xlarge.8"],
    }
    assert "azure" not in gpus.equivalents("L4", 1)  # Azure sells no L4
    assert {c: [s.gpu_count for s in f] for c, f in gpus.equivalents("H100", 8).items()} == {
        "aws": [8],
        "gcp": [8, 8],
        "azure": [8],
    }
