"""MkDocs hook: the command reference (docs/cli.md) written from the CLI itself at build time.

Each command's help, usage and options come from ``spotwise``'s own parser, so the page says
exactly what ``spotwise COMMAND --help`` says and cannot drift from it.
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from typing import Any

MARKER = "<!-- spotwise commands -->"


def commands(command: Any, path: tuple[str, ...] = ("spotwise",)) -> Iterator[tuple[str, Any]]:
    """Every leaf command under ``command``, with its full name, in the order of the help."""
    subcommands = getattr(command, "commands", None)
    if subcommands is None:
        yield " ".join(path), command
        return
    for name, sub in sorted(subcommands.items()):
        if not getattr(sub, "hidden", False):
            yield from commands(sub, (*path, name))


def _cell(text: str) -> str:
    return html.escape(" ".join(text.split()), quote=False).replace("|", "&#124;")


def section(name: str, command: Any, context_class: Any) -> str:
    """One command's section: its help, its usage and a table of its arguments and options."""
    ctx = context_class(command, info_name=name)
    usage = " ".join(command.collect_usage_pieces(ctx))
    help_text = html.escape(command.help.strip(), quote=False) if command.help else ""
    lines = [f"## {name}", "", help_text, ""]
    lines += ["```text", f"{name} {usage}", "```", ""]
    records = [p.get_help_record(ctx) for p in command.get_params(ctx)]
    rows = [r for r in records if r is not None and not r[0].startswith("--help")]
    if rows:
        lines += ["| argument or option | what |", "|---|---|"]
        lines += [f"| <code>{_cell(opts)}</code> | {_cell(what)} |" for opts, what in rows]
        lines.append("")
    return "\n".join(lines)


def reference() -> str:
    """The whole reference: every command of ``spotwise``, one section each."""
    import typer

    from spotwise.cli import app

    root = typer.main.get_command(app)
    context_class = root.context_class
    return "\n".join(section(name, cmd, context_class) for name, cmd in commands(root))


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Fill the marker of docs/cli.md in with the reference (MkDocs' page hook)."""
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, reference())
