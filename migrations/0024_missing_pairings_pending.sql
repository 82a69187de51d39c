-- Bots whose missing pairings (migrations/0016_missing_pairings.sql) are still being written: a
-- bot that enters or comes back has a pair with every active participant it has not met, as many
-- as the rumble has bots. Writing them all in the transaction of the upload that brought it would
-- make that upload's cost, under the write lock, grow with the rumble; instead its pairs are
-- written a fixed number at a time (rumble/store/missing_pairings.py, FILL_BATCH), in that
-- transaction and the rumble's next ones, in the order of the opponents' ids. ``after`` is the last
-- opponent id done.
CREATE TABLE missing_pending (
    rumble_id INTEGER NOT NULL,
    bot_id INTEGER NOT NULL,
    after INTEGER NOT NULL,
    PRIMARY KEY (rumble_id, bot_id)
);
