-- dlock 0.2.0 -> 0.3.0: administration and security. Advisory locks made
-- visible and usable by name (dlock.key, advisory_lock/advisory_unlock, the
-- views dlock.advisory_locks and dlock.lock_waits); lease administration
-- (lock-delay, max_hold, force_release, release_all, sweep); per-role
-- leases and the dlock_admin role.
\echo Use "ALTER EXTENSION dlock UPDATE TO '0.3.0'" to load this file. \quit

-- Lease administration: renew counts, Chubby's lock-delay, a max_hold cap,
-- the acquiring backend, and force-release records.
ALTER TABLE dlock.lease_store
    ADD COLUMN renew_count   bigint      NOT NULL DEFAULT 0,
    ADD COLUMN lock_delay    interval    NOT NULL DEFAULT '0',
    ADD COLUMN max_hold      interval,
    ADD COLUMN backend_pid   integer,
    ADD COLUMN backend_start timestamptz,
    ADD COLUMN forced_by     text,
    ADD COLUMN force_reason  text;

-- Names behind the keys dlock.advisory_lock() has taken, for the views.
CREATE TABLE dlock.advisory_names (
    key  bigint PRIMARY KEY,
    name text   NOT NULL
);
COMMENT ON TABLE dlock.advisory_names IS
    'The name behind each advisory key dlock.advisory_lock() has taken. Written only by dlock''s functions.';
SELECT pg_catalog.pg_extension_config_dump('dlock.advisory_names', '');
GRANT SELECT ON dlock.advisory_names TO PUBLIC;

CREATE FUNCTION dlock.key(name text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'dlock_key'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION dlock.key(text) IS
    'The advisory-lock key for a name: the first 8 bytes of SHA-256 of its UTF-8 bytes, big-endian, as a signed bigint.';

CREATE FUNCTION dlock.advisory_lock(name text, timeout interval DEFAULT NULL,
                                    shared boolean DEFAULT false, xact boolean DEFAULT false)
RETURNS boolean
AS 'MODULE_PATHNAME', 'dlock_advisory_lock'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION dlock.advisory_lock(text, interval, boolean, boolean) IS
    'pg_advisory_lock on dlock.key(name), waiting at most timeout (NULL: no limit): true if taken, false if the wait timed out (nothing is left held).';

CREATE FUNCTION dlock.advisory_unlock(name text, shared boolean DEFAULT false)
RETURNS boolean
AS 'MODULE_PATHNAME', 'dlock_advisory_unlock'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION dlock.advisory_unlock(text, boolean) IS
    'pg_advisory_unlock on dlock.key(name): true if this session held the session-level lock and released it.';

CREATE VIEW dlock.advisory_locks WITH (security_invoker = true) AS
SELECT CASE l.objsubid WHEN 1 THEN 'bigint' ELSE 'int4pair' END AS key_space,
       CASE WHEN l.objsubid OPERATOR(pg_catalog.=) 1
            THEN (l.classid::pg_catalog.int8 OPERATOR(pg_catalog.<<) 32)
                 OPERATOR(pg_catalog.|) l.objid::pg_catalog.int8
       END AS key,
       CASE WHEN l.objsubid OPERATOR(pg_catalog.=) 2
            THEN (l.classid::pg_catalog.int8 OPERATOR(pg_catalog.-)
                  CASE WHEN l.classid::pg_catalog.int8 OPERATOR(pg_catalog.>) 2147483647
                       THEN 4294967296 ELSE 0 END)::pg_catalog.int4
       END AS key1,
       CASE WHEN l.objsubid OPERATOR(pg_catalog.=) 2
            THEN (l.objid::pg_catalog.int8 OPERATOR(pg_catalog.-)
                  CASE WHEN l.objid::pg_catalog.int8 OPERATOR(pg_catalog.>) 2147483647
                       THEN 4294967296 ELSE 0 END)::pg_catalog.int4
       END AS key2,
       n.name,
       CASE l.mode WHEN 'ShareLock' THEN 'shared' ELSE 'exclusive' END AS mode,
       l.granted,
       l.pid,
       a.usename AS role,
       a.application_name AS application,
       a.client_addr,
       a.state,
       a.query,
       l.waitstart AS wait_start,
       pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) l.waitstart AS waiting_for,
       CASE WHEN NOT l.granted THEN pg_catalog.pg_blocking_pids(l.pid) END AS blocked_by
  FROM pg_catalog.pg_locks AS l
  LEFT JOIN pg_catalog.pg_stat_activity AS a ON a.pid OPERATOR(pg_catalog.=) l.pid
  LEFT JOIN dlock.advisory_names AS n
         ON l.objsubid OPERATOR(pg_catalog.=) 1
        AND n.key OPERATOR(pg_catalog.=) ((l.classid::pg_catalog.int8 OPERATOR(pg_catalog.<<) 32)
                                          OPERATOR(pg_catalog.|) l.objid::pg_catalog.int8)
 WHERE l.locktype OPERATOR(pg_catalog.=) 'advisory'
   AND l.objsubid OPERATOR(pg_catalog.=) ANY ('{1,2}'::pg_catalog.int2[])
   AND l.database OPERATOR(pg_catalog.=)
       (SELECT d.oid FROM pg_catalog.pg_database AS d
         WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database());
