-- dlock 0.6.0 -> 0.7.0: shared leases, semaphores and all-or-nothing
-- multi-leases. Holders of shared leases and semaphore permits get a table
-- of their own; exclusive leases stay in lease_store, read and written as
-- before.
\echo Use "ALTER EXTENSION dlock UPDATE TO '0.7.0'" to load this file. \quit

-- Nothing below depends on the updater's search_path: every reference is
-- schema-qualified, operators included (OPERATOR(pg_catalog.x)).
SET LOCAL search_path = pg_catalog, pg_temp;

-- The holders of shared leases and semaphores, one row per grant: the
-- columns of lease_store in the same order (the library decodes both
-- alike), then the grant's mode and permit count. A row goes once the
-- holder no longer occupies its name and the name's next grant is written.
CREATE TABLE dlock.lease_holders (
    name          text        NOT NULL,
    token         bigint      NOT NULL,
    acquired_at   timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL,
    ttl           interval    NOT NULL,
    acquired_by   text        NOT NULL,
    owner         text        NOT NULL,
    released_at   timestamptz,
    renew_count   bigint,
    lock_delay    interval    NOT NULL DEFAULT '0',
    max_hold      interval,
    backend_pid   integer,
    backend_start timestamptz,
    forced_by     text,
    force_reason  text,
    min_hold      interval,
    shared        boolean     NOT NULL,
    permits       integer     NOT NULL,
    PRIMARY KEY (name, token)
) WITH (fillfactor = 95);
COMMENT ON TABLE dlock.lease_holders IS
    'One row per grant of a shared lease or a semaphore permit (exclusive leases live in lease_store); a NULL renew_count is 0. Written only by dlock''s functions.';
GRANT SELECT ON dlock.lease_holders TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('dlock.lease_holders', '');

CREATE FUNCTION dlock.try_acquire(name text, ttl interval, owner text DEFAULT NULL,
                                  lock_delay interval DEFAULT NULL,
                                  max_hold interval DEFAULT NULL,
                                  min_hold interval DEFAULT NULL,
                                  shared boolean DEFAULT false,
                                  permits integer DEFAULT NULL)
RETURNS dlock.lease
AS 'MODULE_PATHNAME', 'dlock_try_acquire'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION dlock.try_acquire(text, interval, text, interval, interval, interval, boolean, integer) IS
    'Grants the lease for ttl if it is free and nobody waits for it; NULL at once otherwise. Only an explicit owner that holds it gets its grant back (same token). lock_delay: how long an expiry without release keeps it from others; max_hold: the longest renewals may keep it; min_hold: the least time it stays unavailable after the grant, even if released earlier; shared: one of any number of shared holders, while nobody holds it exclusively; permits: one of at most permits holders (a semaphore). Each holder gets its own token.';

CREATE FUNCTION dlock.acquire(name text, ttl interval, timeout interval,
                              owner text DEFAULT NULL,
                              lock_delay interval DEFAULT NULL,
                              max_hold interval DEFAULT NULL,
                              min_hold interval DEFAULT NULL,
                              shared boolean DEFAULT false,
                              permits integer DEFAULT NULL)
RETURNS dlock.lease
AS 'MODULE_PATHNAME', 'dlock_acquire'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION dlock.acquire(text, interval, interval, text, interval, interval, interval, boolean, integer) IS
    'Like try_acquire, but waits up to timeout, queued in arrival order and woken when the lease is released or its grant ends; SQLSTATE 55P03 when the timeout passes.';

SELECT dlock.replace_function('dlock.try_acquire(text, interval, text, interval, interval, interval)',
                              'dlock.try_acquire(text, interval, text, interval, interval, interval, boolean, integer)');
SELECT dlock.replace_function('dlock.acquire(text, interval, interval, text, interval, interval, interval)',
                              'dlock.acquire(text, interval, interval, text, interval, interval, interval, boolean, integer)');

-- All or nothing: the names are granted in one transaction, so nobody sees
-- a part of them held.
CREATE FUNCTION dlock.try_acquire_all(names text[], ttl interval, owner text DEFAULT NULL,
                                      lock_delay interval DEFAULT NULL,
                                      max_hold interval DEFAULT NULL,
                                      min_hold interval DEFAULT NULL)
RETURNS SETOF dlock.lease
AS 'MODULE_PATHNAME', 'dlock_try_acquire_all'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 4;
COMMENT ON FUNCTION dlock.try_acquire_all(text[], interval, text, interval, interval, interval) IS
    'Grants every named lease (each with its own token, in name order) if all are free and nobody waits for them; no row at once otherwise, with nothing granted.';

CREATE FUNCTION dlock.acquire_all(names text[], ttl interval, timeout interval,
                                  owner text DEFAULT NULL,
                                  lock_delay interval DEFAULT NULL,
                                  max_hold interval DEFAULT NULL,
                                  min_hold interval DEFAULT NULL)
