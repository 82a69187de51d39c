"""What the bad-input sweeps share (tests/web/test_bad_input_sweep.py in-process, and
tests/e2e/test_bad_input_gunicorn.py against a real server): the hostile values, the parameters
each endpoint reads, and what a client endpoint's answer must look like."""

from __future__ import annotations

import re
from urllib.parse import quote, quote_from_bytes

# Each hostile value as the bytes that go on the wire (percent-encoded in a URL or form).
HOSTILE: dict[str, bytes] = {
    "superscript two": "²".encode(),
    "minus one": b"-1",
    "1e999": b"1e999",
    "10**32 in digits": str(10**32).encode(),
    "empty": b"",
    "10 KB of letters": b"x" * 10240,
    "10 KB of digits": b"9" * 10240,
    "NUL": b"1\x00",
    "invalid UTF-8": b"\xff\xfe",
    "Arabic-Indic three": "٣".encode(),
    "plus one": b"+1",
    "far-future time with a zone": b"9999-12-31T23:59:59-12:00",
}
A, B = "sample.Corners 1.0", "sample.RamFire 1.0"
VALID = {"game": "roborumble", "name": A, "bot": A, "vs": B, "bota": A, "botb": B, "old": B, "new": A}
PATH_VALID = {"game": "roborumble", "name": A, "table": "rankings", "fmt": "csv", "filename": "favicon.svg"}

# What each endpoint reads from its query string (GET) or form (POST), besides its path variables.
PARAMS: dict[str, tuple[str, ...]] = {
    "static": (),
    "client.ratings_file": ("version", "game"),
    "client.remove_old_participant": ("version", "game", "name", "dummy"),
    "bot_pages.bot_details": ("game", "name", "order", "api"),
    "bot_pages.pairing": ("game", "bot", "vs", "api"),
    "bot_pages.bot_compare": ("game", "bota", "botb", "order", "api"),
    "plots.scores_plot": ("game", "name", "api"),  # api: the errors' form (JSON or text), as on the bot pages
    "plots.history_plot": ("game", "name", "api"),
    "plots.uploads_plot": ("game", "api"),
    "pages.home": ("api",),
    "pages.rankings": ("game", "order", "limit", "page", "api"),
    "pages.alternative_rankings": ("game", "api"),
    "pages.rumble_stats": ("game", "api"),
    "pages.favicon": (),
    "pages.score_explanation": (),
    "api.reference": (),
    "api.rumbles": (),
    "api.rankings": ("order", "limit", "page"),
    "api.alternative_rankings": (),
    "api.bot": ("order", "limit", "page"),
    "api.bot_history": (),
    "api.pairing": ("bot", "vs", "limit", "page"),
    "api.compare": ("bota", "botb", "order", "limit", "page"),
    "api.version_test": ("old", "new", "delta"),
    "api.uploaders": ("limit", "page"),
    "feed.all_feed": (),
    "feed.rumble_feed": ("api",),  # the 404 of an unknown rumble reads it (rumble.web.lookup.failure)
    "api.all_stats": (),
    "api.rumble_stats": (),
    "api.export_table": (),
    "api.export_sqlite": (),
    "admin.login": ("next", "token", "csrf_token"),
    "admin.logout": ("csrf_token",),
    "admin.audit_page": ("api", "uploaders"),
    "admin.uploaders.table": ("game", "api"),
    "admin.uploaders.preview": ("game", "uploader", "api"),
    "admin.uploaders.vouch": ("uploader", "network", "note", "csrf_token"),
    "admin.uploaders.revoke": ("uploader", "network", "note", "csrf_token"),
    "admin.removals_page": (),
    "admin.flagged_page": (),
    "admin.job_page": ("id",),
    # Every admin POST reads csrf_token in a browser session.
    "admin.retire": ("game", "name", "csrf_token"),
    "admin.restore": ("game", "name", "csrf_token"),
    "admin.flag": ("game", "uploader", "remote_addr", "client", "since", "until", "ids", "dry_run", "csrf_token"),
    "admin.unflag": ("game", "uploader", "remote_addr", "client", "since", "until", "ids", "dry_run", "csrf_token"),
    "admin.rollback": ("game", "uploader", "remote_addr", "client", "since", "until", "ids", "dry_run", "csrf_token"),
    "admin.rebuild": ("game", "csrf_token"),
    "admin.batch": ("game", "csrf_token"),
    "admin.clients": ("clients", "reset", "csrf_token"),
    "admin.rumble_settings": ("game", "key", "value", "reset", "csrf_token"),
}
KNOWN = sorted({name for names in PARAMS.values() for name in names} | set(VALID))
PROTOCOL_LINE = re.compile(r"^(\[[^\[\]<>\n]+,[^\[\]<>\n]+\]|<\d+ \d+>)$")
RATINGS_LINE = re.compile(r"^[^=\n]+=-?[0-9.e+-]+,\d+,\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")


def encode(params: dict[str, bytes | str]) -> str:
    """A query string or form body with every value percent-encoded from its bytes."""
    return "&".join(
        f"{quote(k)}={quote_from_bytes(v if isinstance(v, bytes) else v.encode(), safe='')}" for k, v in params.items()
    )


def path_for(rule, values: dict) -> str:
    """``rule``'s path with each variable from ``values`` (else a valid one), percent-encoded from its bytes."""
    path = rule.rule
    for name in rule.arguments:
        value = values.get(name, PATH_VALID.get(name, "x"))
        raw = value if isinstance(value, bytes) else value.encode()
        path = re.sub(r"<(?:[^<>]*:)?" + name + ">", quote_from_bytes(raw, safe=""), path)
    return path


def protocol_problem(endpoint: str, status: int, mimetype: str, text: str) -> str | None:
    """Why a client endpoint's answer is not in the protocol's form (200 text/plain, lines the
    client reads, a refusal one ``OK. ERROR:`` line), or None. RemoveOldParticipant answers only
    POST: a GET there is refused with a plain-text 405 (an <img> must not retire a bot)."""
    if endpoint == "client.remove_old_participant" and status == 405:
        return None if mimetype == "text/plain" and text.strip() else f"405 {mimetype} without a reason"
    if status != 200 or mimetype != "text/plain":
        return f"{status} {mimetype}"
    lines = text.splitlines()
    if endpoint == "client.ratings_file":
        bad = [line for line in lines if not RATINGS_LINE.match(line)]
        return f"not a ratings line: {bad[0][:80]!r}" if bad else None
    if not lines or not lines[-1].startswith("OK. ") or any(not PROTOCOL_LINE.match(line) for line in lines[:-1]):
        return f"not a protocol answer: {lines[:3]!r}"
    if "ERROR" in lines[-1] and len(lines) != 1:
        return "a refusal of more than one line"
    return None
