"""``python -m spotwise``: the same as the ``spotwise`` command."""

from spotwise.cli import main

main()
