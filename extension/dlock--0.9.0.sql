-- dlock 0.9.0: leases with server-clock expiry, fencing tokens, fenced
-- writes, advisory-lock helpers, administration and per-role leases;
-- waiters queued in arrival order and woken by releases; smaller lease rows;
-- shared leases, semaphores and all-or-nothing multi-leases; statistics,
-- lapses among them.
\echo Use "CREATE EXTENSION dlock" to load this file. \quit

-- Nothing below depends on the installer's search_path: every reference is
-- schema-qualified, operators included (OPERATOR(pg_catalog.x)), and what
-- PL/pgSQL resolves by name is looked up in pg_catalog first.
SET LOCAL search_path = pg_catalog, pg_temp;

CREATE SCHEMA dlock;
COMMENT ON SCHEMA dlock IS 'dlock: distributed-lock leases with server-clock expiry and fencing tokens';
GRANT USAGE ON SCHEMA dlock TO PUBLIC;

-- ------------------------------------------------------------ tables

CREATE SEQUENCE dlock.token_seq AS bigint
    MINVALUE 1 START 1 INCREMENT 1 NO CYCLE CACHE 1;
COMMENT ON SEQUENCE dlock.token_seq IS
    'Source of fencing tokens: every grant draws the next value.';
-- Lets any role check that a token was issued (pg_sequence_last_value);
-- drawing tokens still needs dlock's functions.
GRANT SELECT ON SEQUENCE dlock.token_seq TO PUBLIC;

-- Columns in this order for good: the library reads them by position, and
-- later versions only append.
CREATE TABLE dlock.lease_store (
    name          text        PRIMARY KEY,
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
    min_hold      interval
) WITH (fillfactor = 95);
COMMENT ON TABLE dlock.lease_store IS
    'One row per lease name: its latest grant; a NULL renew_count is 0. Written only by dlock''s functions.';
GRANT SELECT ON dlock.lease_store TO PUBLIC;

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

-- The history (cluster, WAL timeline, database) tokens were last issued on.
-- When a grant finds itself on another one, the token sequence first jumps
-- to a new epoch, above any token the old history may have issued. Not
-- dumped, so a restored database always starts a new epoch; a new install
-- records nothing until its first grant.
CREATE TABLE dlock.token_epoch (
    single_row        boolean PRIMARY KEY DEFAULT true CHECK (single_row),
    system_identifier bigint  NOT NULL,
    timeline          integer NOT NULL,
    database          oid     NOT NULL
);
COMMENT ON TABLE dlock.token_epoch IS
    'The cluster, WAL timeline and database fencing tokens were last issued on. Written only by dlock''s functions.';

CREATE TABLE dlock.fences (
    resource  text        PRIMARY KEY,
    token     bigint      NOT NULL,
    fenced_at timestamptz NOT NULL
);
COMMENT ON TABLE dlock.fences IS
    'Highest fencing token dlock.fence() accepted per resource. Written only by dlock''s functions.';
GRANT SELECT ON dlock.fences TO PUBLIC;

CREATE TABLE dlock.advisory_names (
    key  bigint PRIMARY KEY,
    name text   NOT NULL
);
COMMENT ON TABLE dlock.advisory_names IS
    'The name behind each advisory key dlock.advisory_lock() has taken. Written only by dlock''s functions.';
GRANT SELECT ON dlock.advisory_names TO PUBLIC;

-- Leases, tokens, fences and advisory names survive pg_dump/pg_restore.
SELECT pg_catalog.pg_extension_config_dump('dlock.lease_store', '');
SELECT pg_catalog.pg_extension_config_dump('dlock.lease_holders', '');
SELECT pg_catalog.pg_extension_config_dump('dlock.token_seq', '');
SELECT pg_catalog.pg_extension_config_dump('dlock.fences', '');
SELECT pg_catalog.pg_extension_config_dump('dlock.advisory_names', '');

-- ------------------------------------------------------------ leases

CREATE TYPE dlock.lease AS (
    name        text,
    token       bigint,
    owner       text,
    acquired_at timestamptz,
    expires_at  timestamptz,
    valid_for   interval
);
COMMENT ON TYPE dlock.lease IS
    'A granted lease; valid_for is the validity left when the call returned, measured on the server.';

-- One function per name, every optional parameter with a default: any of
-- them can be passed by name, in any order.
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

CREATE FUNCTION dlock.get(name text)
RETURNS dlock.lease
AS 'MODULE_PATHNAME', 'dlock_get'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION dlock.get(text) IS
    'The current grant of the lease (of a shared lease or a semaphore: the held grant with the latest token), or NULL if it is not held; acquires nothing.';

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

CREATE FUNCTION dlock.default_owner()
RETURNS text
AS 'MODULE_PATHNAME', 'dlock_default_owner'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION dlock.default_owner() IS
    'The owner this session''s leases get when owner is NULL: application_name:pid:backend start (Unix ms).';


