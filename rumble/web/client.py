"""The endpoints the real RoboRumble client talks to (protocol.md sections 5, 6 and 7).

Every answer is ``200 text/plain``: the client treats any status of 400 or more, and any upload
answer without an ``OK`` line, as a failure to retry forever. Refusals for good therefore read
``OK. ERROR: <reason>``; only a real server fault (an exception, a 500) leaves it retrying.

``/UploadedResults`` is answered by ``UploadFront``, plain WSGI in front of the Flask app (see
there why); ``/RatingsFile`` and ``/RemoveOldParticipant`` are Flask views.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any, Protocol

from flask import Blueprint, Flask, Response, current_app, request
from werkzeug.exceptions import InternalServerError, MethodNotAllowed
from werkzeug.wrappers import Response as PlainResponse
from werkzeug.wsgi import ClosingIterator, get_content_length, get_input_stream

from rumble import store
from rumble.clock import Clock
from rumble.ingest import apply, decide
from rumble.protocol import ProtocolError, replies
from rumble.protocol.names import key_candidates, to_key
from rumble.protocol.replies import Kind, UploadOutcome
from rumble.protocol.upload import decode_body, split_fields
from rumble.rankings import uploader_trust
from rumble.store import Store, battle_log, bots, removals, tables, trust, upload_stats
from rumble.store.group_commit import run_in_group
from rumble.store.rumbles import known_rumble_id, rumble_id
from rumble.web import get_db, now, thread_db
from rumble.web.body import GuardedInput, MalformedBody
from rumble.web.refusal_counter import RefusalCounts, refusals_for
from rumble.web.upload_counter import Counts, counts_for, upload_decided

log = logging.getLogger(__name__)
bp = Blueprint("client", __name__)
UPLOAD_PATH = "/UploadedResults"
ALLOWED = "OPTIONS, POST"  # its methods, as the Allow header lists them


class Writer(Protocol):
    """What the app's ``rumble.writer`` extension offers (rumble.server.single_writer.Writer under
    ``rumble serve``): ``apply(connection)`` in a committed write transaction, its result."""

    def run(self, db: Store, apply: Callable[[Store], Any], prepare: Callable[[Store], Any]) -> Any: ...


def _text(body: str) -> Response:
    return Response(body, status=200, mimetype="text/plain")


def _settings() -> dict:
    return current_app.config["RUMBLE"]


@bp.errorhandler(MalformedBody)
def _unreadable(error: MalformedBody) -> Response:
    """A body the server cannot read, on any client endpoint: the protocol's refusal, not a 400."""
    return _text(replies.refused(error.description))


class UploadFront:
    """``POST /UploadedResults``, one pair result: parse, check, store in one transaction, answer
    with counts and priority; as plain WSGI in front of the Flask app (``rumble.app.wrap_wsgi``
    puts it inside the trusted-proxy fix, so the client's address is the one it reads). Every other
    path goes on to Flask; OPTIONS on this one lists its methods, any other method is a 405.

    Why not a Flask view: uploads are nearly all the server's requests, and each pays a worker's
    CPU while the writer process waits for the next. Flask's request context, URL routing and
    response hooks, none of which an upload uses, cost a worker about as much CPU as the upload's
    own parsing and checking; with werkzeug's request and response alone, ``rumble serve`` took
    about a fifth more uploads per second (scripts/bench_upload.py; figures in the README). Those
    objects cost as much again, so the body is read with werkzeug's stream functions (the stream
    a ``Request`` would read) and the answer is written with the headers its ``Response`` would
    send: about a twentieth more uploads per second. The answers are the same: the outcome is
    counted for /RumbleStats (``rumble.web.upload_counter``) and sent with the ``upload_decided``
    signal (the app is the sender); a server fault is logged and answered 500 (raised, in a testing
    app, as Flask would); the counts are flushed and the WAL checkpointed, when due, once the answer
    is on its way."""

    def __init__(self, app: Flask, inner: Callable) -> None:
        self.app, self.inner = app, inner

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != UPLOAD_PATH:
            return self.inner(environ, start_response)
        method = environ.get("REQUEST_METHOD")
        if method == "OPTIONS":  # as Flask answers it for a POST route
            return PlainResponse(status=200, headers={"Allow": ALLOWED})(environ, start_response)
        if method != "POST":
            return MethodNotAllowed(valid_methods=ALLOWED.split(", "))(environ, start_response)
        if "wsgi.input" in environ:  # read errors become MalformedBody (rumble.web.body)
            environ["wsgi.input"] = GuardedInput(environ["wsgi.input"])
        return self._answer(environ, start_response)

    def _answer(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        settings = self.app.config["RUMBLE"]
        moment: Clock = settings["CLOCK"]
        started = time.perf_counter()
        try:
            db = thread_db(settings)
            outcome = _receive(environ, db, moment.now(), settings, self.app.extensions)
            answer = replies.render(outcome).encode()
        except Exception as error:
            # The exception's class only: its message may hold paths or data not for a public page
            # (the server's log has the whole traceback).
            self._decided(UploadOutcome(Kind.ERROR, reason=f"server error ({type(error).__name__})"), started)
            propagate = self.app.config["PROPAGATE_EXCEPTIONS"]  # Flask's own rule
            if propagate if propagate is not None else (self.app.testing or self.app.debug):
                raise
            log.exception("the upload from %s failed", environ.get("REMOTE_ADDR"))
            return InternalServerError()(environ, start_response)
        self._decided(outcome, started)
        # The headers werkzeug's Response gives a text/plain body, without building one: its
        # request and response objects cost a worker about as much CPU as the rest of the upload.
        start_response("200 OK", [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(answer)))])
        writer = self.app.extensions.get("rumble.writer")
        return ClosingIterator([answer], partial(_after_answer, counts_for(settings["DB"]), db, writer))

    def _decided(self, outcome: UploadOutcome, started: float) -> None:
        """Count ``outcome`` and its server time for /RumbleStats and send it to ``upload_decided``'s listeners."""
        settings = self.app.config["RUMBLE"]
        counts_for(settings["DB"]).record(outcome, (time.perf_counter() - started) * 1000, settings["CLOCK"].now())
        upload_decided.send(self.app, outcome=outcome)


