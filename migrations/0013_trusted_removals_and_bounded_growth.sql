-- Issue 11: RemoveOldParticipant counts only from an address that uploads to the rumble, and one
-- address may add only so many new bots an hour.

-- "Has this address uploaded accepted battles to this rumble since T?" is one index seek (the
-- newest such battle also names the uploader the retirement is shown with).
CREATE INDEX battles_by_address ON battles (remote_addr, rumble_id, received_at);

-- The address whose upload first named each bot, so that NEW_BOTS_PER_HOUR can count per address.
-- Bots made before this migration, and by `rumble import` or the demo, have no row. A table of its
-- own, without a rumble_id, so that no export carries the addresses (rumble/store/export.py).
CREATE TABLE bot_origins (
    bot_id INTEGER PRIMARY KEY REFERENCES bots(id),
    remote_addr TEXT,
    created_at TEXT NOT NULL            -- server time, UTC, "YYYY-MM-DD HH:MM:SS.mmm"
);
CREATE INDEX bot_origins_by_address ON bot_origins (remote_addr, created_at);
