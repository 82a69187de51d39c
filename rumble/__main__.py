from rumble.cli import cli

cli()