def _after_answer(counts: Counts, db: Store, writer: Writer | None) -> None:
    """Once the answer is on its way: the WAL checkpoint and the upload counts, each when due."""
    store.checkpoint_if_due(db)
    taken = counts.take()
    if taken is not None:
        work = partial(upload_stats.add_counts, **taken._asdict())
        _save(db, writer, work, "the upload counts")


def save_counts_now(db: Store, writer: Writer | None, path: str) -> None:
    """Save whatever upload and refused-removal counts this worker holds for the database at
    ``path`` (``rumble serve`` calls it on a timer, so that counts reach /RumbleStats and /metrics
    without waiting for a later request)."""
    taken = counts_for(path).take(force=True)
    if taken is not None:
        _save(db, writer, partial(upload_stats.add_counts, **taken._asdict()), "the upload counts")
    refused = refusals_for(path).take(force=True)
    if refused is not None:
        _save(db, writer, partial(trust.add_refusals, counts=refused), "the counts of refused removals")


def _save(db: Store, writer: Writer | None, work: Callable[[Store], None], what: str) -> None:
    """Write ``work`` (counts a worker kept): through the writer process, in the transaction of its
    next group, when there is one, so that no worker waits for the write lock (under gevent that
    would hold up every request of the worker); else in a transaction of its own. A failure loses
    these counts, nothing else."""
    try:
        if writer is None:
            with store.write(db):
                work(db)
        else:
            writer.run(db, work, partial(decide.prepare, ""))
    except Exception:
        log.exception("could not save %s", what)


def _receive(environ: dict, db: Store, moment: datetime, settings: dict, extensions: dict) -> UploadOutcome:
    """Decide one upload's outcome; a stored one is committed before this returns."""
    limit = settings["MAX_UPLOAD_BYTES"]
    length = get_content_length(environ)  # None for a chunked body; werkzeug's reading, as a Request's
    if (length or 0) > limit:
        return decide.refused(f"upload of {length} bytes is larger than {limit}")
    try:
        body = get_input_stream(environ).read(limit + 1)
    except MalformedBody as error:  # a broken chunked body: refused in the protocol's form, counted as refused
        return decide.refused(error.description)
    if len(body) > limit:
        return decide.refused(f"upload is larger than {limit} bytes")
    if length is not None and len(body) < length:  # the sender stopped early
        return decide.refused(f"upload body ends after {len(body)} of its {length} bytes")
    try:  # the rumble it is for; a body that is not ``k=v&..`` at all is refused here at once
        game = split_fields(decode_body(body)).get("game", "")
    except ProtocolError as error:
        return decide.refused(str(error))
    rumble = extensions["rumble.rumbles"].get(game)
    received = int(moment.timestamp() * 1000)
    kept = {name: settings[name] for name in decide.UPLOAD_SETTINGS}
    checked = decide.check(body, rumble, kept, received, db)  # parsed and checked here, outside the write lock
    if isinstance(checked, UploadOutcome):
        return checked
    work = partial(decide.store_checked, *checked, kept, settings["CLOCK"], environ.get("REMOTE_ADDR"))
    writer = extensions.get("rumble.writer")
    if writer is not None:
        # Stored in a transaction shared with the other uploads waiting, by the server's writer
        # process (rumble.server.single_writer), which answers once it is committed.
        return writer.run(db, work, partial(decide.prepare, game))
    # Without it, in a transaction shared with the other uploads waiting for the lock (rumble.store.group_commit).
    decide.prepare(game, db)
    return run_in_group(db, work)


@bp.route("/RatingsFile", methods=["GET"])
def ratings_file() -> Response:
    """``name_version=APS,battles,YYYY-MM-DD HH:MM:SS`` per active bot; empty for an unknown game."""
    game = request.args.get("game", "")
    db = get_db()
    rid = rumble_id(db, game) if game in current_app.extensions["rumble.rumbles"] else None
    if rid is None:
        return _text("")
    lines = [
        f"{to_key(name)}={aps!r},{battles},{last[:19]}"
        for name, aps, battles, last in tables.ratings_file_rows(db, rid)
    ]
    return _text("".join(line + "\n" for line in lines))


