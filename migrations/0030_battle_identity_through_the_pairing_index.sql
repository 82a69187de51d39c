-- A battle is logged once: a client's retry of an upload repeats its rumble, uploader, client time,
-- bots and figures (protocol.md 7.4), and is answered as already received. A unique index on those
-- eleven columns (battles_identity) kept that, at about 58 bytes a battle: more than half the
-- battle's own row, and a quarter of a 20 M-battle file (scripts/bench_scale.py). The pairing
-- index ends with the client time instead (6 bytes more an entry), and
-- rumble.store.battle_log.append_battle looks for an equal result through it, under the write
-- lock, before it logs one: a seek to the pair's battles of that millisecond.
DROP INDEX battles_identity;
DROP INDEX battles_by_pairing;
CREATE INDEX battles_by_pairing ON battles (rumble_id, first_bot_id, second_bot_id, client_time);
