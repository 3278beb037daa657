-- Session-level advisory lock, waiting: every client blocks in
-- pg_advisory_lock on the same key and unlocks it at once.
SELECT pg_advisory_lock(2);
SELECT pg_advisory_unlock(2);
