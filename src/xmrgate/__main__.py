"""``python -m xmrgate`` runs the CLI."""

from xmrgate.cli import main

main()
