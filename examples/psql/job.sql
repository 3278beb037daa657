-- The nightly report under the lease "nightly-report": take it, write the
-- report under its fencing token, renew it before the work, release it.
--   psql -X -v ON_ERROR_STOP=1 -f job.sql
-- psql cannot choose its exit status: 0 when done and when busy (it says
-- which), 3 when the lease was lost or the report row is missing (an error
-- stops the script, and psql prints it).
SELECT 'report-worker-' || pg_backend_pid() AS owner \gset
SELECT token, token IS NOT NULL AS granted
  FROM dlock.try_acquire('nightly-report', '30 s', owner => :'owner') \gset
\if :granted
  \echo granted token=:token
  -- Every write checks in its own transaction that the lease is still ours
  -- (assert_held), and the row refuses an older token than its own. It must
  -- update the one report row: none (0) means the row is missing, and the
  -- job goes no further.
  SELECT dlock.fenced_update('reports', :token,
           jsonb_build_object('status', 'running', 'total', NULL),
           jsonb_build_object('day', '2026-11-30')) = 1 AS wrote
    FROM dlock.assert_held('nightly-report', :token) \gset
  \if :wrote
    \echo wrote running with token :token
    -- A long job renews before each step (at least every third of the ttl).
    SELECT valid_for FROM dlock.renew('nightly-report', :token, owner => :'owner') \gset
    \echo renewed
    SELECT coalesce(sum(amount), 0) AS total FROM sales WHERE day = '2026-11-30' \gset
    SELECT dlock.fenced_update('reports', :token,
             jsonb_build_object('status', 'done', 'total', :'total'::numeric),
             jsonb_build_object('day', '2026-11-30')) = 1 AS wrote
      FROM dlock.assert_held('nightly-report', :token) \gset
    \if :wrote
      \echo wrote done with token :token
    \endif
  \endif
  SELECT dlock.release('nightly-report', :token, owner => :'owner') AS released \gset
  \if :wrote
    \if :released
      \echo released
    \else
      \echo 'not released: the lease had already ended'
    \endif
  \else
    -- No report row: the lease is given back; stop with an error saying so
    -- (exit 3), raised in PL/pgSQL (SQL cannot), printed alone (terse).
    \set VERBOSITY terse
    DO $$BEGIN RAISE 'no report row for 2026-11-30'; END$$;
  \endif
\else
  SELECT coalesce(owner, 'nobody now') AS holder FROM dlock.get('nightly-report') \gset
  \echo busy: nightly-report is held by :holder
\endif
