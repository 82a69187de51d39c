"""`rumble settings`: every setting's value and where it came from (default, RUMBLE_<NAME>, --db,
/admin), read from the database without changing it, secrets masked."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from rumble import settings, store
from rumble.admin_tokens import new_token, token_id
from rumble.cli import cli
from rumble.overrides import load as load_overrides
from rumble.overrides import set_clients, set_rumble
from rumble.protocol.games import load_rumbles

DEFAULTS = {setting.name: setting.default for setting in settings.SETTINGS}
WIDTH = max(len(name) for name in DEFAULTS) + 2  # the names' column: the longest name and two spaces


def line(name: str, value: object, source: str) -> str:
    return f"{name:<{WIDTH}}{value}  ({source})"


@pytest.fixture(autouse=True)
def no_rumble_variables(monkeypatch):
    """Only what a test sets: none of the RUMBLE_* variables of the shell that runs the suite."""
    for name in list(os.environ):
        if name.startswith("RUMBLE_"):
            monkeypatch.delenv(name)


def _settings(*args: str, env: dict[str, str] | None = None):
    result = CliRunner().invoke(cli, ["settings", *args], env=env, catch_exceptions=False)
    return result, result.output.splitlines()


def test_each_source_is_named_on_its_settings_line(tmp_path):
    path = str(tmp_path / "rumble.db")
    store.connect(path).close()
    connections = DEFAULTS["CONNECTIONS"] * 2
    page_requests = DEFAULTS["PAGE_REQUESTS"]
    result, lines = _settings("--db", path, env={"RUMBLE_CONNECTIONS": str(connections)})
    assert result.exit_code == 0
    assert line("DB", path, "--db") in lines
    assert line("CONNECTIONS", connections, "environment RUMBLE_CONNECTIONS") in lines
    assert line("PAGE_REQUESTS", page_requests, "default") in lines
    assert line("ACCEPTED_CLIENTS", ",".join(DEFAULTS["ACCEPTED_CLIENTS"]), "default") in lines
    assert line("MAX_BATTLE_AGE_HOURS", float(DEFAULTS["MAX_BATTLE_AGE_HOURS"]), "default") in lines
    assert line("CLOCK", "the system clock (UTC)", "default") in lines
    assert line("EXPORT_DIR", tmp_path.resolve() / "exports", "default") in lines
    # every setting once, in the order they are declared
    names = [text.split()[0] for text in lines[1 : 1 + len(DEFAULTS)]]
    assert names == [setting.name for setting in settings.SETTINGS]


def test_the_database_can_come_from_the_environment_and_an_option_wins_over_it(tmp_path):
    env_db, option_db = str(tmp_path / "env.db"), str(tmp_path / "option.db")
    _, lines = _settings(env={"RUMBLE_DB": env_db})
    assert line("DB", env_db, "environment RUMBLE_DB") in lines
    _, lines = _settings("--db", option_db, env={"RUMBLE_DB": env_db})
    assert line("DB", option_db, "--db") in lines


def test_values_set_from_admin_are_shown_over_what_they_replace(tmp_path):
    path = str(tmp_path / "rumble.db")
    rumbles = load_rumbles()
    base = rumbles["teamrumble"]
    rounds = base.rounds + 1
    conn = store.connect(path)
    try:
        with store.write(conn):
            set_clients(conn, ("1.9.3.9", "1.10.3"), "2026-01-01 00:00:00.000", "alice")
            set_rumble(conn, base, "rounds", rounds, "2026-01-01 00:00:00.000", "alice")
        assert load_overrides(conn).rumble(base).rounds == rounds
    finally:
        conn.close()
    default_clients = ",".join(DEFAULTS["ACCEPTED_CLIENTS"])
    result, lines = _settings("--db", path)
    assert result.exit_code == 0
    assert (
        line(
            "ACCEPTED_CLIENTS",
            "1.9.3.9,1.10.3",
            f"/admin, stored in the database; under it {default_clients} from default",
        )
        in lines
    )
    teams = [text for text in lines if text.startswith("teamrumble ")]
    assert teams == [
        f"{'teamrumble':<{max(map(len, rumbles)) + 2}}rounds={rounds} field={base.field} "
        f"melee={str(base.melee).lower()} teams={str(base.teams).lower()}  (rumbles file; rounds from /admin)"
    ]
    roborumble = rumbles["roborumble"]
    assert any(
        text.startswith("roborumble ")
        and text.endswith(
            f"rounds={roborumble.rounds} field={roborumble.field} melee=false teams=false  (rumbles file)"
        )
        for text in lines
    )


def test_admin_over_an_environment_variable_names_both(tmp_path):
    path = str(tmp_path / "rumble.db")
    conn = store.connect(path)
    try:
        with store.write(conn):
            set_clients(conn, ("1.10.3",), "2026-01-01 00:00:00.000", "alice")
    finally:
        conn.close()
    _, lines = _settings("--db", path, env={"RUMBLE_ACCEPTED_CLIENTS": "1.9.3.9, 1.9.3.8"})
    assert (
        line(
            "ACCEPTED_CLIENTS",
            "1.10.3",
            "/admin, stored in the database; under it 1.9.3.9,1.9.3.8 from environment RUMBLE_ACCEPTED_CLIENTS",
        )
        in lines
    )


def test_it_reads_the_database_without_creating_or_changing_it(tmp_path):
    missing = tmp_path / "none" / "rumble.db"
    result, lines = _settings("--db", str(missing))
    assert result.exit_code == 0
    assert not missing.exists() and not missing.parent.exists()
    assert any(f"no database at {missing} yet" in text for text in lines)

    path = tmp_path / "rumble.db"
    store.connect(path).close()
    before = path.read_bytes()
    assert _settings("--db", str(path))[0].exit_code == 0
    assert path.read_bytes() == before


def test_secrets_are_masked_and_unknown_variables_named(tmp_path):
    token = new_token()
    secret = token.rsplit("_", 1)[1]
    result, lines = _settings(
        "--db",
        str(tmp_path / "rumble.db"),
        env={"RUMBLE_ADMIN_TOKEN": token, "RUMBLE_THREAD": "4", "RUMBLE_SOME_PASSWORD": "hunter2"},
    )
    assert secret not in result.output and "hunter2" not in result.output
    assert f"RUMBLE_ADMIN_TOKEN  set: token id {token_id(token)}, secret masked" in lines
    assert "RUMBLE_THREAD  set, but no setting of that name: ignored (its value is not shown)" in lines
    assert "RUMBLE_SOME_PASSWORD  set, but no setting of that name: ignored (its value is not shown)" in lines


def test_an_unreadable_environment_variable_is_named(tmp_path):
    result = CliRunner().invoke(
        cli, ["settings", "--db", str(tmp_path / "rumble.db")], env={"RUMBLE_CONNECTIONS": "many"}
    )
    assert result.exit_code == 1
    assert "RUMBLE_CONNECTIONS='many'" in result.output


def test_origins_agree_with_load():
    environ = {"RUMBLE_CONNECTIONS": "3", "RUMBLE_CLOCK": "anything"}
    values = settings.load({"DB": "/x.db"}, environ=environ)
    found = settings.origins({"DB": "/x.db"}, environ=environ)
    assert found["DB"] == "given" and values["DB"] == "/x.db"
    assert found["CONNECTIONS"] == "RUMBLE_CONNECTIONS" and values["CONNECTIONS"] == 3
    assert found["CLOCK"] == "default"  # the clock is never read from the environment
    assert found["PAGE_REQUESTS"] == "default" and values["PAGE_REQUESTS"] == DEFAULTS["PAGE_REQUESTS"]
    assert set(found) == set(DEFAULTS)


def test_serve_help_names_where_the_settings_are_documented():
    result = CliRunner().invoke(cli, ["serve", "--help"], terminal_width=200)
    assert result.exit_code == 0
    assert "README's Settings section" in result.output and "`rumble settings`" in result.output
