"""Waiting for the maintenance jobs /admin starts (rumble/maintenance/jobs.py): each runs as a
process of its own, so a test that checks the tables afterwards waits for it first."""

from __future__ import annotations

import sqlite3
import time

JOB_TIMEOUT_S = 120


def finished(client, response, headers: dict) -> dict:
    """Wait for the job a 202 answer names; its final row (state 'done' asserted)."""
    assert response.status_code == 202, response.get_data(as_text=True)
    url = response.json["url"]
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while time.monotonic() < deadline:
        found = client.get(url, headers=headers).json
        if found["state"] in ("done", "failed"):
            assert found["state"] == "done", found
            return found
        time.sleep(0.05)
    raise AssertionError(f"job {url} still running after {JOB_TIMEOUT_S} s")


def post_and_wait(client, path: str, headers: dict, **kwargs):
    """POST an admin action that starts a job and wait for it; (the 202 answer's JSON, the job's row)."""
    response = client.post(path, headers=headers, **kwargs)
    return response.json, finished(client, response, headers)


def wait_for_all(db_path: str) -> list[dict]:
    """Wait until no job is queued or running (a browser's POST is answered by a redirect, not the job's id)."""
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while time.monotonic() < deadline:
        conn = sqlite3.connect(db_path)
        rows = conn.execute("SELECT id, state, error FROM jobs ORDER BY id").fetchall()
        conn.close()
        if all(state in ("done", "failed") for _, state, _ in rows):
            assert all(state == "done" for _, state, _ in rows), rows
            return rows
        time.sleep(0.05)
    raise AssertionError("jobs still running")
