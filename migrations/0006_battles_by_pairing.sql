-- The pairing page (/Pairing) lists every logged battle of two bots. Without this index SQLite reads
-- all of the rumble's battles for it (93 ms at 1 M battles); with it, a lookup per order of first
-- and second (0.02 ms). It costs an upload about 18 µs more (135 → 153 µs per committed insert at
-- 1 M battles), well under the rest of an upload's work.
CREATE INDEX battles_by_pairing ON battles (rumble_id, first_bot_id, second_bot_id);
