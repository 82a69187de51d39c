"""No 500 from bad input (issue 11): every registered route, with hostile values in every parameter
it reads, answers a 4xx, a proper page that ignores the value, or on the client's own endpoints the
protocol's answer (200 text/plain, lines the client reads) -- never a 500.

The routes come from the app's url_map, so a new route is swept without a change here. On each
route the sweep varies, one at a time, the query or form names PARAMS declares for its endpoint
(every known name for an endpoint PARAMS does not know), its path variables, and for the upload the
protocol's fields in the raw body. The request class records every name a view reads from its query
or form, and a last check fails, naming it, if a route read a name the sweep never varied there.
Admin routes are swept without credentials (each must refuse) and with a maintainer's token, so
that the handlers' own parsing is swept too.
"""

from __future__ import annotations

import json
import sqlite3

import bad_input
import pytest
from bad_input import HOSTILE, VALID, encode, path_for, protocol_problem
from conftest import battle, maintainer_token
from flask import Flask, request
from werkzeug.datastructures import ImmutableMultiDict

from rumble.maintenance import jobs
from rumble.protocol.upload import FIELDS, format_upload

# What the pages' search and column control read (rumble.web.search, pages.rankings), swept with the
# rest; bad_input.PARAMS is the place for them, shared with the gunicorn sweep, when that file is next changed.
PARAMS = {
    **bad_input.PARAMS,
    "pages.rankings": (*bad_input.PARAMS["pages.rankings"], "columns", "prefix"),
    "pages.robots": (),
    "search.api_search": ("prefix", "limit"),
    "health.healthz": ("max_age_minutes", "game"),
    "health.metrics": (),
}
KNOWN = sorted({name for names in PARAMS.values() for name in names} | set(VALID))

# JSON bodies to the admin POSTs can carry what a form cannot: other types and lone surrogates.
# (Each is checked with scrypt under a token, so only those a form cannot send, on the routes that take JSON.)
HOSTILE_JSON = {"number 1e999": 1e999, "object": {"a": 1}, "list": [1, "x"], "null": None, "lone surrogate": "\ud800"}
NO_JSON = ("admin.login", "admin.logout")  # browser forms only

NOTHING = "999999999"  # a battle id that selects nothing, so the admin actions change no battle

# The valid values a hostile one is set among, per endpoint (several: each is swept), so that the
# hostile value reaches the handler's own parsing instead of an early "no such rumble".
BASES: dict[str, list[dict[str, str]]] = {
    **{f"admin.{a}": [{"ids": NOTHING}] for a in ("flag", "unflag", "rollback")},
    "admin.rumble_settings": [
        {"game": "roborumble", "key": "rounds"},
        {"game": "roborumble", "key": "field"},
        {"game": "roborumble", "key": "melee"},
    ],
    "admin.retire": [{"game": "roborumble", "name": "no.Such 1.0"}],
    "admin.restore": [{"game": "roborumble", "name": "no.Such 1.0"}],
    "admin.rebuild": [{}],
    "admin.batch": [{}],
    **{f"admin.uploaders.{a}": [{"uploader": "Sweeper", "network": "192.0.2.0/24"}] for a in ("vouch", "revoke")},
    "client.remove_old_participant": [{"version": "1", "game": "roborumble", "name": "no.Such_1.0", "dummy": "NA"}],
}
# What a refused request must leave as it was (the audit log and the RemoveOldParticipant log record refusals).
STATE_TABLES = (
    "battles",
    "bots",
    "participants",
    "participant_events",
    "pairings",
    "bot_summaries",
    "ratings",
    "priority_battles",
    "battle_flags",
    "admin_settings",
    "maintainers",
    "rumbles",
)


class RecordingArgs(ImmutableMultiDict):
    """Query and form values that note, per endpoint, every name a view looks up."""

    seen: set[tuple[str, str]] = set()

    def _note(self, key) -> None:
        if request:
            RecordingArgs.seen.add((request.endpoint or "", str(key)))

    def __getitem__(self, key):
        self._note(key)
        return super().__getitem__(key)

    def __contains__(self, key) -> bool:
        self._note(key)
        return super().__contains__(key)

    def getlist(self, key, type=None):  # noqa: A002 (werkzeug's signature)
        self._note(key)
        return super().getlist(key, type)


@pytest.fixture
def swept_app(app, demo_db, monkeypatch):

    # An accepted /admin rebuild, flag, rollback or unflag is recorded as a job (202); its process
    # is not started here: the sweep is about parsing, and hundreds of replays would add nothing.
    monkeypatch.setattr(jobs, "spawn", lambda db_path, job_id: None)

    class Recording(Flask.request_class):
        parameter_storage_class = RecordingArgs

    app.request_class = Recording
    app.config["RUMBLE"]["ADMIN_FAILURES_PER_HOUR"] = (
        1_000_000  # thousands of bad tokens on purpose; the limit has its own tests
    )
    RecordingArgs.seen = set()
    return app


