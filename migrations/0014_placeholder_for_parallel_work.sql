-- Placeholder for migration 0014, assigned to parallel work on issue 11, so that this branch's 0016
-- applies in the numbering migration_files() checks. Delete this file when merging that work.
SELECT 1;
