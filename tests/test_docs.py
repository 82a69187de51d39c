"""The README cannot drift: every command, setting and endpoint is documented there."""

from __future__ import annotations

from pathlib import Path

import pytest

from rumble.cli import cli
from rumble.settings import SETTINGS

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", sorted(cli.commands))
def test_every_command_is_in_the_readme_and_has_help(name):
    assert f"`rumble {name}" in README
    assert cli.commands[name].help


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.name)
def test_every_setting_is_in_the_readme(setting):
    assert f"| `{setting.name}` |" in README
    assert setting.help


def test_every_endpoint_is_in_the_readme(app):
    rules = {rule.rule for rule in app.url_map.iter_rules() if rule.endpoint != "static"}
    missing = [rule for rule in rules if f" {rule}" not in README and f"`{rule}" not in README]
    assert missing == []


def test_readme_quick_start_commands_are_the_ones_ci_runs():
    ci = (Path(__file__).resolve().parent.parent / ".ci" / "run").read_text()
    assert "bash scripts/test.sh" in ci and "bash scripts/test.sh" in README
