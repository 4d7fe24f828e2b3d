"""``python -m xmrgate`` runs the CLI."""

from xmrgate.runtime.cli import main

main()
