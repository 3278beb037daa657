-- Session-level advisory lock, contended: every client tries the same key
-- once per transaction; a winner unlocks it at once.
SELECT pg_try_advisory_lock(1)::int AS got \gset
\if :got = 1
SELECT pg_advisory_unlock(1);
\endif
