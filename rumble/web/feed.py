"""The Atom feed of ladder events (RFC 4287), at /feed for every rumble and /feed/<game> for one:
a new bot has met every active participant, a new number 1 (daily snapshot), a bot retired, an
uploader flagged by the consistency test, a listed bot stuck without a battle. Written with the standard library's ElementTree; each
entry's id is a name-based UUID of the server, rumble, kind and subject, so a reader never sees
one event twice."""

from __future__ import annotations

import re
import uuid
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta

from flask import Blueprint, Response, current_app, request, url_for

from rumble.store import batch_tables, format_time, ladder_events, read, stats, uploader_battles
from rumble.store.export import log_version
from rumble.web import get_db, now
from rumble.web.lookup import rumble_or_404
from rumble.web.page_data import STUCK_AFTER, public_source, stuck_bots
from rumble.web.uploader_data import kept, uploader_table

bp = Blueprint("feed", __name__)
ATOM = "http://www.w3.org/2005/Atom"
FEED_DAYS = ladder_events.NEW_BOT_DAYS  # a bot first seen within this many days is "new" when it completes its pairings
LIVE_CANDIDATES = 10  # new complete bots a request works out the completions of itself (a few ms each)
MAX_ENTRIES = 100  # newest entries in a feed
RETIREMENTS = 50  # newest retirements read per rumble


def atom_time(stored: str) -> str:
    """A stored UTC time ("YYYY-MM-DD HH:MM:SS[.mmm]" or a day "YYYY-MM-DD") as an RFC 3339 time."""
    if len(stored) == 10:
        return f"{stored}T00:00:00Z"
    return stored[:19].replace(" ", "T") + "Z"


def events(db, game: str) -> list[dict]:
    """The ladder events of one rumble: those the log makes kept per worker like the uploader table
    (uploader_data.kept), and the stuck bots read afresh (a bot becomes stuck as time passes, with
    no change to the log)."""
    rid = rumble_or_404(game)
    with read(db):
        stuck = stuck_bots(db, game, rid)
    return kept(db, rid, "feed", lambda: read_events(db, game, rid)) + [stuck_event(game, row) for row in stuck]


def stuck_event(game: str, row: dict) -> dict:
    """The event of a listed bot without a battle (page_data.stuck_bots), dated when it became stuck."""
    became = datetime.fromisoformat(row["listed_at"]).replace(tzinfo=UTC) + STUCK_AFTER
    return {
        "kind": "stuck",
        "key": f"{row['name']}/{row['listed_at']}",
        "title": f"{row['name']} is stuck in {game}: no battle since it was listed",
        "summary": f"{row['name']} has been on the participants list of {game} since {row['listed_at']} UTC "
        "and no client has uploaded a battle of it: its jar may not run.",
        "at": format_time(became),
        "link": url_for("participants.jar_page", name=row["name"]),
        "game": game,
    }


def completed(db, rid: int) -> list[dict]:
    """The rumble's new bots that met every active participant, with when (ladder_events.completions):
    worked out here while at most LIVE_CANDIDATES bots need it, else as the scheduled batch run
    stored them (rumble.store.batch_tables; none before its first run). Each bot costs a read of
    its battles: all 1,200 bots of a new ladder took 4.9 s."""
    since = format_time(now() - timedelta(days=FEED_DAYS))
    with read(db):
        stored = batch_tables.stored(db, rid, batch_tables.COMPLETIONS)
        if stored is not None and stored.log_version == batch_tables.version_text(log_version(db, rid)):
            return stored.rows
        bots = ladder_events.complete_bots(db, rid, since)
        if len(bots) > LIVE_CANDIDATES:
            return [] if stored is None else stored.rows
        return ladder_events.completions(db, rid, bots)


