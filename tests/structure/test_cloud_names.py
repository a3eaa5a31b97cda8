"""A cloud is its two folders (docs/clouds.md): nothing else in Spotwise names one (its
``spotwise collect`` command too is made from its pricing folder's declared collector). The code of
the packages (not their docstrings or comments) is scanned for the registered clouds' names
(``aws``; a word of an identifier too: ``AwsCloud``, ``AZURE_SIZES``) and their object stores'
URL schemes (``s3://``); every occurrence outside the clouds' own files is named by file and line,
unless :data:`ALLOWED` gives it with its reason."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("core", "pricing", "policy", "executor", "dashboard", "spotwise")
"""The top-level folders of the code (``spotwise/`` is the CLI; its links to the others are
skipped)."""

REGISTRIES = ("executor/clouds/registry.py", "pricing/clouds/registry.py")
"""The one line of each cloud in each layer."""


def own_files(name: str) -> tuple[str, ...]:
    """The path prefixes of cloud ``name``'s own files: its folder in each layer (the executor's
    cloud; its profile with its price sources and collector)."""
    return (f"executor/clouds/{name}/", f"pricing/clouds/{name}/")


ALLOWED: dict[str, tuple[str, ...]] = {
    # The bundled data are AWS's: the default traces and price history, named by their cloud.
    "core/settings.py": ("aws-02-15-2023", "aws-08-27-2023", "aws_spot_price_history"),
    "executor/bench.py": ("aws-04-22-2023",),
    "executor/demo.py": ("aws-02-15-2023",),
    "policy/nodes/capacity.py": ("aws-08-27-2023",),
    "spotwise/console.py": ("aws-02-15-2023",),
    "spotwise/bench_commands.py": ("aws-02-15-2023", "aws-08-27-2023"),
    "spotwise/forecast_commands.py": (
        "aws-02-15-2023",
        "the AWS describe-spot-price-history format",
    ),
    "spotwise/cli.py": ('"aws"',),  # the demo's plan, on the bundled AWS prices
    "pricing/forecast/price_bench.py": ("clouds.aws", "aws_price_grid", "aws:"),
    # the bundled AWS traces' zones, and the Spot Advisor snapshots beside them
    "pricing/forecast/risk_bench.py": ('"aws"', "clouds.aws"),
    "policy/lab/bids.py": ("clouds.aws",),  # bids replayed on the bundled AWS price history
    "executor/supervise/supervised.py": ('"aws"',),  # replayed traces are the bundled AWS ones
    # The published data sets name the cloud they were taken on (CBL's folders, Bamboo's logs).
    "pricing/sources/traces.py": (
        "(aws|gcp|azure)-",
        "aws-02-15-2023",
        "bamboo-aws-counts",
        '"aws"',
        "aws-spot-instances-",
        "Bamboo AWS",
        "bamboo-gcp-counts",
        '"gcp"',
        "Bamboo GCP",
    ),
    # The file formats `spotwise data load` reads, the collectors' among them (step 3).
    "pricing/ingest.py": ("aws", "gcp"),
    # A zone of an unknown provider is read as AWS's: its region and one letter.
    "pricing/frames.py": ('"aws"',),
    # The reference price and the Spot Advisor estimates are AWS's (p3.2xlarge, its advisor).
    "policy/plan.py": ("collect aws --on-demand", "the AWS Price List"),
    "dashboard/screens/risk.py": ("aws-02-15-2023", "instances AWS interrupted"),
    # A migration of version 3's ledgers: history, kept as it ran.
    "executor/ledger/schema.py": ("launcher <> 'aws'",),
    # The shared cloud options' help: each cloud's word for the setting.
    "spotwise/cloud_options.py": (
        "AWS region, GCP region, Azure location",
        "Azure VM size",
        "an Azure image URN",
        "an S3 or GCS bucket, an Azure ACCOUNT/CONTAINER",
        "GCP: the project; Azure: SUBSCRIPTION/RESOURCE_GROUP; "
        "Kubernetes: [CONTEXT/]NAMESPACE (AWS: none)",
        "(AWS, Azure;",
        "on Kubernetes",
        "(Kubernetes: a folder inside the image)",
    ),
    "spotwise/run_command.py": (
        "us-east-1a on aws, us-central1-a on gcp, 1 on azure",
        "on huawei, a node zone on kubernetes",
    ),
    # The fake instance metadata service serves each cloud's endpoint, its notice among them.
    "executor/local_clouds/metadata.py": (
        "aws_action",
        "aws_rebalance",
        "X-aws-ec2-metadata-token",
        "gcp_preempted",
        "azure_events",
        "huawei_action",
        "huawei_server",
        "huawei_keys",
    ),
}
"""Per file, the texts that may name a cloud there: an occurrence is allowed when an allowed
text of its file covers it. Each entry must still cover one (a fixed place leaves the list)."""


class Occurrence(NamedTuple):
    path: str
    line: int
    text: str
    """The string in double quotes, or the identifier split into its words (``Aws_Cloud``)."""
    spans: tuple[tuple[int, int], ...]
    """Where in ``text`` a cloud is named."""

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.text[:100]!r}"


def source_files(root: Path = ROOT) -> Iterator[tuple[str, Path]]:
    """Every module of the code under ``root``, by its path from ``root``."""
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root)
            if relative.parts[0] == "spotwise" and relative.parts[1] in PACKAGES:
                continue  # the same files, through the links under spotwise/
            yield relative.as_posix(), path


def _docstrings(tree: ast.Module) -> set[int]:
    """The ids of the strings that stand alone as statements: docstrings (of modules, classes,
    functions and attributes)."""
    bodies = (getattr(node, "body", None) for node in ast.walk(tree))
    return {
        id(statement.value)
        for body in bodies
        if isinstance(body, list)
        for statement in body
        if isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    }


def _words(identifier: str) -> str:
    """``AwsCloud`` → ``Aws_Cloud``: a camel-case name's words, separated as snake case's are."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", identifier)


