-- dlock 0.4.0 -> 0.5.0: waiters queued in arrival order and woken by
-- releases; one function per name with every optional parameter nameable
-- (try_acquire, acquire, renew, release); min_hold; renew and release
-- checking an owner; dlock.replace_function for later signature changes.
\echo Use "ALTER EXTENSION dlock UPDATE TO '0.5.0'" to load this file. \quit

-- Nothing below depends on the updater's search_path: every reference is
-- schema-qualified, operators included (OPERATOR(pg_catalog.x)), and what
-- PL/pgSQL resolves by name is looked up in pg_catalog first.
SET LOCAL search_path = pg_catalog, pg_temp;

ALTER TABLE dlock.lease_store ADD COLUMN min_hold interval;

-- ------------------------------------------------------------ updates

-- How an update script gives a function a new signature (a parameter
-- added): create the new function, then call this with the old and the
-- new one. What users granted or revoked on the old function since it was
-- installed is applied to the new one and stays theirs (pg_dump keeps
-- dumping it); then the old function is dropped, and a user's view or
-- function that depends on it makes the update fail, naming it.
CREATE FUNCTION dlock.replace_function(old regprocedure, new regprocedure)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    procs CONSTANT regclass := 'pg_catalog.pg_proc'::pg_catalog.regclass;
    script_privs pg_catalog.aclitem[];
    script_set boolean;
    old_now pg_catalog.aclitem[];
    old_installed pg_catalog.aclitem[];
    change record;
BEGIN
    -- The new function's initial privileges, as this version's script set
    -- them: restored below, so that users' grants do not join them.
    SELECT i.initprivs INTO script_privs FROM pg_catalog.pg_init_privs AS i
     WHERE i.objoid OPERATOR(pg_catalog.=) new AND i.classoid OPERATOR(pg_catalog.=) procs
       AND i.objsubid OPERATOR(pg_catalog.=) 0;
    script_set := FOUND;
    SELECT coalesce(p.proacl, pg_catalog.acldefault('f', p.proowner)),
           coalesce((SELECT i.initprivs FROM pg_catalog.pg_init_privs AS i
                      WHERE i.objoid OPERATOR(pg_catalog.=) p.oid
                        AND i.classoid OPERATOR(pg_catalog.=) procs
                        AND i.objsubid OPERATOR(pg_catalog.=) 0),
                    pg_catalog.acldefault('f', p.proowner))
      INTO old_now, old_installed
      FROM pg_catalog.pg_proc AS p WHERE p.oid OPERATOR(pg_catalog.=) old;
    FOR change IN
        SELECT 'REVOKE' AS verb, a.grantee, a.privilege_type, a.is_grantable
          FROM (SELECT * FROM pg_catalog.aclexplode(old_installed)
                EXCEPT SELECT * FROM pg_catalog.aclexplode(old_now)) AS a
        UNION ALL
        SELECT 'GRANT', a.grantee, a.privilege_type, a.is_grantable
          FROM (SELECT * FROM pg_catalog.aclexplode(old_now)
                EXCEPT SELECT * FROM pg_catalog.aclexplode(old_installed)) AS a
        ORDER BY 1 DESC
    LOOP
        EXECUTE pg_catalog.format('%s %s ON FUNCTION %s %s %s%s',
            change.verb, change.privilege_type, new,
            CASE WHEN change.verb OPERATOR(pg_catalog.=) 'GRANT' THEN 'TO' ELSE 'FROM' END,
            CASE WHEN change.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
                 ELSE change.grantee::pg_catalog.regrole::pg_catalog.text END,
            CASE WHEN change.verb OPERATOR(pg_catalog.=) 'GRANT' AND change.is_grantable
                 THEN ' WITH GRANT OPTION' ELSE '' END);
    END LOOP;
    IF script_set THEN
        UPDATE pg_catalog.pg_init_privs AS i SET initprivs = script_privs
         WHERE i.objoid OPERATOR(pg_catalog.=) new AND i.classoid OPERATOR(pg_catalog.=) procs
           AND i.objsubid OPERATOR(pg_catalog.=) 0;
    ELSE
        DELETE FROM pg_catalog.pg_init_privs AS i
         WHERE i.objoid OPERATOR(pg_catalog.=) new AND i.classoid OPERATOR(pg_catalog.=) procs
           AND i.objsubid OPERATOR(pg_catalog.=) 0;
    END IF;
    EXECUTE pg_catalog.format('DROP FUNCTION %s', old);
END
$fn$;
COMMENT ON FUNCTION dlock.replace_function(regprocedure, regprocedure) IS
    'For dlock''s update scripts: moves what users granted or revoked on an old function to its replacement, then drops the old one (failing if a user''s object depends on it). Superuser only.';
REVOKE ALL ON FUNCTION dlock.replace_function(regprocedure, regprocedure) FROM PUBLIC;

-- ------------------------------------------------------------ leases

CREATE FUNCTION dlock.try_acquire(name text, ttl interval, owner text DEFAULT NULL,
                                  lock_delay interval DEFAULT NULL,
                                  max_hold interval DEFAULT NULL,
                                  min_hold interval DEFAULT NULL)
