"""Endpoints for operators and their monitors: ``/healthz`` and ``/metrics``.

``/healthz`` answers JSON: 200 while the database can be read (and, under ``rumble serve``, its
writer process answers), with each rumble's last accepted upload and its age by the app's clock and
the writer's state; 503 with the reason when the database cannot be read, when the writer process
has been silent for HUNG_SECONDS (the workers apply uploads themselves meanwhile, slower, until it
is replaced), or, when the monitor asks with ``max_age_minutes`` and ``game``, when a rumble's last
accepted upload is older than that.

``/metrics`` answers the Prometheus text format, written by the official client library
(prometheus_client) from a registry of this app's own. gunicorn runs several worker processes,
and counters kept in one worker's memory would differ from the next one's, so every figure is
read from the database by a collector (``StoredFigures``) when Prometheus scrapes: any worker
answers the same. The upload and refusal counts are as the workers have saved them
(rumble.web.upload_counter, rumble.web.refusal_counter); the battles, bots and last upload are
live. Another collector (the writer process's, say) joins with ``add_collector``.

/metrics is open by default, as the pages are: it shows counts a public ladder already shows on
/ and /RumbleStats (uploads by outcome, battles, bots), and the counts of refused removals by
reason, no address, uploader or bot. ``METRICS_ADDRESSES`` limits it to some addresses, and
``METRICS_TOKEN_SHA256`` makes it ask for a bearer token (kept as its SHA-256 only, so that
``rumble settings`` may print it).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import math
import sqlite3
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, NamedTuple

from flask import Blueprint, Flask, Response, current_app, jsonify, request
from flask.blueprints import BlueprintSetupState
from prometheus_client import CONTENT_TYPE_PLAIN_0_0_4, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from rumble import store
from rumble.parameters import ParameterError, shown, whole_number
from rumble.store import health_figures, upload_stats
from rumble.web import get_db, now, thread_db

log = logging.getLogger(__name__)
bp = Blueprint("health", __name__)
REGISTRY_KEY = "rumble.metrics"  # app.extensions: this app's CollectorRegistry
NETWORKS_KEY = "rumble.metrics_networks"  # app.extensions: METRICS_ADDRESSES as networks
# app.extensions: () -> the writer process's state (rumble.server.single_writer.Pulse.state), set by rumble serve
WRITER_KEY = "rumble.writer_state"
MAX_AGE_MINUTES = 525_600  # a year: the largest max_age_minutes /healthz takes
# Outcomes an upload of a known rumble can have; refusals and server errors name no rumble.
RUMBLE_OUTCOMES = ("accepted", "held", "duplicate")
UNATTRIBUTED_OUTCOMES = ("refused", "error")
UNREADABLE = (sqlite3.Error, OSError)  # what reading the database raises when it cannot be read


@bp.record_once
def _set_up(state: BlueprintSetupState) -> None:
    """The app's metrics registry with the database's figures in it, and its address networks."""
    app = state.app
    settings = app.config["RUMBLE"]
    app.extensions[NETWORKS_KEY] = tuple(
        ipaddress.ip_network(address, strict=False) for address in settings["METRICS_ADDRESSES"]
    )
    registry = CollectorRegistry()
    registry.register(StoredFigures(settings))
    app.extensions[REGISTRY_KEY] = registry


def add_collector(app: Flask, collector: Collector) -> None:
    """Add ``collector`` (prometheus_client's Collector interface: ``collect()`` yielding metric
    families) to what the app's /metrics answers."""
    app.extensions[REGISTRY_KEY].register(collector)


