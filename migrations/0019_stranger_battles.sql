-- What an uploader that is not established may move (rumble/strangers.py): its battles counted per
-- rumble, bot, party ("name@network") and UTC day; beyond STRANGER_BATTLES_PER_BOT_PER_DAY a battle
-- is held for review. Days before the current one are deleted as the next day's first row is made.
CREATE TABLE stranger_battles (
    rumble_id INTEGER NOT NULL REFERENCES rumbles(id),
    bot_id INTEGER NOT NULL REFERENCES bots(id),
    party TEXT NOT NULL,
    day TEXT NOT NULL,                  -- "YYYY-MM-DD", UTC
    battles INTEGER NOT NULL,
    PRIMARY KEY (rumble_id, bot_id, party, day)
) WITHOUT ROWID;
