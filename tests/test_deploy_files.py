"""deploy/: the systemd units say what the README's "Run it in production" promises, their command
lines are ones `rumble` accepts, and the backup unit's commands back up and keep the newest 14.
Also the README's table of contents, which that section opens."""

from __future__ import annotations

import os
import re
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from rumble import settings
from rumble.cli import cli

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
README = (ROOT / "README.md").read_text(encoding="utf-8")
INSTALLED = "/opt/rumble/bin/rumble"  # where the units expect the command (README: the virtualenv /opt/rumble)
STATE = "/var/lib/rumble"  # StateDirectory=rumble
DATABASE = f"{STATE}/rumble.db"


def unit(name: str) -> dict[str, list[tuple[str, str]]]:
    """A unit file as systemd reads it: each section's (key, value) pairs in order, repeated keys
    kept; comments and blank lines dropped, backslash-continued lines joined."""
    sections: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] | None = None
    pending = ""
    for raw in (DEPLOY / name).read_text(encoding="utf-8").splitlines():
        line = pending + raw.strip() if pending else raw.strip()
        pending = ""
        if not line or line[0] in "#;":
            continue
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], [])
            continue
        key, sep, value = line.partition("=")
        assert sep and current is not None, f"{name}: not a key=value line in a section: {raw!r}"
        current.append((key.strip(), value.strip()))
    assert pending == "", f"{name} ends in a continued line"
    return sections


def values(name: str, section: str, key: str) -> list[str]:
    return [value for found, value in unit(name).get(section, []) if found == key]


def one(name: str, section: str, key: str) -> str:
    found = values(name, section, key)
    assert len(found) == 1, f"{name} [{section}] {key}: {found}"
    return found[0]


def command_line(value: str) -> list[str]:
    """An Exec*= line's words, with systemd's escapes undone (%% is %, $$ is $) and its prefixes dropped."""
    words = shlex.split(value.replace("%%", "%").replace("$$", "$"))
    words[0] = words[0].lstrip("-@:+!")
    return words


PRODUCTION = README.split("\n## Run it in production\n", 1)[1].split("\n## ", 1)[0].replace("\n  ", " ")
# The options the README's "Run it in production" names: the unit's value, and the README's words for it.
SERVER_PROMISES = [
    ("User", "rumble", "as user `rumble`"),
    ("Group", "rumble", None),
    ("UMask", "0077", "`UMask=0077`"),
    ("Restart", "on-failure", "`Restart=on-failure`"),
    ("StateDirectory", "rumble", "`StateDirectory=rumble`, mode 0700"),
    ("StateDirectoryMode", "0700", "`StateDirectory=rumble`, mode 0700"),
    ("Type", "notify", "`Type=notify`"),
    ("NoNewPrivileges", "yes", "`NoNewPrivileges`"),
    ("ProtectSystem", "strict", "`ProtectSystem=strict`"),
    ("ProtectHome", "yes", "`ProtectHome`"),
    ("PrivateTmp", "yes", "`PrivateTmp`"),
    ("PrivateDevices", "yes", "`PrivateDevices`"),
    ("PrivateUsers", "yes", "`PrivateUsers`"),
    ("ProtectKernelTunables", "yes", "`ProtectKernelTunables`"),
    ("ProtectKernelModules", "yes", "`ProtectKernelModules`"),
    ("ProtectKernelLogs", "yes", "`ProtectKernelLogs`"),
    ("RestrictAddressFamilies", "AF_UNIX AF_INET AF_INET6", "`RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6`"),
    ("CapabilityBoundingSet", "", "no capabilities"),
    ("IPAddressAllow", "localhost", "`IPAddressAllow=localhost`"),
    (
        "Environment",
        "NUMBA_CACHE_DIR=/var/cache/rumble/numba MPLCONFIGDIR=/var/cache/rumble/matplotlib PYTHONUNBUFFERED=1",
        "`NUMBA_CACHE_DIR`, `MPLCONFIGDIR`",
    ),
]


@pytest.mark.parametrize("key, value, words", SERVER_PROMISES, ids=[key for key, _, _ in SERVER_PROMISES])
def test_the_server_unit_sets_what_the_readme_promises(key, value, words):
    assert one("rumble.service", "Service", key) == value
    assert words is None or words in PRODUCTION


def test_the_system_calls_are_filtered_and_memory_may_be_written_then_executed():
    assert "@system-service" in values("rumble.service", "Service", "SystemCallFilter")
    assert "`SystemCallFilter=@system-service`" in PRODUCTION
    for name in ("rumble.service", "rumble-backup.service"):
        # numba's compiler needs it: the option is absent, and a comment says why
        assert values(name, "Service", "MemoryDenyWriteExecute") == []
        text = (DEPLOY / name).read_text()
        assert re.search(r"^# No MemoryDenyWriteExecute=yes: .*numba", text, re.MULTILINE)