def _texts(node: ast.AST, docstrings: set[int]) -> Iterator[str]:
    """The strings (not docstrings) and identifiers ``node`` holds itself."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        if id(node) not in docstrings:
            yield f'"{node.value}"'  # quoted: ``"aws"`` allows the string, not every mention
    elif isinstance(node, ast.Name):
        yield _words(node.id)
    elif isinstance(node, ast.Attribute):
        yield _words(node.attr)
    elif isinstance(node, ast.alias):
        yield from (_words(n) for n in (node.name, node.asname) if n)
    elif isinstance(node, ast.ImportFrom):
        yield node.module or ""
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield _words(node.name)
    elif isinstance(node, ast.arg | ast.keyword) and node.arg:
        yield _words(node.arg)


def naming(names: Iterable[str], schemes: Iterable[str]) -> re.Pattern[str]:
    """A cloud's name as a word (``_`` separates words), or a URL of its object store."""
    words = "|".join(map(re.escape, sorted(names)))
    urls = "|".join(map(re.escape, sorted(schemes)))
    return re.compile(rf"(?<![a-z0-9])(?:{words})(?![a-z0-9])|(?<![a-z0-9])(?:{urls})://", re.I)


def occurrences(
    names: Iterable[str], schemes: Iterable[str], root: Path = ROOT
) -> list[Occurrence]:
    """Every place under ``root``, outside the clouds' own files, whose code names a cloud."""
    names = tuple(names)
    pattern = naming(names, schemes)
    own = (*REGISTRIES, *(p for n in names for p in own_files(n)))
    found = set()
    for relative, path in source_files(root):
        if relative.startswith(own):
            continue
        tree = ast.parse(path.read_text(), filename=relative)
        docstrings = _docstrings(tree)
        for node in ast.walk(tree):
            for text in _texts(node, docstrings):
                spans = tuple(m.span() for m in pattern.finditer(text))
                if spans:
                    found.add(Occurrence(relative, getattr(node, "lineno", 0), text, spans))
    return sorted(found)


def _covering(occurrence: Occurrence, allowed: str, span: tuple[int, int]) -> bool:
    """Whether an occurrence of ``allowed`` in ``occurrence``'s text covers ``span``."""
    text, allowed = occurrence.text.lower(), allowed.lower()
    return any(
        m.start() <= span[0] and span[1] <= m.start() + len(allowed)
        for m in re.finditer(re.escape(allowed), text)
    )


