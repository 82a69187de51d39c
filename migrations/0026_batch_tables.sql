-- Tables the scheduled batch run works out for the pages, once a rumble is too large to work them
-- out for a request (rumble/store/batch_tables.py): per rumble and table (``what``: "uploaders", the
-- uploader-consistency table; "completions", the new bots that met every active participant, for
-- the feed), the rows as JSON, and the rumble's log version they reflect (rumble/store/export.py,
-- log_version, as JSON: equal to the current one, the rows are current).
CREATE TABLE batch_tables (
    rumble_id INTEGER NOT NULL REFERENCES rumbles(id),
    what TEXT NOT NULL,
    log_version TEXT NOT NULL,
    computed_at TEXT NOT NULL,
    rows TEXT NOT NULL,
    PRIMARY KEY (rumble_id, what)
);