RETURNS SETOF dlock.lease
AS 'MODULE_PATHNAME', 'dlock_acquire_all'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 4;
COMMENT ON FUNCTION dlock.acquire_all(text[], interval, interval, text, interval, interval, interval) IS
    'Like try_acquire_all, but waits up to timeout, taking the leases in name order as dlock.acquire does (so two calls never deadlock); SQLSTATE 55P03 when the timeout passes, with nothing granted.';


CREATE FUNCTION dlock.force_release(name text, reason text, token bigint DEFAULT NULL)
RETURNS dlock.lease
AS 'MODULE_PATHNAME', 'dlock_force_release'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION dlock.force_release(text, text, bigint) IS
    'Administrators: ends the lease whoever holds it (with token: that holder only; without: every holder of a shared lease or semaphore), recording who and why; returns the grant it ended (the latest, if several), or NULL if none was held. Its token then fails renew (LD002) and assert_held.';
REVOKE ALL ON FUNCTION dlock.force_release(text, text, bigint) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION dlock.force_release(text, text, bigint) TO dlock_admin;
SELECT dlock.replace_function('dlock.force_release(text, text)',
                              'dlock.force_release(text, text, bigint)');

COMMENT ON FUNCTION dlock.get(text) IS
    'The current grant of the lease (of a shared lease or a semaphore: the held grant with the latest token), or NULL if it is not held; acquires nothing.';

-- New columns at the end and the same ones before, so the views are
-- replaced in place: users' views on them and what they granted stay.
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
       s.min_hold,
       CASE WHEN s.shared THEN 'shared' ELSE 'exclusive' END AS mode,
       s.permits,
       pg_catalog.count(*) FILTER (WHERE c.state OPERATOR(pg_catalog.=) 'held')
           OVER (PARTITION BY s.name) AS holders
  FROM (SELECT l.name, l.owner, l.token, l.acquired_at, l.expires_at, l.ttl, l.released_at,
               l.acquired_by, l.renew_count, l.lock_delay, l.max_hold, l.backend_pid,
               l.backend_start, l.forced_by, l.force_reason, l.min_hold,
               false AS shared, 1 AS permits
          FROM dlock.lease_store AS l
        UNION ALL
        SELECT h.name, h.owner, h.token, h.acquired_at, h.expires_at, h.ttl, h.released_at,
               h.acquired_by, h.renew_count, h.lock_delay, h.max_hold, h.backend_pid,
               h.backend_start, h.forced_by, h.force_reason, h.min_hold,
               h.shared, h.permits
          FROM dlock.lease_holders AS h) AS s
 CROSS JOIN (SELECT pg_catalog.clock_timestamp() AS now) AS n
 CROSS JOIN LATERAL
       (SELECT dlock.lease_state(s.released_at, s.expires_at, s.lock_delay, n.now,
                                 s.acquired_at OPERATOR(pg_catalog.+) s.min_hold) AS state) AS c;
COMMENT ON VIEW dlock.leases IS
    'One row per lease grant: state held, lock-delay, expired, released or released-early (dlock.lease_state at query time, server clock); renewals, hold time, the acquiring backend, force-releases; mode (exclusive or shared), permits (a semaphore''s size, else 1) and holders (how many grants of the name are held).';