def page_problem(endpoint: str, response, authenticated: bool) -> str | None:
    """Why an answer is neither a 4xx in plain words nor a proper page, or None."""
    status, body = response.status_code, response.get_data()
    if endpoint.startswith("admin.") and endpoint != "admin.login" and not authenticated:
        return None if status == 401 else f"{status} without credentials"
    if status in (400, 401, 403, 404, 405, 429):
        return None if body.strip() and b"Internal Server Error" not in body else f"{status} without a reason"
    if status == 202 and endpoint.startswith("admin.") and authenticated:
        return None  # a maintenance job recorded (rumble.maintenance.jobs), its answer JSON with the job's id
    if status == 303 and endpoint.startswith("admin."):
        return None  # a browser form's answer: back to /admin or the login page
    if status == 308 and response.location:
        return None  # werkzeug's routing merging the double slash an empty path segment leaves
    if status != 200:
        return f"status {status}"
    if response.mimetype == "application/json":
        try:
            json.loads(body)
        except ValueError:
            return "200 with broken JSON"
    elif response.mimetype == "text/html" and not body.lstrip().lower().startswith(b"<!doctype html>"):
        return "200 with a broken page"
    return None


def send(client, rule, method: str, params: dict, path_values: dict, headers: dict, as_json: bool = False):
    """One request: ``params`` in the query (GET) or the body (POST), ``path_values`` in the path."""
    path = path_for(rule, path_values)
    if method == "GET":
        return client.get(path, query_string=encode(params), headers=headers)
    if as_json:
        return client.post(path, data=json.dumps(params), content_type="application/json", headers=headers)
    return client.post(path, data=encode(params), content_type="application/x-www-form-urlencoded", headers=headers)


def upload_body(field: str, value: bytes) -> bytes:
    """The good upload with one field's raw value replaced (the client does not URL-encode)."""
    parts = dict(part.split(b"=", 1) for part in format_upload(battle()).rstrip(b"\n").split(b"&"))
    parts[field.encode()] = value
    return b"&".join(k + b"=" + v for k, v in parts.items()) + b"\n"


def refused(endpoint: str, response) -> bool:
    """Whether the answer refuses the request: a 4xx, or the protocol's ``OK. ERROR:``."""
    if endpoint.startswith("client."):
        return response.get_data().startswith(b"OK. ERROR: ")
    return 400 <= response.status_code < 500