COMMENT ON VIEW dlock.advisory_locks IS
    'One row per advisory lock entry of this database in pg_locks, decoded: keys, name (if dlock knows it), holder or waiter and whom it waits for.';

-- Waiter -> blocker edges: advisory locks; dlock leases whose gate a renew,
-- release or assert_held is waiting for; and sessions in dlock.acquire()
-- (holding a shared lock in dlock's key space 4 while they wait) behind the
-- lease's holder (NULL pid when the session that acquired it is gone).
CREATE VIEW dlock.lock_waits WITH (security_invoker = true) AS
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
       CASE w.objsubid WHEN 1 THEN 'bigint' WHEN 2 THEN 'int4pair' ELSE 'lease' END AS key_space,
       CASE WHEN w.objsubid OPERATOR(pg_catalog.=) 1
            THEN (w.classid::pg_catalog.int8 OPERATOR(pg_catalog.<<) 32)
                 OPERATOR(pg_catalog.|) w.objid::pg_catalog.int8
       END AS key,
       coalesce(n.name, s.name) AS name,
       w.waitstart AS wait_start,
       pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) w.waitstart AS waiting_for
  FROM pg_catalog.pg_locks AS w
 CROSS JOIN LATERAL pg_catalog.unnest(pg_catalog.pg_blocking_pids(w.pid)) AS b(pid)
  LEFT JOIN pg_catalog.pg_stat_activity AS wa ON wa.pid OPERATOR(pg_catalog.=) w.pid
  LEFT JOIN pg_catalog.pg_stat_activity AS ba ON ba.pid OPERATOR(pg_catalog.=) b.pid
  LEFT JOIN dlock.advisory_names AS n
         ON w.objsubid OPERATOR(pg_catalog.=) 1
        AND n.key OPERATOR(pg_catalog.=) ((w.classid::pg_catalog.int8 OPERATOR(pg_catalog.<<) 32)
                                          OPERATOR(pg_catalog.|) w.objid::pg_catalog.int8)
  LEFT JOIN dlock.lease_store AS s
         ON w.objsubid OPERATOR(pg_catalog.=) 3
        AND pg_catalog.hashtextextended(s.name, 0) OPERATOR(pg_catalog.=)
            ((w.classid::pg_catalog.int8 OPERATOR(pg_catalog.<<) 32)
             OPERATOR(pg_catalog.|) w.objid::pg_catalog.int8)
 WHERE w.locktype OPERATOR(pg_catalog.=) 'advisory'
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
       pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) wa.query_start
  FROM pg_catalog.pg_locks AS w
  JOIN dlock.lease_store AS s
    ON pg_catalog.hashtextextended(s.name, 0) OPERATOR(pg_catalog.=)
       ((w.classid::pg_catalog.int8 OPERATOR(pg_catalog.<<) 32)
        OPERATOR(pg_catalog.|) w.objid::pg_catalog.int8)
   AND s.released_at IS NULL
   AND s.expires_at OPERATOR(pg_catalog.+) s.lock_delay
       OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp()
  LEFT JOIN pg_catalog.pg_stat_activity AS wa ON wa.pid OPERATOR(pg_catalog.=) w.pid
  LEFT JOIN pg_catalog.pg_stat_activity AS ba
         ON ba.pid OPERATOR(pg_catalog.=) s.backend_pid
        AND (ba.backend_start IS NULL
             OR ba.backend_start OPERATOR(pg_catalog.=) s.backend_start)
 WHERE w.locktype OPERATOR(pg_catalog.=) 'advisory'
   AND w.objsubid OPERATOR(pg_catalog.=) 4
   AND w.granted
   AND w.database OPERATOR(pg_catalog.=)
       (SELECT d.oid FROM pg_catalog.pg_database AS d
         WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database());
COMMENT ON VIEW dlock.lock_waits IS
    'One row per waiter -> blocker edge in this database: advisory locks, dlock lease gates, and dlock.acquire() waiting for a lease''s holder; with both sessions and whether the blocker is idle in transaction.';

