-- Battles per uploader and UTC day in each rumble: what /RumbleStats shows. A trigger keeps the
-- counts as the log grows, so the page reads this small table instead of scanning the whole log
-- (about 0.47 s a view at 719,400 battles; it would be some 16 s at the real roborumble's 24.7 M).
-- The log is append-only (0001's triggers), so the counts always equal a count of the log's rows,
-- whatever their state, as the page counted them before.
CREATE TABLE upload_counts (
    rumble_id INTEGER NOT NULL,
    uploader TEXT NOT NULL,
    day TEXT NOT NULL,                  -- the UTC day of received_at, YYYY-MM-DD
    battles INTEGER NOT NULL,
    last_upload TEXT NOT NULL,          -- the latest received_at of those battles
    PRIMARY KEY (rumble_id, uploader, day)
) WITHOUT ROWID;

INSERT INTO upload_counts (rumble_id, uploader, day, battles, last_upload)
SELECT rumble_id, uploader, substr(received_at, 1, 10), count(*), max(received_at) FROM battles GROUP BY 1, 2, 3;

CREATE TRIGGER battles_count_uploads AFTER INSERT ON battles
BEGIN
    INSERT INTO upload_counts (rumble_id, uploader, day, battles, last_upload)
    VALUES (NEW.rumble_id, NEW.uploader, substr(NEW.received_at, 1, 10), 1, NEW.received_at)
    ON CONFLICT (rumble_id, uploader, day)
    DO UPDATE SET battles = battles + 1, last_upload = max(last_upload, excluded.last_upload);
END;
