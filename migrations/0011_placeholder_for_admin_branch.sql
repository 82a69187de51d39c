-- Placeholder for migration 0011, assigned to parallel work (branch admin: 0011_admin_sessions.sql), so that
-- this branch's 0012 applies in the numbering migration_files() checks. Delete this file when merging that branch.
SELECT 1;