GRANT SELECT ON dlock.advisory_locks, dlock.lock_waits TO PUBLIC;

-- New overloads rather than new parameters on the existing functions, so
-- that their privileges and the objects that depend on them survive the
-- update. lock_delay has no default, so that calls without it keep
-- resolving to the shorter functions.
CREATE FUNCTION dlock.try_acquire(name text, ttl interval, owner text,
                                  lock_delay interval, max_hold interval DEFAULT NULL)
RETURNS dlock.lease
AS 'MODULE_PATHNAME', 'dlock_try_acquire'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION dlock.try_acquire(text, interval, text, interval, interval) IS
    'try_acquire with Chubby''s lock-delay (how long an expiry without release keeps the lease from others) and max_hold (the longest renewals may keep it); NULL owner: the session''s default owner.';

CREATE FUNCTION dlock.acquire(name text, ttl interval, timeout interval, owner text,
                              lock_delay interval, max_hold interval DEFAULT NULL)
RETURNS dlock.lease
AS 'MODULE_PATHNAME', 'dlock_acquire'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION dlock.acquire(text, interval, interval, text, interval, interval) IS
    'acquire with Chubby''s lock-delay and max_hold, as for try_acquire.';

CREATE FUNCTION dlock.force_release(name text, reason text)
RETURNS dlock.lease
AS 'MODULE_PATHNAME', 'dlock_force_release'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION dlock.force_release(text, text) IS
    'Administrators: ends the lease whoever holds it, recording who and why; returns the grant it ended, or NULL if it was not held. Its token then fails renew (LD002) and assert_held.';
REVOKE ALL ON FUNCTION dlock.force_release(text, text) FROM PUBLIC;

-- dlock's administrators: members of role dlock_admin may force-release and
-- sweep, and renew, release or assert any role's leases. Roles belong to the
-- cluster, not the database, so the role is created once and outlives DROP
-- EXTENSION; it holds no privilege but what dlock grants it here.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles
                    WHERE rolname OPERATOR(pg_catalog.=) 'dlock_admin') THEN
        CREATE ROLE dlock_admin NOLOGIN;
    END IF;
END
$$;
GRANT EXECUTE ON FUNCTION dlock.force_release(text, text) TO dlock_admin;

CREATE FUNCTION dlock.release_all(owner text)
RETURNS integer
AS 'MODULE_PATHNAME', 'dlock_release_all'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION dlock.release_all(text) IS
    'Releases every lease owner holds that the calling role acquired (any role''s, for dlock_admin); returns how many. For a worker shutting down.';

CREATE FUNCTION dlock.sweep(older_than interval DEFAULT '1 day')
RETURNS bigint
AS 'MODULE_PATHNAME', 'dlock_sweep'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION dlock.sweep(interval) IS
    'Administrators: deletes lease rows released, or expired past their lock-delay, more than older_than ago (at most 10000 a call); returns how many. Tokens and fences are untouched.';
REVOKE ALL ON FUNCTION dlock.sweep(interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dlock.sweep(interval) TO dlock_admin;

CREATE OR REPLACE VIEW dlock.leases WITH (security_invoker = true) AS
SELECT s.name,
       s.owner,
       s.token,
       CASE
           WHEN s.released_at IS NOT NULL THEN 'released'
           WHEN s.expires_at OPERATOR(pg_catalog.>) c.now THEN 'held'
           WHEN s.expires_at OPERATOR(pg_catalog.+) s.lock_delay OPERATOR(pg_catalog.>) c.now
           THEN 'lock-delay'
           ELSE 'expired'
       END AS state,
       s.acquired_at,
       s.expires_at,
       CASE
           WHEN s.released_at IS NULL AND s.expires_at OPERATOR(pg_catalog.>) c.now
           THEN s.expires_at OPERATOR(pg_catalog.-) c.now
       END AS valid_for,
       s.ttl,
       s.released_at,
       s.acquired_by,
       s.renew_count,
       CASE
           WHEN s.released_at IS NULL AND s.expires_at OPERATOR(pg_catalog.>) c.now
           THEN c.now OPERATOR(pg_catalog.-) s.acquired_at
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
       s.force_reason
  FROM dlock.lease_store AS s
 CROSS JOIN (SELECT pg_catalog.clock_timestamp() AS now) AS c;
COMMENT ON VIEW dlock.leases IS
    'One row per lease: state held, lock-delay, expired or released, judged by the server clock at query time; renewals, hold time, the acquiring backend, force-releases.';
