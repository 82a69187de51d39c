"""Dependencies point one way: the pure packages load neither Flask nor the database."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import rumble


def test_pure_packages_import_neither_flask_nor_sqlite():
    code = (
        "import sys, rumble.protocol.upload, rumble.protocol.replies, rumble.protocol.games, "
        "rumble.rankings.scores, rumble.rankings.batch, rumble.ratings.online, rumble.ingest.priority\n"
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


def _imports() -> tuple[set[str], list[tuple[str, str, str | None]]]:
    """Every rumble module, and every import of a rumble module or name by one (those inside
    functions too): (importer, imported module, imported name or None)."""
    import ast
    from pathlib import Path

    root = Path(rumble.__file__).parent
    modules = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    found = []
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found += [(name, alias.name, None) for alias in node.names if alias.name.startswith("rumble")]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
                if base.startswith("rumble"):
                    for alias in node.names:
                        full = f"{base}.{alias.name}"
                        found.append((name, full, None) if full in modules else (name, base, alias.name))
    return set(modules), found


def test_no_import_cycles_counting_imports_inside_functions():
    import networkx as nx

    modules, found = _imports()
    graph = nx.DiGraph((a, b) for a, b, _ in found if b in modules and a != b)
    cycles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert cycles == []


def test_no_private_name_is_imported_from_another_module():
    _, found = _imports()
    assert [(a, f"{b}.{name}") for a, b, name in found if name and name.startswith("_")] == []


def test_the_cycle_check_sees_imports_inside_functions(tmp_path, monkeypatch):
    """The check would catch a cycle closed by an import inside a function (as warm_up's once was)."""
    import networkx as nx

    _, found = _imports()
    inside = [(a, b) for a, b, _ in found if a == "rumble.cli" and b == "rumble.ratings.online"]
    assert inside, "rumble.cli imports rumble.ratings.online inside serve()"
    graph = nx.DiGraph((a, b) for a, b, _ in found)
    graph.add_edge("rumble.ratings.online", "rumble.cli")  # as if online imported the CLI back
    assert any(len(c) > 1 for c in nx.strongly_connected_components(graph))


def test_no_module_name_is_used_in_two_packages():
    """A module's name tells its layer: store.melee_battles beside melee, never two modules called
    melee that every importer must alias apart."""
    from collections import defaultdict
    from pathlib import Path

    root = Path(rumble.__file__).parent
    where = defaultdict(list)
    for path in root.rglob("*.py"):
        if path.name not in ("__init__.py", "__main__.py"):
            where[path.stem].append(str(path.parent.relative_to(root.parent)))
    assert {name: places for name, places in where.items() if len(places) > 1} == {}


def test_rumble_modules_are_imported_under_their_own_names():
    """No `from rumble.store import x as y`: with unique module names an alias only hides which
    module a call goes to."""
    import ast
    from pathlib import Path

    root = Path(rumble.__file__).parent
    modules, _ = _imports()
    aliased = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rumble"):
                aliased += [
                    f"{path.relative_to(root.parent)}: {node.module}.{a.name} as {a.asname}"
                    for a in node.names
                    if a.asname and f"{node.module}.{a.name}" in modules
                ]
    assert aliased == []


def test_the_layers_below_the_web_import_no_web_module():
    """The upload's logic lives in rumble.ingest.apply; the writer process (rumble.server.single_writer) runs
    it without the web layer, and no layer below the web reaches up into it."""
    _, found = _imports()
    below = ("rumble.store", "rumble.ingest", "rumble.rankings", "rumble.ratings", "rumble.protocol", "rumble.server")
    upward = [(a, b) for a, b, _ in found if a.startswith(below) and b.startswith("rumble.web")]
    assert upward == []


def test_the_command_line_does_not_import_the_web_layer():
    _, found = _imports()
    assert [(a, b) for a, b, _ in found if a.startswith("rumble.cli") and b.startswith("rumble.web")] == []


def test_the_store_runs_sql_and_transactions_and_manages_no_process():
    """rumble.store holds SQL and transactions only: the processes, sockets and event loop of
    serving live in rumble.server, which the store never imports."""
    root = Path(rumble.__file__).parent
    managing = {"subprocess", "multiprocessing", "socket", "selectors", "signal", "greenlet", "gunicorn"}
    found = []
    for path in (root / "store").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            found += [(path.name, n) for n in names if n.split(".")[0] in managing or n.startswith("rumble.server")]
    assert found == []


def test_the_top_level_holds_few_modules_and_the_packages_show_the_layers():
    """Directly under rumble/ only the app factory, the entry point, settings and a few small shared
    helpers; everything else sits in the package of its layer."""
    root = Path(rumble.__file__).parent
    top = sorted(p.name for p in root.glob("*.py"))
    assert len(top) <= 8, top
    packages = {p.parent.name for p in root.glob("*/__init__.py")}
    layers = {"cli", "server", "ingest", "maintenance", "schedule", "protocol", "store", "ratings", "rankings", "web"}
    assert packages == layers


def test_the_app_factory_registers_every_blueprint(tmp_path):
    """Every blueprint a web module defines is registered by create_app (rumble/app.py), none by
    another view module as a side effect of importing it (the admin uploaders' nested one aside)."""
    import ast
    import importlib
    from pathlib import Path

    from flask import Blueprint

    from rumble.app import create_app

    app = create_app({"DB": str(tmp_path / "r.db")})
    defined = {}  # module -> the name of the blueprint it defines
    for path in (Path(rumble.__file__).parent / "web").glob("*.py"):
        module = importlib.import_module(f"rumble.web.{path.stem}")
        defined.update((path.stem, v.name) for v in vars(module).values() if isinstance(v, Blueprint))
    registered = {name.rsplit(".", 1)[-1] for name in app.blueprints}
    assert len(defined) >= 8 and set(defined.values()) <= registered
    factory = ast.parse((Path(rumble.__file__).parent / "app.py").read_text())
    calls = {
        node.args[0].value.id
        for node in ast.walk(factory)
        if isinstance(node, ast.Call)
        and getattr(node.func, "attr", "") == "register_blueprint"
        and isinstance(node.args[0], ast.Attribute)
        and isinstance(node.args[0].value, ast.Name)
    }
    assert calls == set(defined) - {"admin_uploaders"}  # nested under /admin, its endpoints admin.uploaders.*


def _functions_whose_sql_matches(pattern: str) -> list[tuple[str, ast.FunctionDef]]:
    """Every function of the package with a string constant matching ``pattern`` (case ignored),
    as ("path/in/package.py:name", its definition)."""
    writes = re.compile(pattern, re.IGNORECASE)
    root = Path(rumble.__file__).parent
    found = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and any(
                isinstance(n, ast.Constant) and isinstance(n.value, str) and writes.search(n.value)
                for n in ast.walk(node)
            ):
                found.append((f"{path.relative_to(root)}:{node.name}", node))
    return found


def test_every_write_to_what_the_waiting_copy_reads_tells_it():
    """rumble.store.waiting keeps a connection's copy of the waiting priority battles while this
    connection does not change them: every function whose SQL writes the queue, the participants
    or the battle log must drop the copies (``waiting.forget``) or, for a new battle,
    its pair's sole uploader (``waiting.battle_stored``)."""
    writers = _functions_whose_sql_matches(
        r"\b(INSERT(\s+OR\s+\w+)?\s+INTO|UPDATE|DELETE\s+FROM|REPLACE\s+INTO)\s+(battles|participants|priority_battles)\b"
    )
    silent = []
    for name, node in writers:
        calls = {
            n.func.attr
            for n in ast.walk(node)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and isinstance(n.func.value, ast.Name)
            and n.func.value.id == "waiting"
        }
        if not calls & {"forget", "battle_stored"} and node.name != "_mark":  # _mark updates the copy itself
            silent.append(name)
    assert len(writers) >= 10  # the check finds them: battle_log, battle_states, bots, priority_queue, ...
    assert silent == []


def test_every_write_to_what_the_ratings_copies_follow_is_noted():
    """rumble.ingest.fields takes a copy as current without asking the database while no connection
    wrote what ``rating_rows.version`` reads: every function whose SQL adds to or deletes from the
    battle log or the participant events, or changes a rumble's generation, calls
    ``note_log_write`` (tests/store/test_field_copy.py checks the copies themselves)."""
    writers = _functions_whose_sql_matches(
        r"\b((INSERT(\s+OR\s+\w+)?|REPLACE)\s+INTO|DELETE\s+FROM)\s+(battles|participant_events)\b"
        r"|\bUPDATE\s+rumbles\s+SET\s+generation\b"
    )
    names = {name for name, _ in writers}
    assert {"store/battle_log.py:append_battle", "store/bots.py:record_event"} <= names
    assert "store/rating_rows.py:bump_generation" in names
    silent = [
        name
        for name, node in writers
        if "note_log_write"
        not in {n.func.id for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    ]
    assert silent == []


def test_only_the_functions_that_keep_the_totals_copy_write_the_bot_summaries():
    """rumble.store.pairings keeps a connection's copy of the summaries' totals: ``put_totals``
    updates it, ``clear_totals`` and ``clear_rumble`` drop it. No other function may write the table."""
    writers = {
        (name, bool({n.id for n in ast.walk(node) if isinstance(n, ast.Name)} & {"_TOTALS_KEY", "_totals_copy"}))
        for name, node in _functions_whose_sql_matches(
            r"\b(INSERT(\s+OR\s+\w+)?\s+INTO|UPDATE|DELETE\s+FROM|REPLACE\s+INTO)\s+bot_summaries\b"
        )
    }
    assert writers == {
        ("store/pairings.py:put_totals", True),
        ("store/pairings.py:clear_totals", True),
        ("store/pairings.py:clear_rumble", True),
    }