def judged(
    found: list[Occurrence], allowed: Mapping[str, tuple[str, ...]]
) -> tuple[list[Occurrence], list[tuple[str, str]]]:
    """The occurrences that name a cloud where no allowed text of their file covers it, and the
    allowed texts that cover none."""
    used: set[tuple[str, str]] = set()
    new = []
    for occurrence in found:
        texts = allowed.get(occurrence.path, ())
        for span in occurrence.spans:
            covering = [a for a in texts if _covering(occurrence, a, span)]
            used.update((occurrence.path, a) for a in covering)
            if not covering and occurrence not in new:
                new.append(occurrence)
    unused = [(path, a) for path, texts in allowed.items() for a in texts if (path, a) not in used]
    return new, unused


def registered() -> tuple[set[str], set[str]]:
    """The registered clouds' names and their object stores' URL schemes, from both layers."""
    from spotwise.executor.clouds.registry import CLOUDS
    from spotwise.pricing.clouds.registry import PROFILES

    names = {*CLOUDS, *PROFILES}
    schemes = {c.storage_scheme for c in CLOUDS.values()} | {
        p.launch.scheme for p in PROFILES.values()
    }
    return names, schemes - {""}  # "": a cloud with no object store (Kubernetes' claim)


def test_nothing_outside_a_clouds_own_files_names_a_cloud() -> None:
    names, schemes = registered()
    assert {"aws", "gcp", "azure"} <= names and "s3" in schemes  # it reads the registries
    found = occurrences(names, schemes)
    new, unused = judged(found, ALLOWED)
    assert not new, (
        "code outside a cloud's own files names a cloud (docs/clouds.md: take the names from "
        "PROFILES or CLOUDS, or move the code into the cloud's folder or profile):\n"
        + "\n".join(map(str, new))
    )
    assert not unused, f"ALLOWED texts that name no cloud any more (remove them): {unused}"


def test_the_scan_sees_the_clouds_own_files_when_they_are_not_left_out() -> None:
    names, schemes = registered()
    pattern = naming(names, schemes)
    registry = (ROOT / "executor/clouds/registry.py").read_text()
    assert {m.group().lower() for m in pattern.finditer(registry)} >= names


def test_a_planted_cloud_name_is_named_by_file_and_line(tmp_path: Path) -> None:
    """The rule itself, on a tree of its own: a branch on a cloud's name, a URL, a camel-case
    name and an import are named; a docstring, a comment, the cloud's own folder and an
    allowed text are not; and an allowed text that covers nothing is named too."""
    files = {
        "policy/pick.py": (
            '"""Picks a pool (AWS, GCP, ...)."""\n'
            "import spotwise.pricing.sources.toy as feed  # toy's feed\n"
            "\n"
            "\n"
            "def pick(cloud, myToy=None):\n"
            '    if cloud == "toy":\n'
            '        return "toy://bucket/run"\n'
            '    return "zone us-east-1a of the bundled toy-02-15-2023 traces"\n'
        ),
        "executor/clouds/toy/cloud.py": 'NAME = "toy"\nURL = "toy://bucket"\n',
        "dashboard/screens/market.py": "class ToyColumn:\n    pass\n",
        "spotwise/core/links.py": 'SKIPPED = "toy"\n',  # a link's copy: scanned once, not twice
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = occurrences(["toy"], ["toy"], root=tmp_path)
    allowed = {"policy/pick.py": ("toy-02-15-2023", "never there")}
    new, unused = judged(found, allowed)
    assert sorted(str(o).split(": ")[0] for o in new) == [
        "dashboard/screens/market.py:1",
        "policy/pick.py:2",  # the import
        "policy/pick.py:5",  # a word of a camel-case name
        "policy/pick.py:6",  # the branch
        "policy/pick.py:7",  # the URL
    ]
    assert unused == [("policy/pick.py", "never there")]
    assert not occurrences(["huawei"], ["obs"], root=tmp_path)  # only the names given