class Sweep:
    """Requests sent, problems found, and the database's state to check that refusals change nothing."""

    def __init__(self, app, token: str | None = None):
        """Without ``token``, no credentials; with it, a browser session for the forms (a token is
        checked with scrypt on every request, a session is not) and the token for JSON bodies."""
        self.client, self.token, self.authenticated = app.test_client(), token, token is not None
        self.csrf = None
        if token:
            self.login()
        self.db = sqlite3.connect(app.config["RUMBLE"]["DB"])
        self.problems: list[str] = []
        self.sent = 0
        self.state = self.fingerprint()

    def login(self) -> None:
        """Start a browser session with the token; keep its CSRF token for the forms."""
        self.client.get("/admin/login")
        with self.client.session_transaction("/admin/login") as session:
            csrf = session["csrf"]
        assert self.client.post("/admin/login", data={"token": self.token, "csrf_token": csrf}).status_code == 303
        with self.client.session_transaction("/admin/login") as session:
            self.csrf = session["csrf"]

    def fingerprint(self) -> dict:
        return {table: hash(tuple(self.db.execute(f"SELECT * FROM {table} ORDER BY 1"))) for table in STATE_TABLES}

    def check(self, what: str, endpoint: str, method: str, response) -> None:
        """Note what is wrong with the answer, and with the database after a refusal."""
        self.sent += 1
        if endpoint.startswith("client."):
            problem = protocol_problem(
                endpoint, response.status_code, response.mimetype, response.get_data(as_text=True)
            )
        else:
            problem = page_problem(endpoint, response, self.authenticated)
        if problem:
            self.problems.append(f"{what}: {problem}")
        if method == "POST" or endpoint.startswith("client."):
            state = self.fingerprint()
            changed = [table for table in STATE_TABLES if state[table] != self.state[table]]
            if changed and refused(endpoint, response):
                self.problems.append(f"{what}: refused ({response.status_code}) but changed {', '.join(changed)}")
            self.state = state

    def route(self, rule) -> None:
        """Every method, base and hostile value of one route."""
        endpoint, names = rule.endpoint, PARAMS.get(rule.endpoint, KNOWN)
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
            for base in BASES.get(endpoint, [{k: v for k, v in VALID.items() if k in names}]):
                for extra in ({}, {"api": "1"}) if "api" in names else ({},):
                    cases = [(name, label, {name: value}, {}) for name in names for label, value in HOSTILE.items()]
                    cases += [
                        (f"<{name}>", label, {}, {name: value})
                        for name in rule.arguments
                        for label, value in HOSTILE.items()
                    ]
                    for name, label, hostile, in_path in cases:
                        params = {**base, **extra, **hostile}
                        if endpoint == "admin.login" and method == "POST" and not self.authenticated:
                            self.client.get("/admin/login")  # a session with a CSRF token to send back
                            with self.client.session_transaction("/admin/login") as session:
                                params.setdefault("csrf_token", session["csrf"])
                        elif method == "POST" and self.authenticated:
                            params.setdefault("csrf_token", self.csrf)
                        response = send(self.client, rule, method, params, in_path, {})
                        self.check(f"{method} {rule.rule} {name}={label}", endpoint, method, response)
                        if endpoint in ("admin.logout", "admin.login") and self.authenticated:
                            self.login()  # the sweep goes on in a session
                if (
                    method == "POST"
                    and self.authenticated
                    and endpoint not in NO_JSON
                    and base == BASES.get(endpoint, [base])[0]
                ):
                    bearer = {"Authorization": f"Bearer {self.token}"}
                    for name in (n for n in names if n != "csrf_token"):  # a token needs none
                        for label, value in HOSTILE_JSON.items():
                            response = send(self.client, rule, method, {**base, name: value}, {}, bearer, as_json=True)
                            self.check(f"POST {rule.rule} JSON {name}={label}", endpoint, method, response)

    def uploads(self) -> None:
        """Each protocol field of an upload with each hostile value, in the raw body the client sends."""
        for field in FIELDS:
            for label, value in HOSTILE.items():
                body = upload_body(field, value)
                response = self.client.post(
                    "/UploadedResults", data=body, content_type="application/x-www-form-urlencoded"
                )
                # Not a Flask route (rumble.web.client.UploadFront), so swept here only: checked as a client endpoint.
                self.check(f"POST /UploadedResults {field}={label}", "client.upload", "POST", response)

    def report(self) -> str:
        return f"{len(self.problems)} of {self.sent} requests:\n" + "\n".join(self.problems)


def unswept_reads() -> list[str]:
    """Names a route read from its query or form that the sweep did not vary there."""
    return sorted(
        f"{endpoint} reads {name!r}"
        for endpoint, name in RecordingArgs.seen
        if endpoint and name not in PARAMS.get(endpoint, KNOWN)
    )


def test_every_route_answers_hostile_values_without_a_500(swept_app):
    sweep = Sweep(swept_app)
    for rule in swept_app.url_map.iter_rules():
        sweep.route(rule)
    sweep.uploads()
    assert sweep.problems == [], sweep.report()
    assert sweep.sent > 1500  # every route was reached (1,920 requests when this was written)
    assert unswept_reads() == []


def test_every_admin_route_parses_hostile_values_without_a_500_for_a_maintainer(swept_app):
    sweep = Sweep(swept_app, maintainer_token(swept_app))
    for rule in swept_app.url_map.iter_rules():
        if rule.endpoint.startswith("admin."):
            sweep.route(rule)
    assert sweep.problems == [], sweep.report()
    assert sweep.sent > 800
    assert unswept_reads() == []


def test_the_declared_parameters_name_only_registered_endpoints(swept_app):
    """A renamed endpoint would leave its PARAMS entry sweeping nothing (the new name would get KNOWN)."""
    assert set(PARAMS) <= {rule.endpoint for rule in swept_app.url_map.iter_rules()}


def test_a_new_route_is_swept_without_being_declared(swept_app):
    """A route the sweep was never told about gets every known parameter: one that int()s ``limit``
    is caught; one that reads a name nobody swept is named."""

    def careless():
        return str(int(request.args.get("limit", "1")) + len(request.args.get("fresh", "")))

    swept_app.add_url_rule("/Careless", view_func=careless)
    sweep = Sweep(swept_app)
    sweep.route(next(rule for rule in swept_app.url_map.iter_rules() if rule.endpoint == "careless"))
    assert "GET /Careless limit=superscript two: status 500" in sweep.problems
    assert unswept_reads() == ["careless reads 'fresh'"]
