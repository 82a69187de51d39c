-- Two of the battle log's indexes held more than their queries read; every battle pays for each
-- index entry on disk and in the WAL (bytes a battle: scripts/bench_scale.py).
--
-- battles_by_rumble: an index entry ends with the row's id anyway, so (rumble_id) is ordered as
-- (rumble_id, id) was, without the id a second time.
--
-- battles_by_address: the newest battle of an address in a rumble is found by walking its entries
-- back from the newest id (rumble.store.battle_log.latest_uploader), so the receive time, 24 bytes
-- of text, need not be in it: an upload's receive time is stamped under the write lock, in id order.
DROP INDEX battles_by_rumble;
CREATE INDEX battles_by_rumble ON battles (rumble_id);
DROP INDEX battles_by_address;
CREATE INDEX battles_by_address ON battles (remote_addr, rumble_id);