-- Waiter -> blocker edges: advisory locks; dlock leases whose gate a grant,
-- renew, release or assert_held is waiting for; and sessions queued in
-- dlock.acquire() (the lock manager's queue in dlock's key space 4, the
-- head holding it) behind the lease's holder (NULL pid when the session
-- that acquired it is gone).
CREATE OR REPLACE VIEW dlock.lock_waits WITH (security_invoker = true) AS
SELECT w.pid AS waiter_pid,
       wa.usename AS waiter_role,
       wa.application_name AS waiter_application,
       wa.query AS waiter_query,
       b.pid AS blocker_pid,
       ba.usename AS blocker_role,
       ba.application_name AS blocker_application,
       ba.query AS blocker_query,
       ba.state AS blocker_state,
       ba.state OPERATOR(pg_catalog.~~) 'idle in transaction%' AS blocker_idle_in_transaction,
       CASE WHEN w.objsubid OPERATOR(pg_catalog.=) 1 THEN 'bigint'
            WHEN w.objsubid OPERATOR(pg_catalog.=) 2 THEN 'int4pair'
            ELSE 'lease'
       END AS key_space,
       CASE WHEN w.objsubid OPERATOR(pg_catalog.=) 1
            THEN (w.classid::pg_catalog.int8 OPERATOR(pg_catalog.<<) 32)
                 OPERATOR(pg_catalog.|) w.objid::pg_catalog.int8
       END AS key,
       coalesce(n.name, s.name) AS name,
       w.waitstart AS wait_start,
       pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) w.waitstart AS waiting_for,
       NULL::pg_catalog.int8 AS queue_position
  FROM pg_catalog.pg_locks AS w
 CROSS JOIN LATERAL pg_catalog.unnest(pg_catalog.pg_blocking_pids(w.pid)) AS b(pid)
  LEFT JOIN pg_catalog.pg_stat_activity AS wa ON wa.pid OPERATOR(pg_catalog.=) w.pid
  LEFT JOIN pg_catalog.pg_stat_activity AS ba ON ba.pid OPERATOR(pg_catalog.=) b.pid
  LEFT JOIN dlock.advisory_names AS n
         ON w.objsubid OPERATOR(pg_catalog.=) 1
        AND n.key OPERATOR(pg_catalog.=) ((w.classid::pg_catalog.int8 OPERATOR(pg_catalog.<<) 32)
                                          OPERATOR(pg_catalog.|) w.objid::pg_catalog.int8)
  LEFT JOIN (SELECT DISTINCT g.name FROM (SELECT l.name FROM dlock.lease_store AS l
                                        UNION ALL
                                        SELECT h.name FROM dlock.lease_holders AS h) AS g) AS s
         ON w.objsubid OPERATOR(pg_catalog.=) 3
        AND pg_catalog.hashtextextended(s.name, 0) OPERATOR(pg_catalog.=)
            ((w.classid::pg_catalog.int8 OPERATOR(pg_catalog.<<) 32)
             OPERATOR(pg_catalog.|) w.objid::pg_catalog.int8)
 WHERE w.locktype OPERATOR(pg_catalog.=) 'advisory'
   AND w.objsubid OPERATOR(pg_catalog.<>) 4
   AND NOT w.granted
   AND w.database OPERATOR(pg_catalog.=)
       (SELECT d.oid FROM pg_catalog.pg_database AS d
         WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
UNION ALL
SELECT w.pid,
       wa.usename,
       wa.application_name,
       wa.query,
       ba.pid,
       ba.usename,
       ba.application_name,
       ba.query,
       ba.state,
       ba.state OPERATOR(pg_catalog.~~) 'idle in transaction%',
       'lease',
       NULL::pg_catalog.int8,
       s.name,
       wa.query_start,
       pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) wa.query_start,
       w.queue_position
  FROM (SELECT l.pid, l.classid, l.objid,
               pg_catalog.row_number() OVER (
                   PARTITION BY l.classid, l.objid
                   ORDER BY l.granted DESC, l.waitstart, l.pid) AS queue_position
          FROM pg_catalog.pg_locks AS l
         WHERE l.locktype OPERATOR(pg_catalog.=) 'advisory'
           AND l.objsubid OPERATOR(pg_catalog.=) 4
           AND l.database OPERATOR(pg_catalog.=)
               (SELECT d.oid FROM pg_catalog.pg_database AS d
                 WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())) AS w
  -- The sessions of the grants that occupy the name, each once: one
  -- session may hold several grants of a shared lease or a semaphore.
  JOIN (SELECT DISTINCT g.name, g.backend_pid, g.backend_start
          FROM (SELECT l.name, l.released_at, l.expires_at, l.lock_delay, l.acquired_at,
                       l.min_hold, l.backend_pid, l.backend_start
                  FROM dlock.lease_store AS l
                UNION ALL
                SELECT h.name, h.released_at, h.expires_at, h.lock_delay, h.acquired_at,
                       h.min_hold, h.backend_pid, h.backend_start
                  FROM dlock.lease_holders AS h) AS g
         WHERE dlock.lease_state(g.released_at, g.expires_at, g.lock_delay,
                                 pg_catalog.clock_timestamp(),
                                 g.acquired_at OPERATOR(pg_catalog.+) g.min_hold)
               OPERATOR(pg_catalog.=) ANY ('{held,lock-delay,released-early}'::pg_catalog.text[])) AS s
    ON pg_catalog.hashtextextended(s.name, 0) OPERATOR(pg_catalog.=)
       ((w.classid::pg_catalog.int8 OPERATOR(pg_catalog.<<) 32)
        OPERATOR(pg_catalog.|) w.objid::pg_catalog.int8)
  LEFT JOIN pg_catalog.pg_stat_activity AS wa ON wa.pid OPERATOR(pg_catalog.=) w.pid
  LEFT JOIN pg_catalog.pg_stat_activity AS ba
         ON ba.pid OPERATOR(pg_catalog.=) s.backend_pid
        AND (ba.backend_start IS NULL
             OR ba.backend_start OPERATOR(pg_catalog.=) s.backend_start);
COMMENT ON VIEW dlock.lock_waits IS
    'One row per waiter -> blocker edge in this database: advisory locks, dlock lease gates, and sessions queued in dlock.acquire() behind a lease''s holders (queue_position 1 is next); with both sessions and whether the blocker is idle in transaction.';

