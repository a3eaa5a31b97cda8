"""The GPU equivalence table: which machine shapes of each cloud carry which GPU, how many, and
with how much memory (``data/gpu_shapes.csv``, each row with the provider page it was read
from). It answers "shapes with GPU X × N on cloud C" for the plan and the collectors.

A GCP shape that attaches GPUs to an N1 machine is named ``{machine type}+{count}x{accelerator
type}`` (``n1-standard-8+1xnvidia-tesla-v100``); every other shape is the provider's own name.
"""

from __future__ import annotations

import csv
import functools
import re
from dataclasses import dataclass
from pathlib import Path

from spotwise.pricing.errors import InputError
from spotwise.pricing.frames import PROVIDERS
from spotwise.pricing.sources import FileFormat, Parsed

COLUMNS = (
    "cloud",
    "shape",
    "gpu",
    "gpu_count",
    "gpu_memory_gb",
    "vcpus",
    "memory_gb",
    "accelerator",
    "source",
)
FILE_NAME = "gpu_shapes.csv"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
_GPU = re.compile(r"^[A-Z0-9][A-Za-z0-9-]*$")


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuShape:
    """One machine shape: its GPUs, its host (vCPUs, memory in GiB) and where that is written."""

    cloud: str
    shape: str
    gpu: str
    gpu_count: int
    gpu_memory_gb: float
    vcpus: int
    memory_gb: float
    accelerator: str
    """The cloud's own name of the GPU where it has one (GCP's accelerator type), else ''."""
    source: str

    @property
    def machine_type(self) -> str:
        """The machine type to launch (a GCP N1 shape without its attached GPUs)."""
        return self.shape.split("+", 1)[0]


def table_path() -> Path:
    """The bundled table (in the data folder, ``$SPOTWISE_DATA`` overriding)."""
    from spotwise.core.settings import bundled_data_dir

    return bundled_data_dir() / FILE_NAME


def read_shapes(path: Path | None = None) -> tuple[GpuShape, ...]:
    """Every row of the table at ``path`` (default: the bundled one), checked.

    Raises:
        InputError: naming the line and field of the first bad row.
    """
    return _read(path or table_path())


def shapes(
    gpu: str, count: int | None = None, cloud: str | None = None, path: Path | None = None
) -> tuple[GpuShape, ...]:
    """The shapes carrying ``gpu`` (case-insensitive), ``count`` of them when given, on
    ``cloud`` when given; in table order (cloud, then size)."""
    return tuple(
        s
        for s in read_shapes(path)
        if s.gpu.lower() == gpu.lower()
        and (count is None or s.gpu_count == count)
        and (cloud is None or s.cloud == cloud)
    )


def equivalents(gpu: str, count: int, path: Path | None = None) -> dict[str, tuple[GpuShape, ...]]:
    """Per cloud, the shapes with ``count`` of ``gpu``; where a cloud sells none with exactly
    that many, its shapes with the fewest more (AWS sells A100s eight at a time). A cloud with
    no shape of ``gpu`` is absent."""
    found: dict[str, tuple[GpuShape, ...]] = {}
    for cloud in dict.fromkeys(s.cloud for s in read_shapes(path)):
        carrying = [s for s in shapes(gpu, cloud=cloud, path=path) if s.gpu_count >= count]
        if carrying:
            fewest = min(s.gpu_count for s in carrying)
            found[cloud] = tuple(s for s in carrying if s.gpu_count == fewest)
    return found


def on_cloud(cloud: str, path: Path | None = None) -> tuple[GpuShape, ...]:
    """Every shape of ``cloud``."""
    return tuple(s for s in read_shapes(path) if s.cloud == cloud)


def shape_of(cloud: str, shape: str, path: Path | None = None) -> GpuShape | None:
    """The row of one shape (Azure's size names match whatever their case), or None."""
    for row in read_shapes(path):
        if row.cloud == cloud and row.shape.lower() == shape.lower():
            return row
    return None


def cloud_of(shape: str, path: Path | None = None) -> str | None:
    """The cloud that owns ``shape``: the one cloud whose rows of the table have it (Azure's
    size names whatever their case); None when no cloud has it, or more than one does."""
    clouds = {row.cloud for row in read_shapes(path) if row.shape.lower() == shape.lower()}
    return clouds.pop() if len(clouds) == 1 else None


