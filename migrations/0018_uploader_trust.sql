-- Who is trusted for what (rumble/rankings/uploader_trust.py). A party is an uploader name with the
-- network its battles came from, "name@203.0.113.0/24": a name alone is free text.

-- A maintainer's word on a party, for every rumble: vouched (established at once) or revoked
-- (never established, whatever it earned). The newest word stands.
CREATE TABLE uploader_vouches (
    party TEXT PRIMARY KEY,
    standing TEXT NOT NULL CHECK (standing IN ('vouched', 'revoked')),
    maintainer TEXT NOT NULL,
    at TEXT NOT NULL,                   -- server time, UTC, "YYYY-MM-DD HH:MM:SS.mmm"
    note TEXT NOT NULL DEFAULT ''
);

-- Each party's standing in a rumble as the batch job last computed it from the log and the vouches:
-- established by a vouch or earned by agreement, and why (shown on /RumbleStats and the API).
CREATE TABLE uploader_standings (
    rumble_id INTEGER NOT NULL REFERENCES rumbles(id),
    party TEXT NOT NULL,
    established INTEGER NOT NULL,
    how TEXT NOT NULL,                  -- vouched, earned, revoked, not yet, disagrees
    battles_shared INTEGER NOT NULL,
    pairings_shared INTEGER NOT NULL,
    p REAL,
    why TEXT NOT NULL,
    computed_at TEXT NOT NULL,
    PRIMARY KEY (rumble_id, party)
);

-- "How many participants joined this rumble in the last hour?" (NEW_BOTS_PER_HOUR_PER_RUMBLE): one range.
CREATE INDEX participants_by_first_seen ON participants (rumble_id, first_seen);

-- RemoveOldParticipant requests refused before any write: counted per day, rumble and reason, not
-- stored one row each (a flood of them costs one write per worker every half minute).
CREATE TABLE removal_refusals (
    day TEXT NOT NULL,
    game TEXT NOT NULL,
    reason TEXT NOT NULL,
    requests INTEGER NOT NULL,
    PRIMARY KEY (day, game, reason)
);