class StoredFigures(Collector):
    """The figures the database holds, read afresh at each scrape (rumble.store.health_figures)."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self.settings = settings

    def describe(self) -> Iterable[Metric]:
        """The metric families, without samples: the registry learns their names without reading the database."""
        return _families()

    def collect(self) -> Iterable[Metric]:
        try:  # five statements, each its own read: no transaction, which one open on this connection would refuse
            db = thread_db(self.settings)
            rumbles = health_figures.rumble_figures(db)
            uploads = health_figures.upload_totals(db)
            refusals = health_figures.removal_refusal_totals(db)
            times = health_figures.answer_time_totals(db)
            busy = health_figures.busy_totals(db)
        except UNREADABLE as error:
            log.warning("/metrics: the database cannot be read: %s", error)
            readable = _families().readable
            readable.add_metric([], 0)
            return [readable]
        return _filled(rumbles, uploads, refusals, times, busy)


class Families(NamedTuple):
    """Every metric family StoredFigures yields, in this order."""

    readable: GaugeMetricFamily
    uploads: CounterMetricFamily
    answer_seconds: CounterMetricFamily
    answer_duration: HistogramMetricFamily
    removal_refusals: CounterMetricFamily
    busy_answers: CounterMetricFamily
    last_accepted: GaugeMetricFamily
    logged_battles: CounterMetricFamily
    active_bots: GaugeMetricFamily


def _families() -> Families:
    """The families, empty."""
    return Families(
        GaugeMetricFamily(
            "rumble_database_readable", "1 while the database can be read, 0 when it cannot (no other figure then)."
        ),
        CounterMetricFamily(
            "rumble_uploads",
            "Uploads answered, by rumble and outcome (accepted, held, duplicate, refused, error), as the "
            'workers have saved their counts; a refused or failed upload has rumble="".',
            labels=["rumble", "outcome"],
        ),
        CounterMetricFamily(
            "rumble_upload_answer_seconds",
            "Server time spent answering those uploads, from receiving them to answering, as saved.",
            labels=["rumble", "outcome"],
        ),
        HistogramMetricFamily(
            "rumble_upload_answer_duration_seconds",
            "Server time from receiving an upload to answering it, by rumble and outcome, as the workers "
            "have saved their counts (since the histogram was added: migration 0025).",
            labels=["rumble", "outcome"],
        ),
        CounterMetricFamily(
            "rumble_removal_refusals",
            'RemoveOldParticipant requests refused, by rumble and reason, as saved; rumble="" when the '
            "request named no rumble of this server.",
            labels=["rumble", "reason"],
        ),
        CounterMetricFamily(
            "rumble_busy_answers",
            "Requests answered 503 because the worker's slots for them were full, by request class (page: "
            "pages and the JSON API; export: bulk exports and plots), as saved.",
            labels=["class"],
        ),
        GaugeMetricFamily(
            "rumble_last_accepted_upload_timestamp_seconds",
            "When the rumble's newest accepted battle was received (Unix time); absent before its first.",
            labels=["rumble"],
        ),
        CounterMetricFamily(
            "rumble_logged_battles",
            "Battles in the rumble's log, whatever their state (accepted, held for review, rolled back).",
            labels=["rumble"],
        ),
        GaugeMetricFamily("rumble_active_bots", "Active participants of the rumble.", labels=["rumble"]),
    )


def _filled(
    rumbles: list[dict], uploads: list[dict], refusals: list[dict], times: list[dict], busy: list[dict]
) -> Families:
    """The families with their samples: every rumble's possible upload outcomes from 0, so that a
    rate over them starts with the first upload."""
    families = _families()
    families.readable.add_metric([], 1)
    names = {r["name"] for r in rumbles}
    counted = {(r["name"], outcome): (0, 0.0) for r in rumbles for outcome in RUMBLE_OUTCOMES}
    counted |= {("", outcome): (0, 0.0) for outcome in UNATTRIBUTED_OUTCOMES}
    for row in uploads:
        counted[(row["game"], row["outcome"])] = (row["uploads"], row["total_ms"] / 1000)
    for (game, outcome), (n, seconds) in sorted(counted.items()):
        families.uploads.add_metric([game, outcome], n)
        families.answer_seconds.add_metric([game, outcome], seconds)
    by_reason: dict[tuple[str, str], int] = {}
    for row in refusals:  # the client's game text, folded into "" unless it is a rumble here
        key = (row["game"] if row["game"] in names else "", row["reason"])
        by_reason[key] = by_reason.get(key, 0) + row["requests"]
    for (game, reason), n in sorted(by_reason.items()):
        families.removal_refusals.add_metric([game, reason], n)
    _fill_histogram(families.answer_duration, times)
    for kind in ("page", "export"):
        families.busy_answers.add_metric([kind], sum(row["answers"] for row in busy if row["class"] == kind))
    for r in rumbles:
        if r["last_accepted"] is not None:
            families.last_accepted.add_metric([r["name"]], store_time(r["last_accepted"]).timestamp())
        families.logged_battles.add_metric([r["name"]], r["battles"])
        families.active_bots.add_metric([r["name"]], r["active_bots"])
    return families


def _fill_histogram(family: HistogramMetricFamily, times: list[dict]) -> None:
    """One histogram per rumble and outcome that has answers: each bucket counts the answers up to
    its bound (cumulative, as the format has it), the last (+Inf) all of them."""
    rows: dict[tuple[str, str], list[dict]] = {}
    for row in times:
        rows.setdefault((row["game"], row["outcome"]), []).append(row)
    for (game, outcome), found in sorted(rows.items()):
        counted = {row["le_ms"]: row["uploads"] for row in found}
        bounds = sorted(set(upload_stats.ANSWER_BUCKETS_MS) | set(counted))
        buckets, total = [], 0
        for bound in bounds:
            total += counted.get(bound, 0)
            buckets.append(("+Inf" if math.isinf(bound) else repr(bound / 1000), total))
        family.add_metric([game, outcome], buckets, sum(row["total_ms"] for row in found) / 1000)


def store_time(text: str) -> datetime:
    """A time as the store writes it ("YYYY-MM-DD HH:MM:SS.mmm", UTC) as an aware datetime."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@bp.get("/metrics")
