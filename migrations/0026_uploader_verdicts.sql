-- The uploader-consistency table of each rumble (rumble/rankings/uploader_consistency.py), as the
-- scheduled batch run computed it: what /RumbleStats, /admin, the feed and the API show once a
-- rumble's sums are too many to work through for a request (rumble/web/uploader_data.py). ``rows``
-- is the table as JSON; ``log_version`` the rumble's version it was computed at
-- (rumble/store/export.py, log_version, as JSON): equal to the current one, the rows are current.
CREATE TABLE uploader_verdicts (
    rumble_id INTEGER PRIMARY KEY REFERENCES rumbles(id),
    log_version TEXT NOT NULL,
    computed_at TEXT NOT NULL,
    rows TEXT NOT NULL
);
