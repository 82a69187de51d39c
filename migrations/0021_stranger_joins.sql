-- The participants that uploaders not established brought into a rumble (rumble/ingest/growth.py):
-- what NEW_BOTS_PER_HOUR_PER_RUMBLE counts, so that an established uploader's newcomers (an operator
-- filling a new ladder) do not use up the hour's allowance for strangers. Rows older than an hour
-- are deleted as new ones are made. History, like bot_origins: a rebuild leaves it as it is.
CREATE TABLE stranger_joins (
    rumble_id INTEGER NOT NULL REFERENCES rumbles(id),
    joined_at TEXT NOT NULL,
    bot_id INTEGER NOT NULL REFERENCES bots(id),
    PRIMARY KEY (rumble_id, joined_at, bot_id)
) WITHOUT ROWID;
