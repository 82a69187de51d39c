-- bot_summaries_by_pairings (0001) served no query: the pages and the API read bot_summaries by
-- its key or whole. Every battle changes two bots' pairing counts, so it cost every upload about
-- one more page written to the WAL (scripts/bench_upload.py; issue 15).
DROP INDEX IF EXISTS bot_summaries_by_pairings;
