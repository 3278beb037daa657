-- dlock 0.3.0 -> 0.4.0: one definition of a lease's state for SQL
-- (dlock.lease_state, used by the views and the sweep); protect() and
-- unprotect() in C, with 42P01 for a relation that does not exist; views
-- without search_path-dependent CASE forms; an existing dlock_admin
-- adopted only when it confers nothing of its own.
\echo Use "ALTER EXTENSION dlock UPDATE TO '0.4.0'" to load this file. \quit

-- Nothing below depends on the updater's search_path: every reference is
-- schema-qualified, operators included (OPERATOR(pg_catalog.x)), and what
-- PL/pgSQL resolves by name is looked up in pg_catalog first.
SET LOCAL search_path = pg_catalog, pg_temp;

CREATE FUNCTION dlock.lease_state(released_at timestamptz, expires_at timestamptz,
                                  lock_delay interval, at timestamptz)
RETURNS text
AS 'MODULE_PATHNAME', 'dlock_lease_state'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION dlock.lease_state(timestamptz, timestamptz, interval, timestamptz) IS
    'A lease row''s state at a time: released, held (expires_at > at), lock-delay (expires_at + lock_delay > at) or expired; the rule the lease functions follow.';

-- The same signatures, now in C: privileges and dependents are kept.
CREATE OR REPLACE FUNCTION dlock.protect(target regclass, fence_column name DEFAULT 'fence_token')
RETURNS void
AS 'MODULE_PATHNAME', 'dlock_protect'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE OR REPLACE FUNCTION dlock.unprotect(target regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'dlock_unprotect'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- dlock_admin: until 0.3.0 any existing role of that name was adopted.
-- An existing dlock_admin is adopted only if it confers nothing of its own:
-- a role that can log in, has role attributes, belongs to other roles, owns
-- objects or holds privileges (other than on dlock's functions, or on
-- functions of other databases, where dlock grants it EXECUTE) would hand
-- all that to every member ops ever adds. Who created a role cannot be
-- told reliably; what it confers can.
DO $$
DECLARE
    admin pg_catalog.pg_roles%ROWTYPE;
    confers text;
BEGIN
    SELECT r.* INTO admin FROM pg_catalog.pg_roles AS r
     WHERE r.rolname OPERATOR(pg_catalog.=) 'dlock_admin';
    IF NOT FOUND THEN
        CREATE ROLE dlock_admin NOLOGIN;
        COMMENT ON ROLE dlock_admin IS
            'dlock administrators: members may force-release, sweep, and act on any role''s leases.';
        RETURN;
    END IF;
    confers := CASE
        WHEN admin.rolcanlogin THEN 'it can log in'
        WHEN admin.rolsuper OR admin.rolcreaterole OR admin.rolcreatedb
             OR admin.rolreplication OR admin.rolbypassrls
        THEN 'it has role attributes'
        WHEN EXISTS (SELECT FROM pg_catalog.pg_auth_members AS m
                      WHERE m.member OPERATOR(pg_catalog.=) admin.oid)
        THEN 'it is a member of other roles'
        WHEN EXISTS (SELECT FROM pg_catalog.pg_shdepend AS d
                      WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_authid'::pg_catalog.regclass
                        AND d.refobjid OPERATOR(pg_catalog.=) admin.oid
                        AND NOT (d.deptype OPERATOR(pg_catalog.=) 'a'
                                 AND d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
                                 AND (d.dbid OPERATOR(pg_catalog.<>)
                                          (SELECT db.oid FROM pg_catalog.pg_database AS db
                                            WHERE db.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
                                      OR d.objid OPERATOR(pg_catalog.=) ANY (
                                          SELECT e.objid FROM pg_catalog.pg_depend AS e
                                           WHERE e.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
                                             AND e.refobjid OPERATOR(pg_catalog.=)
                                                 (SELECT x.oid FROM pg_catalog.pg_extension AS x
                                                   WHERE x.extname OPERATOR(pg_catalog.=) 'dlock')))))
        THEN 'it owns objects or holds privileges'
    END;
    IF confers IS NOT NULL THEN
        RAISE EXCEPTION 'role "dlock_admin" already exists and confers more than dlock grants it'
            USING ERRCODE = 'duplicate_object',
                  DETAIL = pg_catalog.format('dlock adopts an existing dlock_admin only if it confers nothing of its own, but %s.', confers),
                  HINT = 'Drop or rename the role, or take away what it confers, then try again.';
    END IF;
END
$$;
GRANT EXECUTE ON FUNCTION dlock.force_release(text, text) TO dlock_admin;
GRANT EXECUTE ON FUNCTION dlock.sweep(interval) TO dlock_admin;

-- The views judge a lease with dlock.lease_state.
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
       s.force_reason
  FROM dlock.lease_store AS s
 CROSS JOIN (SELECT pg_catalog.clock_timestamp() AS now) AS n
 CROSS JOIN LATERAL
       (SELECT dlock.lease_state(s.released_at, s.expires_at, s.lock_delay, n.now) AS state) AS c;
COMMENT ON VIEW dlock.leases IS
    'One row per lease: state held, lock-delay, expired or released (dlock.lease_state at query time, server clock); renewals, hold time, the acquiring backend, force-releases.';

CREATE OR REPLACE VIEW dlock.advisory_locks WITH (security_invoker = true) AS
SELECT CASE WHEN l.objsubid OPERATOR(pg_catalog.=) 1 THEN 'bigint' ELSE 'int4pair' END AS key_space,
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
       CASE WHEN l.mode OPERATOR(pg_catalog.=) 'ShareLock' THEN 'shared' ELSE 'exclusive' END AS mode,
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
   AND dlock.lease_state(s.released_at, s.expires_at, s.lock_delay, pg_catalog.clock_timestamp())
       OPERATOR(pg_catalog.=) ANY ('{held,lock-delay}'::pg_catalog.text[])
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
