"""``rumble participants ...`` and ``rumble competitor ...`` through click's CliRunner on real
database files: jars entered by name read from each jar, listed, withdrawn, refused with why;
accounts made, listed and revoked; a maintainer token needed once the database has a maintainer."""

from __future__ import annotations

import hashlib

from click.testing import CliRunner
from jar_support import make_jar

from rumble import store
from rumble.admin_tokens import hash_token, new_token, token_id
from rumble.cli import cli
from rumble.store import competitors, maintainers


def _run(*args: str, env: dict | None = None):
    return CliRunner().invoke(cli, list(args), env={"RUMBLE_ADMIN_TOKEN": "", **(env or {})})


def _jars(tmp_path, *names: str, team: bool = False) -> list[str]:
    paths = []
    for name in names:
        path = tmp_path / (name.replace(" ", "_") + ".jar")
        path.write_bytes(make_jar(name, team=team))
        paths.append(str(path))
    return paths


def test_participants_add_list_and_withdraw(tmp_path):
    db = str(tmp_path / "r.db")
    walls, crazy = _jars(tmp_path, "jd.Walls 1.0", "jd.Crazy 2")
    added = _run("participants", "add", "--db", db, "--game", "roborumble", walls, crazy)
    sha = hashlib.sha256(make_jar("jd.Walls 1.0")).hexdigest()
    assert added.exit_code == 0, added.output
    assert f"{walls}: jd.Walls 1.0 listed in roborumble (SHA-256 {sha})" in added.output.splitlines()
    listed = _run("participants", "list", "--db", db, "--game", "nanorumble")
    assert listed.output.splitlines() == [
        f"jd.Crazy 2\tmaintainers\t{hashlib.sha256(make_jar('jd.Crazy 2')).hexdigest()}",
        f"jd.Walls 1.0\tmaintainers\t{sha}",
    ]
    (newer,) = _jars(tmp_path, "jd.Walls 1.1")
    replaced = _run("participants", "add", "--db", db, "--game", "roborumble", newer)
    assert replaced.exit_code == 0 and replaced.output.endswith(", replacing jd.Walls 1.0\n"), replaced.output
    gone = _run("participants", "withdraw", "--db", db, "--game", "roborumble", "jd.Crazy 2")
    assert (gone.exit_code, gone.output) == (0, "jd.Crazy 2: withdrawn in roborumble\n")
    assert [
        line.split("\t")[0]
        for line in _run("participants", "list", "--db", db, "--game", "roborumble").output.splitlines()
    ] == ["jd.Walls 1.1"]
    again = _run("participants", "withdraw", "--db", db, "--game", "roborumble", "jd.Crazy 2")
    assert (again.exit_code, again.output) == (
        1,
        "Error: 'jd.Crazy 2' is not listed or waiting for approval in roborumble\n",
    )
    conn = store.connect(db)
    assert [(r["who"].startswith("cli"), r["action"]) for r in maintainers.audit_rows(conn)] == [
        (True, "withdraw"),
        (True, "enter"),
        (True, "enter"),
        (True, "enter"),
    ]
    conn.close()


def test_a_refused_jar_is_named_with_why_and_the_others_enter(tmp_path):
    db = str(tmp_path / "r.db")
    (good,) = _jars(tmp_path, "jd.Walls 1.0")
    bad = tmp_path / "broken.jar"
    bad.write_bytes(b"not a zip")
    result = _run("participants", "add", "--db", db, "--game", "roborumble", str(bad), good)
    assert result.exit_code == 1
    assert f"{bad}: refused: the file is not a jar (a zip archive)" in result.output.splitlines()
    assert result.stderr == "Error: 1 of 2 jars refused\n"
    team = _run("participants", "add", "--db", db, "--game", "teamrumble", *_jars(tmp_path, "jd.Squad 1.0", team=True))
    assert team.exit_code == 0, team.output
    unknown = _run("participants", "add", "--db", db, "--game", "nosuch", good)
    assert (unknown.exit_code, unknown.output) == (1, "Error: there is no rumble called 'nosuch'\n")


def test_competitor_accounts_and_entering_for_one(tmp_path):
    db = str(tmp_path / "r.db")
    made = _run("competitor", "create", "--db", db, "Jane")
    token = made.output.strip()
    assert made.exit_code == 0 and competitors.token_id(token) is not None
    conn = store.connect(db)
    assert competitors.check_token(conn, token)[0] == (1, "Jane")
    conn.close()
    assert (
        _run("competitor", "create", "--db", db, "Jane").output == "Error: there is already an account called 'Jane'\n"
    )
    entered = _run(
        "participants", "add", "--db", db, "--game", "roborumble", "--owner", "Jane", *_jars(tmp_path, "jd.Walls 1.0")
    )
    assert entered.exit_code == 0, entered.output
    assert _run("participants", "list", "--db", db, "--game", "roborumble").output.split("\t")[1] == "Jane"
    assert _run("competitor", "revoke", "--db", db, "Jane").output == "revoked Jane\n"
    listed = _run("competitor", "list", "--db", db).output
    assert listed.startswith("Jane\tcreated ") and "\trevoked " in listed
    conn = store.connect(db)
    assert competitors.check_token(conn, token) == (
        None,
        f"competitor token id {competitors.token_id(token)}: no valid token has this id",
    )
    conn.close()


def test_the_commands_need_a_maintainer_token_once_there_is_a_maintainer(tmp_path):
    db = str(tmp_path / "r.db")
    conn = store.connect(db)
    token = new_token()
    with store.write(conn):
        maintainers.add_maintainer(conn, "alice", token_id(token), hash_token(token), store.utc_now())
    conn.close()
    refused = _run("competitor", "create", "--db", db, "Jane")
    assert (refused.exit_code, refused.output) == (
        1,
        "Error: this command needs a maintainer token: set RUMBLE_ADMIN_TOKEN (`rumble admin create-token NAME` makes one)\n",
    )
    done = _run("participants", "approval", "--db", db, "on", env={"RUMBLE_ADMIN_TOKEN": token})
    assert (done.exit_code, done.output) == (0, "new entries wait for approval\n")
    conn = store.connect(db)
    assert maintainers.audit_rows(conn)[0]["who"] == "alice"
    conn.close()
