"""The user's guide holds what `make docs` (mkdocs build --strict) cannot check: the README
stays short, its links and `make` targets exist, its script runs as printed, every page is in
the nav once, every design the code cites is a section of docs/design.md, and every command
and option is named on a page. Broken links and anchors between the pages are the build's."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO

README = REPO / "README.md"
DOCS = REPO / "docs"
DESIGN = DOCS / "design.md"
MAX_README_LINES = 250
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
CITATION = re.compile(r"(\S*)design\.md(?:\s*,\s*|\s*\(\s*)?(\"[^\"]+\")?")
"""``design.md`` with what stands before it and the section quoted after it, if any."""


def slug(heading: str) -> str:
    """The anchor Python-Markdown's toc extension gives a heading (its default slugify)."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def headings(page: Path) -> list[str]:
    """The headings of a Markdown page, outside its code blocks."""
    found, fenced = [], False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (match := re.match(r"#{1,6} (.+)", line)):
            found.append(match.group(1).strip())
    return found


def nav_pages(entry: Any) -> Iterator[str]:
    """Every page a MkDocs nav entry names, in order."""
    if isinstance(entry, str):
        yield entry
    elif isinstance(entry, list):
        for item in entry:
            yield from nav_pages(item)
    elif isinstance(entry, dict):
        for value in entry.values():
            yield from nav_pages(value)


def test_the_readme_is_short_enough_to_read_in_ten_minutes() -> None:
    lines = len(README.read_text().splitlines())
    assert lines <= MAX_README_LINES, (
        f"README.md has {lines} lines (at most {MAX_README_LINES}): move the detail to a page "
        "of docs/ and link it"
    )


def test_every_readme_link_to_a_file_reaches_it() -> None:
    broken = []
    for target in LINK.findall(README.read_text()):
        if re.match(r"[a-z]+:", target):  # https:, mailto: ...
            continue
        path, _, anchor = target.partition("#")
        file = REPO / path if path else README
        if not file.exists():
            broken.append(f"{target}: no {path}")
        elif anchor and file.suffix == ".md" and anchor not in map(slug, headings(file)):
            broken.append(f"{target}: no heading of {path} has the anchor #{anchor}")
    assert not broken, "README.md links to what is not there: " + "; ".join(broken)


def test_the_readmes_make_commands_are_targets_of_the_makefile() -> None:
    targets = set(re.findall(r"^([\w-]+):", (REPO / "Makefile").read_text(), flags=re.M))
    named = set(re.findall(r"(?:^|`)make ([a-z][\w-]*)", README.read_text(), flags=re.M))
    assert named, "the README names no make command"
    assert named <= targets, f"README.md names make targets the Makefile lacks: {named - targets}"


def test_every_page_is_in_the_nav_exactly_once() -> None:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text())
    listed = list(nav_pages(config["nav"]))
    twice = sorted({page for page in listed if listed.count(page) > 1})
    assert not twice, f"pages listed more than once in mkdocs.yml's nav: {twice}"
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md") if "hooks" not in p.parts}
    assert set(listed) == pages, (
        f"pages not in mkdocs.yml's nav: {sorted(pages - set(listed))}; "
        f"nav entries with no page: {sorted(set(listed) - pages)}"
    )


def citations() -> Iterator[tuple[str, str, str | None]]:
    """Every ``design.md`` the code, the tests and the README cite: where, the path written
    before it, and the section named after it (whitespace folded), if any."""
    files = [README, *sorted(REPO.glob("[!.]*/**/*.py"))]
    for file in files:
        if file.samefile(__file__):  # this checker names design.md as a string of its own
            continue
        text = file.read_text(errors="replace")
        for match in CITATION.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            section = " ".join(match.group(2).strip('"').split()) if match.group(2) else None
            yield f"{file.relative_to(REPO)}:{line}", match.group(1), section


def test_every_cited_design_is_a_section_of_docs_design_md() -> None:
    sections = set(headings(DESIGN))
    found = list(citations())
    assert found, "no file cites docs/design.md: the search is broken"
    wrong = [
        f"{where}: {before}design.md" for where, before, _ in found if not before.endswith("docs/")
    ]
    missing = [
        f'{where}: "{section}"'
        for where, _, section in found
        if section is not None and section not in sections
    ]
    assert not wrong, f"cite the design as docs/design.md: {wrong}"
    assert not missing, f"sections that docs/design.md has no heading for: {missing}"


def test_every_page_the_code_names_exists() -> None:
    """Messages and docstrings that send a user to docs/NAME.md send them to a page."""
    packages = ("core", "pricing", "policy", "executor", "dashboard", "spotwise")
    named = {
        (str(file.relative_to(REPO)), page)
        for package in packages
        for file in (REPO / package).rglob("*.py")
        for page in re.findall(r"docs/[\w/-]+\.md", file.read_text(errors="replace"))
    }
    assert named, "no module names a page of docs/: the search is broken"
    missing = sorted(f"{file}: {page}" for file, page in named if not (REPO / page).is_file())
    assert not missing, f"pages the code names that docs/ lacks: {missing}"


def test_every_command_and_option_is_named_on_a_page() -> None:
    """On a page of its own words, not only in the reference written from --help."""
    sys.path.insert(0, str(DOCS / "hooks"))
    try:
        import typer
        from cli_reference import commands

        from spotwise.cli import app
    finally:
        sys.path.pop(0)
    text = "\n".join(p.read_text() for p in DOCS.rglob("*.md") if p.name != "cli.md")
    unnamed = []
    for name, command in commands(typer.main.get_command(app)):
        if name not in text:
            unnamed.append(name)
        for param in command.params:
            names = [o for o in (*param.opts, *param.secondary_opts) if o.startswith("--")]
            if param.param_type_name != "option" or param.hidden or not names:
                continue
            if not any(re.search(re.escape(o) + r"(?![\w-])", text) for o in names):
                unnamed.append(f"{name} {names[0]}")
    assert len(unnamed) == 0, f"commands and options no page of docs/ names: {unnamed}"


@pytest.mark.slow
def test_the_readmes_script_trains_and_resumes_as_printed(tmp_path: Path) -> None:
    """The README's stranger's script, saved as my_train.py and run twice: the first run
    trains and checkpoints, the second resumes from its checkpoint and ends where it did."""
    script = re.search(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert script is not None, "the README has no Python script"
    (tmp_path / "my_train.py").write_text(script.group(1))
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("SPOTWISE_STORE", None)
    train = [sys.executable, "my_train.py"]
    runs = [
        subprocess.run(train, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        for _ in range(2)
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr[-2000:]
    first, again = (run.stdout.splitlines() for run in runs)
    assert first[-1] == again[-1] == "trained: step 1024"
    assert any(line.startswith("step-") for line in os.listdir(tmp_path / "ckpt"))
    assert any('"event": "resumed"' in line for line in again), again[:5]