RETURNS dlock.lease
AS 'MODULE_PATHNAME', 'dlock_try_acquire'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION dlock.try_acquire(text, interval, text, interval, interval, interval) IS
    'Grants the lease for ttl if it is free and nobody waits for it; NULL at once otherwise. Only an explicit owner that holds it gets its grant back (same token). lock_delay: how long an expiry without release keeps it from others; max_hold: the longest renewals may keep it; min_hold: the least time it stays unavailable after the grant, even if released earlier.';

CREATE FUNCTION dlock.acquire(name text, ttl interval, timeout interval,
                              owner text DEFAULT NULL,
                              lock_delay interval DEFAULT NULL,
                              max_hold interval DEFAULT NULL,
                              min_hold interval DEFAULT NULL)
RETURNS dlock.lease
AS 'MODULE_PATHNAME', 'dlock_acquire'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION dlock.acquire(text, interval, interval, text, interval, interval, interval) IS
    'Like try_acquire, but waits up to timeout, queued in arrival order and woken when the lease is released or its grant ends; SQLSTATE 55P03 when the timeout passes.';

CREATE FUNCTION dlock.renew(name text, token bigint, ttl interval DEFAULT NULL,
                            owner text DEFAULT NULL)
RETURNS dlock.lease
AS 'MODULE_PATHNAME', 'dlock_renew'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION dlock.renew(text, bigint, interval, text) IS
    'Extends a lease held with this token (and owner, if given) to now + ttl (NULL keeps the granted ttl); SQLSTATE LD002 if not held.';

CREATE FUNCTION dlock.release(name text, token bigint, owner text DEFAULT NULL)
RETURNS boolean
AS 'MODULE_PATHNAME', 'dlock_release'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION dlock.release(text, bigint, text) IS
    'Releases the lease if held with this token (and owner, if given): compare-and-delete; true if this call released it. Wakes the first waiter.';

SELECT dlock.replace_function('dlock.try_acquire(text, interval, text)',
                              'dlock.try_acquire(text, interval, text, interval, interval, interval)');
SELECT dlock.replace_function('dlock.try_acquire(text, interval, text, interval, interval)',
                              'dlock.try_acquire(text, interval, text, interval, interval, interval)');
SELECT dlock.replace_function('dlock.acquire(text, interval, interval, text)',
                              'dlock.acquire(text, interval, interval, text, interval, interval, interval)');
SELECT dlock.replace_function('dlock.acquire(text, interval, interval, text, interval, interval)',
                              'dlock.acquire(text, interval, interval, text, interval, interval, interval)');
SELECT dlock.replace_function('dlock.renew(text, bigint, interval)',
                              'dlock.renew(text, bigint, interval, text)');
SELECT dlock.replace_function('dlock.release(text, bigint)',
                              'dlock.release(text, bigint, text)');

CREATE FUNCTION dlock.lease_state(released_at timestamptz, expires_at timestamptz,
                                  lock_delay interval, at timestamptz,
                                  min_hold_until timestamptz DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'dlock_lease_state'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION dlock.lease_state(timestamptz, timestamptz, interval, timestamptz, timestamptz) IS
    'A lease row''s state at a time: released (released-early while at < min_hold_until), held (expires_at > at), lock-delay (expires_at + lock_delay > at) or expired; the rule the lease functions follow.';


-- ------------------------------------------------------------ views

-- Replaced in place (each gains a column at its end), so that privileges
-- and users' views on them stay; then nothing reads the old lease_state.

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
       s.renew_count,
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
COMMENT ON VIEW dlock.leases IS
    'One row per lease: state held, lock-delay, expired, released or released-early (dlock.lease_state at query time, server clock); renewals, hold time, the acquiring backend, force-releases.';

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
  LEFT JOIN dlock.lease_store AS s
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
  JOIN dlock.lease_store AS s
    ON pg_catalog.hashtextextended(s.name, 0) OPERATOR(pg_catalog.=)
       ((w.classid::pg_catalog.int8 OPERATOR(pg_catalog.<<) 32)
        OPERATOR(pg_catalog.|) w.objid::pg_catalog.int8)
   AND dlock.lease_state(s.released_at, s.expires_at, s.lock_delay, pg_catalog.clock_timestamp(),
                         s.acquired_at OPERATOR(pg_catalog.+) s.min_hold)
       OPERATOR(pg_catalog.=) ANY ('{held,lock-delay,released-early}'::pg_catalog.text[])
  LEFT JOIN pg_catalog.pg_stat_activity AS wa ON wa.pid OPERATOR(pg_catalog.=) w.pid
  LEFT JOIN pg_catalog.pg_stat_activity AS ba
         ON ba.pid OPERATOR(pg_catalog.=) s.backend_pid
        AND (ba.backend_start IS NULL
             OR ba.backend_start OPERATOR(pg_catalog.=) s.backend_start);
COMMENT ON VIEW dlock.lock_waits IS
    'One row per waiter -> blocker edge in this database: advisory locks, dlock lease gates, and sessions queued in dlock.acquire() behind a lease''s holder (queue_position 1 is next); with both sessions and whether the blocker is idle in transaction.';


SELECT dlock.replace_function('dlock.lease_state(timestamptz, timestamptz, interval, timestamptz)',
                              'dlock.lease_state(timestamptz, timestamptz, interval, timestamptz, timestamptz)');
