"""``python -m aifabric`` runs the command-line tool."""

from aifabric.cli.app import main

main()
