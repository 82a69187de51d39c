-- Issue 13: ratings that mean what they say.
--
-- PWIN is the peers' definition (LiteRumble, RRServer): the share of live pairings won, a pairing
-- being won only when its APS is above 50 (an exact 50 is a draw, no win). The summaries keep the
-- exact counts, so the stored PWIN is recomputed from them, with the same two operations as
-- rumble/rankings/scores.py summary(): (100.0 * wins) / pairings.
UPDATE bot_summaries SET pwin = CASE WHEN pairings > 0 THEN 100.0 * wins / pairings END;

-- XonStat's daily ranks (seed 002: "Ranks are calculated at the beginning of each day using the Elo
-- values at that time ... per game type"): each daily snapshot row also holds the bot's rank by
-- XonStat Elo in its rumble (rumble/store/history.py); the APS rank stays in `rank`. Rows taken
-- before this migration have none.
ALTER TABLE rank_history ADD COLUMN xonstat_rank INTEGER;

-- Melee rumbles rate each reassembled battle once, in every rating (rumble/ingest/melee.py): a server
-- worker catching its copy up after an upload reloads the bots of the battles that upload closed,
-- found by the log id being applied when each was closed. melee_battles.closed_by gains
-- 'prioritized' (a whole 17-pair prioritized battle, rated at once); the column has no CHECK.
CREATE INDEX melee_battles_closed_after ON melee_battles (rumble_id, closed_after_battle_id);