CREATE FUNCTION dlock.lease_state(released_at timestamptz, expires_at timestamptz,
                                  lock_delay interval, at timestamptz,
                                  min_hold_until timestamptz DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'dlock_lease_state'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION dlock.lease_state(timestamptz, timestamptz, interval, timestamptz, timestamptz) IS
    'A lease row''s state at a time: released (released-early while at < min_hold_until), held (expires_at > at), lock-delay (expires_at + lock_delay > at) or expired; the rule the lease functions follow.';

-- ------------------------------------------------------------ fencing

CREATE FUNCTION dlock.assert_held(name text, token bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'dlock_assert_held'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION dlock.assert_held(text, bigint) IS
    'Raises unless the lease is held with this token now; keeps any other write of the lease from happening until this transaction ends.';

CREATE FUNCTION dlock.fenced_update(target regclass, token bigint, changes jsonb, match jsonb,
                                    fence_column name DEFAULT 'fence_token')
RETURNS bigint
AS 'MODULE_PATHNAME', 'dlock_fenced_update'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION dlock.fenced_update(regclass, bigint, jsonb, jsonb, name) IS
    'UPDATE target SET changes, fence_column = token WHERE match AND fence_column <= token; rows updated, or SQLSTATE LD001 if only rows with a higher fence match.';

CREATE FUNCTION dlock.fence(resource text, token bigint)
RETURNS bigint
AS 'MODULE_PATHNAME', 'dlock_fence'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION dlock.fence(text, bigint) IS
    'Accepts token for resource if it is at least the highest accepted before (and records it); SQLSTATE LD001 otherwise. Locks the resource until commit.';

CREATE FUNCTION dlock.fence_guard()
RETURNS trigger
AS 'MODULE_PATHNAME', 'dlock_fence_guard'
LANGUAGE C;
COMMENT ON FUNCTION dlock.fence_guard() IS
    'Trigger installed by dlock.protect(): refuses to lower a row''s fence column (LD001) or to set a token never issued (LD003).';

CREATE FUNCTION dlock.protect(target regclass, fence_column name DEFAULT 'fence_token')
RETURNS void
AS 'MODULE_PATHNAME', 'dlock_protect'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION dlock.protect(regclass, name) IS
    'Installs trigger dlock_protect on target: no INSERT or UPDATE may lower fence_column or set a token never issued.';

CREATE FUNCTION dlock.unprotect(target regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'dlock_unprotect'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION dlock.unprotect(regclass) IS
    'Removes the trigger dlock.protect() installed on target.';

-- ------------------------------------------------------------ advisory locks

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

-- ------------------------------------------------------------ administration

CREATE FUNCTION dlock.force_release(name text, reason text, token bigint DEFAULT NULL)
RETURNS dlock.lease
AS 'MODULE_PATHNAME', 'dlock_force_release'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION dlock.force_release(text, text, bigint) IS
    'Administrators: ends the lease whoever holds it (with token: that holder only; without: every holder of a shared lease or semaphore), recording who and why; returns the grant it ended (the latest, if several), or NULL if none was held. Its token then fails renew (LD002) and assert_held.';
REVOKE ALL ON FUNCTION dlock.force_release(text, text, bigint) FROM PUBLIC;

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

-- dlock's administrators: members of role dlock_admin may force-release and
-- sweep, and renew, release or assert any role's leases. Roles belong to the
-- cluster, so the role outlives DROP EXTENSION and serves every database.
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
GRANT EXECUTE ON FUNCTION dlock.force_release(text, text, bigint) TO dlock_admin;
GRANT EXECUTE ON FUNCTION dlock.sweep(interval) TO dlock_admin;

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

-- ------------------------------------------------------------ views

CREATE VIEW dlock.leases WITH (security_invoker = true) AS
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

CREATE VIEW dlock.advisory_locks WITH (security_invoker = true) AS
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

-- Waiter -> blocker edges: advisory locks; dlock leases whose gate a grant,
-- renew, release or assert_held is waiting for; and sessions queued in
-- dlock.acquire() (the lock manager's queue in dlock's key space 4, the
-- head holding it) behind the lease's holder (NULL pid when the session
-- that acquired it is gone).
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

GRANT SELECT ON dlock.leases, dlock.advisory_locks, dlock.lock_waits TO PUBLIC;

-- ------------------------------------------------------------ statistics

-- Counters in shared memory, per database and lease name, kept when dlock
-- is in shared_preload_libraries (see dlock.stats_status()); lost at a
-- server restart. A grant's events count when its transaction commits.
CREATE FUNCTION dlock.stats_status()
RETURNS text
AS 'MODULE_PATHNAME', 'dlock_stats_status'
LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION dlock.stats_status() IS
    'Whether dlock.stats counts: ''on'', or ''off: '' and why (dlock not in shared_preload_libraries, or dlock.track_stats off).';

CREATE FUNCTION dlock.lease_stats(
    OUT name text, OUT grants bigint, OUT busy bigint, OUT waits bigint,
    OUT wait_timeouts bigint, OUT total_wait_time double precision,
    OUT max_wait_time double precision, OUT takeovers bigint,
    OUT force_releases bigint, OUT renew_failures bigint, OUT releases bigint,
    OUT total_hold_time double precision, OUT max_hold_time double precision,
    OUT stats_since timestamptz, OUT lapses bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'dlock_lease_stats'
LANGUAGE C VOLATILE PARALLEL SAFE;
COMMENT ON FUNCTION dlock.lease_stats() IS
    'The counters of each lease name of this database counted, for dlock.stats (times in milliseconds); no rows unless dlock is in shared_preload_libraries.';

CREATE FUNCTION dlock.lease_stats_totals(
    OUT grants bigint, OUT busy bigint, OUT waits bigint,
    OUT wait_timeouts bigint, OUT total_wait_time double precision,
    OUT max_wait_time double precision, OUT takeovers bigint,
    OUT force_releases bigint, OUT renew_failures bigint, OUT releases bigint,
    OUT total_hold_time double precision, OUT max_hold_time double precision,
    OUT names integer, OUT max_names integer, OUT evictions bigint,
    OUT stats_reset timestamptz, OUT lapses bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'dlock_lease_stats_totals'
LANGUAGE C VOLATILE PARALLEL SAFE;
COMMENT ON FUNCTION dlock.lease_stats_totals() IS
    'The counters over every name of this database since its last reset, evicted names included, for dlock.stats_totals; no row unless dlock is in shared_preload_libraries.';

CREATE FUNCTION dlock.stats_reset()
RETURNS void
AS 'MODULE_PATHNAME', 'dlock_stats_reset'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION dlock.stats_reset() IS
    'Forgets every counter of dlock.stats and dlock.stats_totals in this database (administrators).';
REVOKE ALL ON FUNCTION dlock.stats_reset() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dlock.stats_reset() TO dlock_admin;

-- Held grants per name now, judged as dlock.leases judges them.
CREATE VIEW dlock.held_grants WITH (security_invoker = true) AS
SELECT g.name, pg_catalog.count(*)::pg_catalog.int4 AS holders
  FROM (SELECT l.name, l.released_at, l.expires_at, l.lock_delay, l.acquired_at, l.min_hold
          FROM dlock.lease_store AS l
        UNION ALL
        SELECT h.name, h.released_at, h.expires_at, h.lock_delay, h.acquired_at, h.min_hold
          FROM dlock.lease_holders AS h) AS g
 WHERE dlock.lease_state(g.released_at, g.expires_at, g.lock_delay,
                         pg_catalog.clock_timestamp(),
                         g.acquired_at OPERATOR(pg_catalog.+) g.min_hold)
       OPERATOR(pg_catalog.=) 'held'
 GROUP BY g.name;
COMMENT ON VIEW dlock.held_grants IS
    'One row per lease name held now: how many of its grants are held (server clock), for dlock.stats.';

CREATE VIEW dlock.stats WITH (security_invoker = true) AS
SELECT s.name, s.grants, s.busy, s.waits, s.wait_timeouts,
       s.total_wait_time, s.max_wait_time, s.takeovers, s.force_releases,
       s.renew_failures, s.releases, s.total_hold_time, s.max_hold_time,
       coalesce(h.holders, 0) AS holders, s.stats_since, s.lapses
  FROM dlock.lease_stats() AS s
  LEFT JOIN dlock.held_grants AS h ON h.name OPERATOR(pg_catalog.=) s.name;
COMMENT ON VIEW dlock.stats IS
    'One row per lease name of this database counted (the least used evicted when dlock.stats_max is reached): grants, busy answers, waits and their time, takeovers, force-releases, refused renewals, releases and hold time (milliseconds), held grants now, since when, and lapses (grants that expired unreleased). Empty unless dlock is in shared_preload_libraries (dlock.stats_status()).';

CREATE VIEW dlock.stats_totals WITH (security_invoker = true) AS
SELECT t.grants, t.busy, t.waits, t.wait_timeouts,
       t.total_wait_time, t.max_wait_time, t.takeovers, t.force_releases,
       t.renew_failures, t.releases, t.total_hold_time, t.max_hold_time,
       (SELECT coalesce(pg_catalog.sum(h.holders), 0)::pg_catalog.int4
          FROM dlock.held_grants AS h) AS holders,
       t.names, t.max_names, t.evictions, t.stats_reset, t.lapses
  FROM dlock.lease_stats_totals() AS t;
COMMENT ON VIEW dlock.stats_totals IS
    'One row: dlock.stats'' counters over every name of this database since its last reset, evicted names included; held grants now, names counted, dlock.stats_max, evictions, when the counters were reset, and lapses. Empty unless dlock is in shared_preload_libraries (dlock.stats_status()).';

GRANT SELECT ON dlock.held_grants, dlock.stats, dlock.stats_totals TO PUBLIC;
