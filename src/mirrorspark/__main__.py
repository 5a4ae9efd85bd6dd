"""``python -m mirrorspark`` runs the CLI."""
from mirrorspark.cli.app import main

main()
