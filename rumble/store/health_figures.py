"""The figures /healthz and /metrics read: what the database already holds, so that every server
worker answers the same.

Each read is a small one at any log size: the upload and refusal counts are a row per day,
rumble and outcome (or reason); battles per rumble come from ``upload_counts`` (a row per rumble,
uploader and day, kept by a trigger as the log grows: migration 0010), never a count of the log;
the last accepted battle is found from the end of the rumble's log (index ``battles_by_rumble``).
"""

from __future__ import annotations

from rumble.store import Store


def rumble_figures(db: Store) -> list[dict]:
    """Every rumble in the database with its active bots, the battles in its log (whatever their
    state) and the receive time of its newest accepted battle (state ``ok``; None before the first)."""
    rows = db.execute(
        "SELECT r.name, "
        "(SELECT count(*) FROM participants p WHERE p.rumble_id = r.id AND p.active), "
        "(SELECT coalesce(sum(c.battles), 0) FROM upload_counts c WHERE c.rumble_id = r.id), "
        "(SELECT b.received_at FROM battles b WHERE b.rumble_id = r.id AND b.state = 'ok' ORDER BY b.id DESC LIMIT 1) "
        "FROM rumbles r ORDER BY r.name"
    ).fetchall()
    return [
        {"name": name, "active_bots": active, "battles": battles, "last_accepted": last}
        for name, active, battles, last in rows
    ]


def upload_totals(db: Store) -> list[dict]:
    """The upload answers counted so far (``upload_stats``, all days), per rumble and outcome, with
    the server's time spent answering them in ms. A refused or failed upload has the rumble ``""``."""
    rows = db.execute(
        "SELECT game, outcome, sum(uploads), sum(total_ms) FROM upload_stats GROUP BY game, outcome ORDER BY game, outcome"
    ).fetchall()
    return [{"game": game, "outcome": outcome, "uploads": n, "total_ms": ms} for game, outcome, n, ms in rows]


def removal_refusal_totals(db: Store) -> list[dict]:
    """The refused RemoveOldParticipant requests counted so far (``removal_refusals``, all days),
    per game as the request named it and reason."""
    rows = db.execute(
        "SELECT game, reason, sum(requests) FROM removal_refusals GROUP BY game, reason ORDER BY game, reason"
    ).fetchall()
    return [{"game": game, "reason": reason, "requests": n} for game, reason, n in rows]


def answer_time_totals(db: Store) -> list[dict]:
    """The upload answer-time histogram so far (``upload_answer_times``, all days): per rumble,
    outcome and bucket (its upper bound in ms), the uploads in it and their summed time in ms."""
    rows = db.execute(
        "SELECT game, outcome, le_ms, sum(uploads), sum(total_ms) FROM upload_answer_times "
        "GROUP BY game, outcome, le_ms ORDER BY game, outcome, le_ms"
    ).fetchall()
    return [{"game": g, "outcome": o, "le_ms": le, "uploads": n, "total_ms": ms} for g, o, le, n, ms in rows]


def busy_totals(db: Store) -> list[dict]:
    """The requests answered 503 for want of a slot so far (``busy_answers``, all days), per request class."""
    rows = db.execute("SELECT class, sum(answers) FROM busy_answers GROUP BY class ORDER BY class").fetchall()
    return [{"class": kind, "answers": n} for kind, n in rows]
