-- dlock 0.5.0 -> 0.6.0: smaller lease rows. A renew_count of 0 is stored
-- as NULL (a NULL takes no space in the row), and the table keeps a
-- twentieth of each page free instead of half: enough for heap-only
-- updates, since dlock's transactions are short and old versions are
-- pruned as the page fills. Rows written before keep their
-- zeros; dlock reads both, and so does the 0.5.0 library of a session
-- that loaded it before the update (it reads a NULL renew_count as 0).
\echo Use "ALTER EXTENSION dlock UPDATE TO '0.6.0'" to load this file. \quit

-- Nothing below depends on the updater's search_path: every reference is
-- schema-qualified, operators included (OPERATOR(pg_catalog.x)).
SET LOCAL search_path = pg_catalog, pg_temp;

ALTER TABLE dlock.lease_store
    ALTER COLUMN renew_count DROP NOT NULL,
    ALTER COLUMN renew_count DROP DEFAULT,
    SET (fillfactor = 95);
COMMENT ON TABLE dlock.lease_store IS
    'One row per lease name: its latest grant; a NULL renew_count is 0. Written only by dlock''s functions.';

-- Same columns, so the view is replaced in place: users' views on it and
-- what they granted on it stay.
CREATE OR REPLACE VIEW dlock.leases WITH (security_invoker = true) AS
SELECT s.name,
       s.owner,
       s.token,
       c.state,
       s.acquired_at,
       s.expires_at,
       CASE WHEN c.state OPERATOR(pg_catalog.=) 'held'
            THEN s.expires_at OPERATOR(pg_catalog.-) n.now
       END AS valid_for,
       s.ttl,
       s.released_at,
       s.acquired_by,
       coalesce(s.renew_count, 0) AS renew_count,
       CASE WHEN c.state OPERATOR(pg_catalog.=) 'held'
            THEN n.now OPERATOR(pg_catalog.-) s.acquired_at
       END AS held_for,
       s.lock_delay,
       s.max_hold,
       s.backend_pid,
       EXISTS (SELECT 1 FROM pg_catalog.pg_stat_activity AS a
                WHERE a.pid OPERATOR(pg_catalog.=) s.backend_pid
                  AND (a.backend_start IS NULL
                       OR a.backend_start OPERATOR(pg_catalog.=) s.backend_start))
           AS backend_connected,
       s.forced_by,
       s.force_reason,
       s.min_hold
  FROM dlock.lease_store AS s
 CROSS JOIN (SELECT pg_catalog.clock_timestamp() AS now) AS n
 CROSS JOIN LATERAL
       (SELECT dlock.lease_state(s.released_at, s.expires_at, s.lock_delay, n.now,
                                 s.acquired_at OPERATOR(pg_catalog.+) s.min_hold) AS state) AS c;
