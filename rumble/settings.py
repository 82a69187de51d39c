"""Every setting of the server, declared once with its default and its meaning.

A setting is read, in order of precedence, from the mapping a test passes to ``create_app``,
from a ``RUMBLE_<NAME>`` environment variable, and from the default here. ``tests/test_docs.py``
checks that the README documents each one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rumble.clock import Clock


@dataclass(frozen=True)
class Setting:
    name: str
    default: Any
    help: str
    parse: Callable[[str], Any] = str


def _csv(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(",") if part.strip())


def _networks(value: str) -> tuple[str, ...]:
    """Comma-separated addresses or networks (``192.0.2.7``, ``10.0.0.0/8``, ``::1``), each checked."""
    import ipaddress

    found = []
    for part in _csv(value):
        try:
            found.append(str(ipaddress.ip_network(part, strict=False)))
        except ValueError:
            raise ValueError(f"{part!r} is not an IP address or network (such as 192.0.2.7 or 10.0.0.0/8)") from None
    return tuple(found)


def _sha256_hex(value: str) -> str | None:
    """A SHA-256 digest written as 64 hexadecimal digits (as ``sha256sum`` prints it), or None when empty."""
    digest = value.strip().lower()
    if not digest:
        return None
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise ValueError("not a SHA-256 digest: 64 hexadecimal digits, as sha256sum prints them")
    return digest


def _yes(value: str) -> bool:
    """A yes/no setting: 1, true, yes or on (any case) is yes; anything else no."""
    return value.strip().lower() in ("1", "true", "yes", "on")


def default_db_path(environ: Mapping[str, str] | None = None) -> Path:
    """The database file used when neither --db nor RUMBLE_DB names one (XDG data directory)."""
    env: Mapping[str, str] = os.environ if environ is None else environ
    base = env.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "rumble" / "rumble.db"


SETTINGS = (
    Setting("DB", None, "Path of the SQLite database file (default: ~/.local/share/rumble/rumble.db)."),
    Setting(
        "RUMBLES_FILE",
        None,
        "TOML file of rumbles and their settings (default: the stock rumbles shipped in rumble/rumbles.toml).",
        str,
    ),
    Setting(
        "ACCEPTED_CLIENTS", ("1.9.3.9",), "Comma-separated Robocode client versions whose uploads are accepted.", _csv
    ),
    Setting("MAX_BATTLE_AGE_HOURS", 24.0, "Uploads whose battle `time` is older than this are refused.", float),
    Setting(
        "MAX_CLOCK_SKEW_MINUTES",
        60.0,
        "Uploads whose battle `time` lies further than this in the future are refused.",
        float,
    ),
    Setting("MAX_UPLOAD_BYTES", 4096, "Largest accepted upload body; a real one is about 250 bytes.", int),
    Setting("PRIORITY_BATCH", 8, "Priority battles chosen at once when a rumble's queue runs empty.", int),
    Setting(
        "PRIORITY_MIN_BATTLES",
        3,
        "Pairings with fewer battles than this come before the confidence-interval ranking.",
        int,
    ),
    Setting(
        "PRIORITY_HOLD_MINUTES",
        10.0,
        "A pairing handed out as a priority battle is not handed out again for this long.",
        float,
    ),
    Setting(
        "BATCH_INTERVAL_MINUTES",
        60.0,
        "Minutes between scheduled batch-ranking runs of the rumbles whose log changed (one server process runs them); 0 turns the schedule off.",
        float,
    ),
    Setting(
        "REMOVALS_PER_HOUR",
        120,
        "RemoveOldParticipant requests one address may make in an hour; beyond that they are refused (and logged).",
        int,
    ),
    Setting(
        "ADMIN_SESSION_MINUTES",
        60.0,
        "A maintainer's browser login lasts this long, then the login page asks for the token again.",
        float,
    ),
    Setting(
        "SYNCHRONOUS",
        "NORMAL",
        "SQLite synchronous pragma: NORMAL survives a crash of the server (WAL); FULL also a power loss.",
        str,
    ),
    Setting(
        "CLOCK",
        None,
        "The server's clock (a rumble.clock.Clock; the system's UTC time by default). Only code sets it, tests above all.",
        lambda raw: None,
    ),
    Setting(
        "ADMIN_FAILURES_PER_HOUR",
        20,
        "Failed maintainer logins, bad tokens and dead sessions one address may present to /admin in an hour; beyond that it is answered 429 without any token being checked.",
        int,
    ),
    Setting(
        "REMOVAL_TRUST_DAYS",
        7.0,
        "A RemoveOldParticipant request counts only from an address that uploaded accepted battles to that rumble within this many days, the newest of them by an established uploader.",
        float,
    ),
    Setting(
        "NEW_BOTS_PER_HOUR",
        50,
        "New bots (names no upload gave before) one address may add in an hour; an upload naming one more is refused.",
        int,
    ),
    Setting(
        "NEW_BOTS_PER_HOUR_PER_RUMBLE",
        100,
        "New participants a rumble takes in an hour from uploaders that are not established; an upload adding one more is refused (an established uploader's newcomers are always taken).",
        int,
    ),
    Setting(
        "STRANGER_BATTLES_PER_BOT_PER_DAY",
        20,
        "Battles of one bot a day that count from one uploader that is not established, once some uploader is vouched for; more are held for review (0: no bound).",
        int,
    ),
    Setting(
        "UNCONFIRMED_BOT_DAYS",
        7,
        "Days a bot that joined once some uploader was vouched for may stay without one battle from an established uploader; the hourly run then retires it (0: never).",
        int,
    ),
    Setting(
        "MAX_PARTICIPANTS",
        3000,
        "Participants (active or retired) a rumble may hold; an upload adding one more is refused, unless it comes from an established uploader.",
        int,
    ),
    Setting(
        "CONNECTIONS",
        1000,
        "Connections one `rumble serve` worker holds at once (gunicorn's worker_connections), within the open-files limit.",
        int,
    ),
    Setting(
        "COUNTS_SAVE_SECONDS",
        30.0,
        "How often each `rumble serve` worker saves the upload and refused-removal counts it keeps in memory (seconds); it also saves them as it stops.",
        float,
    ),
    Setting(
        "READ_TIMEOUT_SECONDS",
        10.0,
        "A request's headers must arrive within this many seconds (of the connection's opening, or of the previous answer on a kept-alive connection), and its body within as many again; else the connection is closed (an unfinished body is first answered as unreadable).",
        float,
    ),
    Setting(
        "SEND_TIMEOUT_SECONDS",
        30.0,
        "A client that takes less than a 64 KB block of its answer in this many seconds is disconnected.",
        float,
    ),
    Setting(
        "PAGE_REQUESTS",
        8,
        "Requests other than the client's (pages, JSON API, plots, exports, /admin) served at once per worker; more are answered 503 with Retry-After. Uploads never wait for them.",
        int,
    ),
    Setting(
        "PAGES_IN_THREADS",
        True,
        "Serve page, API, plot and export GETs in a pool of threads per `rumble serve` worker, so that their computing does not hold up the worker's uploads (no: in their greenlet).",
        _yes,
    ),
    Setting(
        "PAGE_CACHE_SECONDS",
        15.0,
        "A page, JSON API answer or plot is built once and served again (with its ETag; a repeat that sends it gets 304) while nothing in the database changed, for at most a minute; while uploads change it, for this many seconds: how far behind the log a page may be. 0: rebuilt after every change.",
        float,
    ),
    Setting(
        "PAGE_CACHE_MB", 32, "Memory per worker for the built pages kept (least recently served dropped first).", int
    ),
    Setting("EXPORT_REQUESTS", 2, "Of the PAGE_REQUESTS, how many may be exports or plots at once per worker.", int),
    Setting(
        "TRUSTED_PROXIES",
        0,
        "Reverse proxies in front of the server whose X-Forwarded-For and X-Forwarded-Proto are believed (werkzeug's ProxyFix); 0: the connection's own address is the client's.",
        int,
    ),
    Setting(
        "EXPORT_DIR",
        None,
        "Folder of the bulk exports' snapshot files (default: exports/ beside the database file).",
        str,
    ),
    Setting(
        "EXPORT_MAX_AGE_MINUTES",
        5.0,
        "An export's snapshot is still served this long after its rumble changed; then the next request writes a new one (0: on the first request after any change).",
        float,
    ),
    Setting(
        "EXPORT_WAIT_SECONDS",
        2.0,
        "How long a request for an export waits for its snapshot being written before it is served the previous one (or, with none, a 503 with Retry-After).",
        float,
    ),
    Setting(
        "EXPORT_BUILDS",
        1,
        "Export snapshots that may be written at once, across all workers; a request that finds none free serves the previous snapshot.",
        int,
    ),
    Setting(
        "MAX_JAR_BYTES",
        4 * 1024 * 1024,
        "Largest bot jar a competitor may enter (bytes); a larger upload is refused before it is read.",
        int,
    ),
    Setting("MAX_JAR_FILES", 2000, "Most entries a bot jar may hold.", int),
    Setting(
        "MAX_JAR_UNPACKED_BYTES",
        32 * 1024 * 1024,
        "Most bytes a bot jar may expand to, counted while it is read (never taken from its headers).",
        int,
    ),
    Setting(
        "JAR_FETCH_TIMEOUT_SECONDS",
        20.0,
        "Longest a fetch of a jar entered by its URL may take in all (seconds), redirects included.",
        float,
    ),
    Setting(
        "JAR_FETCH_PRIVATE",
        False,
        "Whether a jar entered by its URL may be fetched from a loopback, private or other non-public address (a club ladder on a private network; never on a public server, where it would let a competitor reach this machine's and its network's services).",
        _yes,
    ),
    Setting(
        "ENTRIES_NEED_APPROVAL",
        False,
        "Whether a competitor's new entry waits for a maintainer's approval before it is listed (maintainers may change it while the server runs).",
        _yes,
    ),
    Setting(
        "ENTRY_REQUESTS_PER_HOUR",
        30,
        "Requests to enter or withdraw a bot with a token (a valid one or not), and accounts made, one address may make in an hour; past it, 429 before any token is checked.",
        int,
    ),
    Setting("ENTRIES_PER_DAY", 20, "Bots one competitor account may enter in 24 hours.", int),
    Setting(
        "SIGN_UPS_PER_DAY",
        3,
        "Competitor accounts one address may make for itself in 24 hours (0: only maintainers make accounts).",
        int,
    ),
    Setting(
        "UPLOADERS_MAX_AGE_MINUTES",
        5.0,
        "A rumble's uploader-consistency table (it works through every pairing each uploader shares) is kept per worker and served until its rumble has changed and it is this old (0: recomputed after any change).",
        float,
    ),
    Setting(
        "METRICS_ADDRESSES",
        (),
        "Comma-separated addresses or networks (192.0.2.7, 10.0.0.0/8) whose requests /metrics answers; others get 403 (empty: every address).",
        _networks,
    ),
    Setting(
        "METRICS_TOKEN_SHA256",
        None,
        "SHA-256 (hex, as sha256sum prints it) of the bearer token /metrics requires (Authorization: Bearer <token>); unset: no token.",
        _sha256_hex,
    ),
)

_BY_NAME = {setting.name: setting for setting in SETTINGS}


def load(overrides: dict[str, Any] | None = None, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Return every setting's value: overrides, then RUMBLE_* variables, then defaults."""
    env: Mapping[str, str] = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for setting in SETTINGS:
        value = setting.default
        raw = env.get("RUMBLE_" + setting.name)
        if raw is not None:
            value = setting.parse(raw)
        values[setting.name] = value
    for name, value in (overrides or {}).items():
        if name not in _BY_NAME:
            raise KeyError(f"unknown setting {name!r}")
        values[name] = value
    if values["DB"] is None:
        values["DB"] = str(default_db_path(env))
    if values["CLOCK"] is None:
        values["CLOCK"] = Clock()
    return values


def origins(overrides: dict[str, Any] | None = None, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Where ``load`` (given the same arguments) takes each setting's value from: ``"given"`` (the
    mapping passed, as the CLI's ``--db``), ``"RUMBLE_<NAME>"`` (that environment variable) or
    ``"default"``. A variable whose value stands for the default (RUMBLE_CLOCK: the clock is never
    read from the environment) counts as the default."""
    env: Mapping[str, str] = os.environ if environ is None else environ
    found: dict[str, str] = {}
    for setting in SETTINGS:
        variable = "RUMBLE_" + setting.name
        raw = env.get(variable)
        found[setting.name] = "default" if raw is None or setting.parse(raw) is None else variable
    for name in overrides or {}:
        if name not in _BY_NAME:
            raise KeyError(f"unknown setting {name!r}")
        found[name] = "given"
    return found
