"""Dependencies point one way: the pure packages load neither Flask nor the database."""

from __future__ import annotations

import subprocess
import sys

import rumble


def test_pure_packages_import_neither_flask_nor_sqlite():
    code = (
        "import sys, rumble.protocol.upload, rumble.protocol.replies, rumble.protocol.games, "
        "rumble.rankings.scores, rumble.rankings.batch, rumble.ratings.online, rumble.priority\n"
        "bad = [m for m in ('flask', 'sqlite3', 'sqlite_utils', 'rumble.store', 'rumble.web') if m in sys.modules]\n"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""


def test_sql_lives_only_in_the_store():
    """No module outside rumble/store/ runs SQL (a crude but effective check for SQL keywords)."""
    from pathlib import Path

    root = Path(rumble.__file__).parent
    offenders = []
    for path in root.rglob("*.py"):
        if "store" in path.relative_to(root).parts:
            continue
        text = path.read_text()
        if any(word in text for word in ("SELECT ", "INSERT ", "UPDATE ", "DELETE FROM", ".execute(")):
            offenders.append(str(path.relative_to(root)))
    assert offenders == []


def test_every_package_ships_in_an_installed_copy():
    """pyproject.toml lists the packages by hand (for rumble.migrations): a new one must be added there."""
    import tomllib
    from pathlib import Path

    root = Path(rumble.__file__).parent
    listed = set(tomllib.loads((root.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(root.parent).parts) for p in root.rglob("__init__.py")}
    assert found | {"rumble.migrations"} == listed