@bp.route("/RemoveOldParticipant", methods=["GET", "POST"])  # GET (and with it HEAD) only to be refused
def remove_old_participant() -> Response:
    """Retire a bot named by its ratings-file key (``_`` for the space); the client only prints the answer.

    POST only: a GET or HEAD would let any web page (an ``<img>``) retire bots from its visitors'
    browsers. A removal counts only from an *established* uploader (rumble.rankings.uploader_trust):
    the request's address uploaded accepted battles to the rumble within REMOVAL_TRUST_DAYS, and the
    newest of them came from a party (that uploader's name with the address's network) a maintainer
    vouched for, or that earned trust by agreeing with the established. An established address may
    send REMOVALS_PER_HOUR requests an hour.

    Every refusal is decided in a read snapshot, before any write lock, and is only counted
    (rumble.web.refusal_counter); a request that passes is logged with its address, user agent and
    outcome (``store.removals``) in the write transaction that retires the bot.
    """
    if request.method != "POST":
        response = Response(
            "RemoveOldParticipant retires a bot only when POSTed, as the RoboRumble client sends it; "
            "a GET or HEAD changes nothing.\n",
            status=405,
            mimetype="text/plain",
        )
        response.headers["Allow"] = "POST"
        return response
    db, moment, address = get_db(), now(), request.remote_addr
    try:
        fields = split_fields(request.get_data()[:4096].decode("utf-8", "replace"))
    except ProtocolError as error:
        return _refuse_removal(db, "", "unreadable", replies.refused(str(error)), moment)
    game, key = fields.get("game", ""), fields.get("name", "")
    with store.read(db):
        decided = _decide_removal(db, game, key, moment, address)
    if isinstance(decided, tuple):
        return _refuse_removal(db, game, *decided, moment)
    rid, name, bot, uploader = decided.rumble_id, decided.name, decided.bot, decided.uploader
    # The address comes last: exports drop all from the first " from " on, /RumbleStats masks what
    # follows the last one (rumble.web.page_data.public_source).
    source = f"RemoveOldParticipant (uploader {uploader}) from {address}"
    with store.write(db):
        retired = apply.retire(db, rid, bot, store.format_time(moment), source)
        outcome = "retired" if retired else "already retired"
        removals.record(db, store.format_time(moment), address, request.user_agent.string, game, key, outcome)
    if not retired:
        return _text(replies.plain(f"OK. {name} was already retired from {game}") + "\n")
    return _text(replies.plain(f"OK. {name} retired from {game}") + "\n")


@dataclass(frozen=True)
class _Removal:
    """A removal that passed every check: the bot, and the established uploader asking."""

    rumble_id: int
    name: str
    bot: int
    uploader: str


def _decide_removal(
    db: Store, game: str, key: str, moment: datetime, address: str | None
) -> _Removal | tuple[str, str]:
    """The removal to apply, or (reason, answer) for a refusal; reads only (in the caller's snapshot)."""
    settings = _settings()
    if game not in current_app.extensions["rumble.rumbles"]:
        return "unknown game", replies.refused(f"unknown game {game!r}")
    rid = known_rumble_id(db, game)
    days = settings["REMOVAL_TRUST_DAYS"]
    uploader = battle_log.latest_uploader(db, address, rid, store.format_time(moment - timedelta(days=days)))
    if uploader is None:
        return "not an uploader", replies.refused(
            f"your address uploaded no accepted battles to {game} in the last {days:g} days; "
            "only an established uploader of a rumble may retire its bots"
        )
    who = uploader_trust.party(uploader, address)
    established, why = trust.standing_of(db, rid, who)
    if not established:
        return "not established", replies.refused(
            f"uploader {who} is not established in {game} ({why}); only an established uploader may "
            "retire bots: a maintainer can vouch for yours"
        )
    limit = settings["REMOVALS_PER_HOUR"]
    if removals.count_since(db, address, store.format_time(moment - timedelta(hours=1))) >= limit:
        return "rate limited", replies.refused(
            f"more than {limit} RemoveOldParticipant requests from your address in an hour; try again later"
        )
    known = bots.participant_names(db, rid, active_only=False)
    name = next((candidate for candidate in key_candidates(key) if candidate in known), None)
    if name is None:
        return "unknown bot", replies.refused(f"no bot {key!r} in {game}")
    return _Removal(rid, name, known[name], uploader)


def _refuse_removal(db: Store, game: str, reason: str, answer: str, moment: datetime) -> Response:
    """Answer a refused removal; it is counted, and the counts saved when due, once the answer is sent."""
    counts = refusals_for(_settings()["DB"])
    counts.record(game, reason, moment)
    response = _text(answer)
    if counts.due():
        writer = current_app.extensions.get("rumble.writer")
        response.call_on_close(partial(_save_refusals, counts, db, writer))
    return response


def _save_refusals(counts: RefusalCounts, db: Store, writer: Writer | None) -> None:
    taken = counts.take()
    if taken is not None:
        _save(db, writer, partial(trust.add_refusals, counts=taken), "the counts of refused removals")