def gpu_models(path: Path | None = None) -> tuple[str, ...]:
    """The GPU models the table knows, sorted."""
    return tuple(sorted({s.gpu for s in read_shapes(path)}))


@functools.lru_cache(maxsize=8)
def _read(path: Path) -> tuple[GpuShape, ...]:
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            rows = list(csv.reader(handle))
    except OSError as exc:
        raise InputError(path, "", f"cannot read it ({exc.strerror or exc})", _FIX) from exc
    if not rows or tuple(rows[0]) != COLUMNS:
        raise InputError(path, "line 1", f"the header must be {','.join(COLUMNS)}", _FIX)
    seen: set[tuple[str, str]] = set()
    shapes_read = []
    for line, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        shape = _row(path, line, row)
        key = (shape.cloud, shape.shape.lower())
        if key in seen:
            raise InputError(path, f"line {line}, field 'shape'", "a second row of it", _FIX)
        seen.add(key)
        shapes_read.append(shape)
    return tuple(shapes_read)


_FIX = "Fix the GPU equivalence table (data/README.md says what each column holds)"


def _row(path: Path, line: int, row: list[str]) -> GpuShape:
    """One checked row of the table.

    Raises:
        InputError: naming the line and the first bad field.
    """

    def bad(field: str, problem: str) -> InputError:
        return InputError(path, f"line {line}, field {field!r}", problem, _FIX)

    if len(row) != len(COLUMNS):
        raise bad("cloud", f"{len(row)} fields, not {len(COLUMNS)}")
    value = dict(zip(COLUMNS, (v.strip() for v in row), strict=True))
    problem = _name_problem(value)
    if problem is not None:
        raise bad(*problem)
    numbers: dict[str, float] = {}
    for field in ("gpu_count", "gpu_memory_gb", "vcpus", "memory_gb"):
        number = _number(value[field], whole=field in ("gpu_count", "vcpus"))
        if isinstance(number, str):
            raise bad(field, number)
        numbers[field] = number
    return GpuShape(
        cloud=value["cloud"],
        shape=value["shape"],
        gpu=value["gpu"],
        gpu_count=int(numbers["gpu_count"]),
        gpu_memory_gb=numbers["gpu_memory_gb"],
        vcpus=int(numbers["vcpus"]),
        memory_gb=numbers["memory_gb"],
        accelerator=value["accelerator"],
        source=value["source"],
    )


def _number(text: str, *, whole: bool) -> float | str:
    """The positive number ``text`` holds (a whole one when ``whole``), or why it is not."""
    try:
        number = float(text)
    except ValueError:
        return f"not a number: {text!r}"
    if not 0 < number < 100_000:
        return f"must be positive, got {text}"
    if whole and number % 1:
        return f"must be a whole number, got {text}"
    return number


def _name_problem(value: dict[str, str]) -> tuple[str, str] | None:
    """The first named field of a row that is not as the table wants it, and why."""
    if value["cloud"] not in PROVIDERS:
        return "cloud", f"one of {sorted(PROVIDERS)}, got {value['cloud']!r}"
    if not _NAME.match(value["shape"]):
        return "shape", f"not a shape name: {value['shape']!r}"
    if not _GPU.match(value["gpu"]):
        return "gpu", f"not a GPU model like A100: {value['gpu']!r}"
    if value["accelerator"] and not _NAME.match(value["accelerator"]):
        return "accelerator", f"not an accelerator name: {value['accelerator']!r}"
    if not value["source"].startswith("https://"):
        return "source", "the page the row was read from, an https:// URL"
    return None


def read_table_file(path: Path) -> Parsed:
    """The table as ``spotwise data load`` meets it: checked, nothing to store."""
    _read.cache_clear()  # a file that changed since it was read is read again
    found = read_shapes(path)
    return Parsed(
        path=path,
        format="gpu-shapes",
        rows_read=len(found),
        note="the GPU equivalence table (read by plan and collect); nothing to store",
    )


FORMATS = (
    FileFormat(
        name="gpu-shapes",
        description="GPU equivalence table: shapes per cloud and their GPUs (CSV)",
        sniff=lambda p, head: head.startswith(",".join(COLUMNS[:4])),
        read=read_table_file,
    ),
)