def test_the_server_command_line_is_one_rumble_serve_accepts():
    words = command_line(one("rumble.service", "Service", "ExecStart"))
    assert words[0] == INSTALLED and words[1] == "serve"
    serve = cli.commands["serve"]
    serve.make_context("serve", words[2:])  # parses and checks every option as `rumble serve` would, running nothing
    options = [word for word in words[2:] if word.startswith("--")]
    assert options == ["--db", "--host", "--port"]
    help_text = CliRunner().invoke(cli, ["serve", "--help"]).output
    for option in options:
        assert option in help_text
    arguments = dict(zip(words[2::2], words[3::2]))
    assert arguments["--db"] == DATABASE
    assert arguments["--host"] == "127.0.0.1"  # nginx on this machine: IPAddressAllow=localhost
    assert f"`{INSTALLED} serve {' '.join(words[2:])}`" in PRODUCTION


def test_the_units_read_the_same_settings_and_the_example_names_real_settings():
    for name in ("rumble.service", "rumble-backup.service"):
        assert "-/etc/rumble/rumble.env" in values(name, "Service", "EnvironmentFile")
    declared = {"RUMBLE_" + setting.name for setting in settings.SETTINGS}
    named = re.findall(r"^#?\s*(RUMBLE_[A-Z_]+)=", (DEPLOY / "rumble.env").read_text(), re.MULTILINE)
    assert named and set(named) <= declared
    assert "RUMBLE_TRUSTED_PROXIES=1" in (DEPLOY / "rumble.env").read_text().splitlines()


def test_the_backup_unit_runs_rumble_backup_as_the_server_user_into_its_state_directory():
    name = "rumble-backup.service"
    assert one(name, "Service", "Type") == "oneshot"
    assert one(name, "Service", "User") == "rumble"
    assert one(name, "Service", "UMask") == "0077"
    assert one(name, "Unit", "ConditionPathExists") == DATABASE  # never makes an empty database
    assert one(name, "Service", "StateDirectory").split() == ["rumble", "rumble/backups"]
    shell, flag, script = command_line(one(name, "Service", "ExecStart"))
    assert (shell, flag) == ("/bin/sh", "-c")
    words = shlex.split(script)
    assert words[:5] == ["exec", INSTALLED, "backup", "--db", DATABASE]
    assert words[5].startswith(f"{STATE}/backups/rumble-") and words[5].endswith(".db")
    cli.commands["backup"].make_context("backup", words[3:])


def test_the_timer_starts_the_backup_daily_and_makes_up_missed_days():
    name = "rumble-backup.timer"
    assert one(name, "Timer", "OnCalendar").startswith("*-*-* ")  # every day
    assert one(name, "Timer", "Persistent") == "true"
    assert one(name, "Install", "WantedBy") == "timers.target"
    assert values(name, "Timer", "Unit") in ([], ["rumble-backup.service"])  # the default: the same name
    assert "systemctl enable --now rumble rumble-backup.timer" in PRODUCTION


@pytest.fixture
def backups(tmp_path):
    """The backup unit's ExecStart and ExecStartPost, run as written with the paths moved into tmp_path."""
    state = tmp_path / "state"
    (state / "backups").mkdir(parents=True)  # systemd makes it (StateDirectory=rumble/backups)
    rumble = str(Path(sys.executable).parent / "rumble")
    env = {name: value for name, value in os.environ.items() if not name.startswith("RUMBLE_")}

    def run(key: str) -> None:
        for value in values("rumble-backup.service", "Service", key):
            words = [word.replace(INSTALLED, rumble).replace(STATE, str(state)) for word in command_line(value)]
            subprocess.run(words, check=True, env=env, capture_output=True, timeout=300)

    result = CliRunner().invoke(cli, ["demo", "--db", str(state / "rumble.db"), "--battles", "20"])
    assert result.exit_code == 0, result.output
    return state / "backups", run


def test_the_backup_commands_make_a_0600_backup_and_keep_the_newest_14(backups):
    folder, run = backups
    older = [folder / f"rumble-2000010{day}T000000Z.db" for day in range(1, 10)] + [
        folder / f"rumble-200002{day:02}T000000Z.db" for day in range(10, 20)
    ]
    for path in older:
        path.write_text("an older backup")
    (folder / "notes.txt").write_text("not a backup: left alone")
    run("ExecStart")
    made = sorted(set(folder.glob("rumble-*.db")) - set(older))
    assert len(made) == 1 and re.fullmatch(r"rumble-\d{8}T\d{6}Z\.db", made[0].name)
    assert stat.S_IMODE(made[0].stat().st_mode) == 0o600
    run("ExecStartPost")
    kept = sorted(path.name for path in folder.glob("rumble-*.db"))
    assert kept == sorted(path.name for path in [*older, made[0]])[-14:]
    assert made[0].name in kept and (folder / "notes.txt").exists()
    assert "keeps the newest 14 backups" in PRODUCTION


def test_the_readme_lists_every_section_at_the_top():
    sections = re.findall(r"^## (.+)$", README, re.MULTILINE)
    contents = README.split("\n## ", 1)[0]
    listed = re.findall(r"^- \[(.+)\]\(#([^)]+)\)$", contents, re.MULTILINE)
    assert [title for title, _ in listed] == sections
    for title, anchor in listed:  # GitHub's anchors: lower case, punctuation dropped, spaces to hyphens
        assert anchor == re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
    assert sections.index("Run it in production") == sections.index("Quick start") + 1