def metrics() -> Response:
    """The Prometheus text format (version 0.0.4, which every Prometheus reads)."""
    refusal = _refusal()
    if refusal is not None:
        return refusal
    body = generate_latest(current_app.extensions[REGISTRY_KEY])
    return Response(body, content_type=CONTENT_TYPE_PLAIN_0_0_4, headers={"Cache-Control": "no-store"})


def _refusal() -> Response | None:
    """The answer to a /metrics request the settings do not allow (403, 401), or None."""
    networks = current_app.extensions[NETWORKS_KEY]
    if networks:
        try:
            address = ipaddress.ip_address(request.remote_addr or "")
        except ValueError:
            address = None
        if address is None or not any(address in network for network in networks):
            return _text("/metrics answers only the addresses of the METRICS_ADDRESSES setting.\n", 403)
    wanted = current_app.config["RUMBLE"]["METRICS_TOKEN_SHA256"]
    if wanted:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        given = hashlib.sha256(token.strip().encode("utf-8", "replace")).hexdigest()
        if scheme.lower() != "bearer" or not token.strip() or not hmac.compare_digest(given, wanted):
            response = _text(
                "/metrics needs the token of the METRICS_TOKEN_SHA256 setting: Authorization: Bearer <token>.\n", 401
            )
            response.headers["WWW-Authenticate"] = 'Bearer realm="metrics"'
            return response
    return None


def _text(message: str, status: int) -> Response:
    return Response(message, status=status, mimetype="text/plain", headers={"Cache-Control": "no-store"})


@bp.get("/healthz")
def healthz() -> Response:
    """200 and each rumble's last accepted upload while the database can be read; 503 and why when
    it cannot, or when a rumble of ``game`` has had no accepted upload for ``max_age_minutes``."""
    try:
        max_age, games = _staleness_question()
    except ParameterError as error:
        return _json({"status": "bad request", "reason": str(error)}, 400)
    moment = now()
    moment = moment.replace(microsecond=moment.microsecond // 1000 * 1000)  # the store's resolution
    answer: dict[str, Any] = {"now": store.format_time(moment)}
    try:
        rumbles = health_figures.rumble_figures(get_db())  # one statement: one consistent read
    except UNREADABLE as error:
        log.warning("/healthz: the database cannot be read: %s", error)
        return _json(
            answer
            | {"status": "unavailable", "database": "unreadable", "reason": f"the database cannot be read: {error}"},
            503,
        )
    rows = [_rumble_row(r, moment) for r in rumbles]
    answer |= {"status": "ok", "database": "readable", "rumbles": rows}
    writer_state = current_app.extensions.get(WRITER_KEY)
    if writer_state is not None:
        answer["writer"] = writer = writer_state()
        if writer["state"] != "answering":
            reason = (
                f"the writer process has not answered for {writer['last_beat_seconds_ago']} s; the workers apply "
                "uploads themselves until it is replaced"
            )
            return _json(answer | {"status": "degraded", "reason": reason}, 503)
    if max_age is None:
        return _json(answer, 200)
    known = {row["name"]: row for row in rows}
    unknown = [game for game in games if game not in known]
    if unknown:
        return _json({"status": "bad request", "reason": f"there is no rumble called {shown(unknown[0])}"}, 400)
    stale = [g for g in games if known[g]["age_seconds"] is None or known[g]["age_seconds"] > max_age * 60]
    answer["max_age_minutes"] = max_age
    if not stale:
        return _json(answer, 200)
    answer |= {"status": "stale", "stale": stale, "reason": _stale_reason(stale, max_age)}
    return _json(answer, 503)


def _staleness_question() -> tuple[int | None, list[str]]:
    """``max_age_minutes`` (a whole number) and the ``game``s it is asked of, both or neither."""
    raw, games = request.args.get("max_age_minutes"), request.args.getlist("game")
    if raw is None and not games:
        return None, []
    if raw is None or not games:
        raise ParameterError("max_age_minutes and game go together: ?max_age_minutes=30&game=roborumble")
    return whole_number(raw, "max_age_minutes", 1, MAX_AGE_MINUTES), list(dict.fromkeys(games))


def _rumble_row(figures: dict, moment: datetime) -> dict:
    last = figures["last_accepted"]
    age = None if last is None else round((moment - store_time(last)).total_seconds(), 3)
    return {
        "name": figures["name"],
        "last_accepted_upload": last,
        "age_seconds": age,
        "active_bots": figures["active_bots"],
        "battles": figures["battles"],
    }


def _stale_reason(stale: list[str], max_age: int) -> str:
    return f"no accepted upload in the last {max_age} minutes: {', '.join(stale)}"


def _json(answer: dict, status: int) -> Response:
    response = jsonify(answer)
    response.status_code = status
    response.headers["Cache-Control"] = "no-store"
    return response