def read_events(db, game: str, rid: int) -> list[dict]:
    """The ladder events of one rumble: kind, key (what makes it one event), title, summary, time, link."""
    complete = completed(db, rid)
    with read(db):
        leaders = ladder_events.leader_changes(db, rid)
        retired = stats.retirements(db, rid, limit=RETIREMENTS)
    found = []
    for row in complete:
        found.append(
            {
                "kind": "complete",
                "key": row["name"],
                "title": f"{row['name']} has met every active participant of {game}",
                "summary": f"{row['name']}'s rating in {game} now rests on a pairing with every active bot.",
                "at": row["at"],
                "link": url_for(
                    "bot_pages.bot_details",
                    game=game,
                    name=row["name"],
                ),
            }
        )
    for row in leaders:
        after = f", after {row['previous']}" if row["previous"] else ""
        found.append(
            {
                "kind": "leader",
                "key": f"{row['day']}/{row['name']}",
                "title": f"New number 1 in {game}: {row['name']}",
                "summary": f"{row['name']} leads {game} in the daily snapshot of {row['day']}"
                + (f" with APS {row['aps']:.2f}" if row["aps"] is not None else "")
                + f"{after}.",
                "at": row["day"],
                "link": url_for(
                    "pages.rankings",
                    game=game,
                ),
            }
        )
    for row in retired:
        found.append(
            {
                "kind": "retired",
                "key": f"{row['name']}/{row['at']}",
                "title": f"{row['name']} retired from {game}",
                "summary": f"Retired at {row['at']} UTC, asked by {public_source(row['source'])}"
                + ("." if row["retired"] else "; it is back since."),
                "at": row["at"],
                "link": url_for(
                    "bot_pages.bot_details",
                    game=game,
                    name=row["name"],
                ),
            }
        )
    for row in uploader_table(db, rid):
        if row["flagged"]:
            at = uploader_battles.last_upload(db, rid, row["uploader"]) or format_time(now())
            found.append(
                {
                    "kind": "uploader-flagged",
                    "key": row["uploader"],
                    "title": f"Uploader {row['uploader']} flagged in {game}",
                    "summary": f"{row['uploader']}: {row['reason']}.",
                    "at": at,
                    "link": url_for("pages.rumble_stats", game=game) + "#uploaders",
                }
            )
    for event in found:
        event["game"] = game
    return found


def atom(title: str, self_url: str, alternate: str, found: list[dict], server: str, server_url: str) -> bytes:
    """The Atom document of ``found``, newest first, at most MAX_ENTRIES. ``server`` names this
    server in the entries' ids (never the Host header a request sent, so that ids stay the same for
    every reader); ``server_url`` is the root the entries' relative links are read from."""
    ET.register_namespace("", ATOM)
    found = sorted(found, key=lambda e: atom_time(e["at"]), reverse=True)[:MAX_ENTRIES]
    root = ET.Element(f"{{{ATOM}}}feed")
    _text(root, "id", f"urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, self_url)}")
    _text(root, "title", title)
    _text(root, "updated", atom_time(found[0]["at"]) if found else atom_time(format_time(now())))
    author = ET.SubElement(root, f"{{{ATOM}}}author")
    _text(author, "name", "rumble")
    ET.SubElement(root, f"{{{ATOM}}}link", rel="self", type="application/atom+xml", href=self_url)
    ET.SubElement(root, f"{{{ATOM}}}link", rel="alternate", type="text/html", href=alternate)
    for event in found:
        entry = ET.SubElement(root, f"{{{ATOM}}}entry")
        key = f"{server}/{event['game']}/{event['kind']}/{event['key']}"
        _text(entry, "id", f"urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, key)}")
        _text(entry, "title", event["title"])
        _text(entry, "updated", atom_time(event["at"]))
        href = server_url.rstrip("/") + event["link"]  # cached relative, made absolute for this request
        ET.SubElement(entry, f"{{{ATOM}}}link", rel="alternate", type="text/html", href=href)
        ET.SubElement(entry, f"{{{ATOM}}}category", term=event["kind"])
        _text(entry, "summary", event["summary"])
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


# What XML 1.0 cannot carry (control characters, lone surrogates, U+FFFE and U+FFFF): an uploader's
# name may hold such a character, and the whole feed would then be unreadable.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _text(parent: ET.Element, tag: str, text: str) -> None:
    ET.SubElement(parent, f"{{{ATOM}}}{tag}").text = _NOT_XML.sub("\ufffd", text)


def _server() -> str:
    """This server's name in the entries' ids: its database file, the same whatever the Host header."""
    return str(current_app.config["RUMBLE"]["DB"])


@bp.get("/feed")
def all_feed() -> Response:
    """Every rumble's ladder events, newest first."""
    db = get_db()
    found = [event for game in sorted(current_app.extensions["rumble.rumbles"]) for event in events(db, game)]
    home = url_for("pages.home", _external=True)
    body = atom("rumble: ladder events", request.base_url, home, found, _server(), request.host_url)
    return Response(body, mimetype="application/atom+xml")


@bp.get("/feed/<game>")
def rumble_feed(game: str) -> Response:
    """One rumble's ladder events, newest first."""
    found = events(get_db(), game)
    alternate = url_for("pages.rankings", game=game, _external=True)
    body = atom(f"rumble: {game} ladder events", request.base_url, alternate, found, _server(), request.host_url)
    return Response(body, mimetype="application/atom+xml")
