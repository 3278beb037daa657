-- dlock 0.1.0: leases with server-clock expiry and sequence fencing tokens.
\echo Use "CREATE EXTENSION dlock" to load this file. \quit

CREATE SCHEMA dlock;
COMMENT ON SCHEMA dlock IS 'dlock: distributed-lock leases with server-clock expiry and fencing tokens';

-- Every reference below is schema-qualified; functions and views name their
-- operators with OPERATOR(pg_catalog.x), so no search_path can redirect them.

CREATE SEQUENCE dlock.token_seq AS bigint
    MINVALUE 1 START 1 INCREMENT 1 NO CYCLE CACHE 1;
COMMENT ON SEQUENCE dlock.token_seq IS
    'Source of fencing tokens: every grant draws the next value.';

CREATE TABLE dlock.lease_store (
    name        text        PRIMARY KEY,
    token       bigint      NOT NULL,
    acquired_at timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    ttl         interval    NOT NULL,
    acquired_by text        NOT NULL,
    owner       text        NOT NULL,
    released_at timestamptz
) WITH (fillfactor = 50);
COMMENT ON TABLE dlock.lease_store IS
    'One row per lease name: its latest grant. Written only by dlock''s functions.';

-- Lease rows and the token sequence survive pg_dump/pg_restore.
SELECT pg_catalog.pg_extension_config_dump('dlock.lease_store', '');
SELECT pg_catalog.pg_extension_config_dump('dlock.token_seq', '');

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

CREATE FUNCTION dlock.try_acquire(name text, ttl interval, owner text DEFAULT NULL)
RETURNS dlock.lease
AS 'MODULE_PATHNAME', 'dlock_try_acquire'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION dlock.try_acquire(text, interval, text) IS
    'Grants the lease for ttl if it is free, released or expired; NULL at once if another owner holds it or another transaction is granting or releasing it.';

CREATE FUNCTION dlock.acquire(name text, ttl interval, timeout interval, owner text DEFAULT NULL)
RETURNS dlock.lease
AS 'MODULE_PATHNAME', 'dlock_acquire'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION dlock.acquire(text, interval, interval, text) IS
    'Like try_acquire, but waits up to timeout for the lease; SQLSTATE 55P03 when the timeout passes.';

CREATE FUNCTION dlock.renew(name text, token bigint, ttl interval DEFAULT NULL)
RETURNS dlock.lease
AS 'MODULE_PATHNAME', 'dlock_renew'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION dlock.renew(text, bigint, interval) IS
    'Extends a lease held with this token to now + ttl (NULL keeps the granted ttl); SQLSTATE LD002 if not held.';

CREATE FUNCTION dlock.release(name text, token bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'dlock_release'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION dlock.release(text, bigint) IS
    'Releases the lease if held with this token (compare-and-delete); true if this call released it.';

CREATE FUNCTION dlock.get(name text)
RETURNS dlock.lease
AS 'MODULE_PATHNAME', 'dlock_get'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION dlock.get(text) IS
    'The current grant of the lease, or NULL if it is not held; acquires nothing.';

CREATE FUNCTION dlock.default_owner()
RETURNS text
AS 'MODULE_PATHNAME', 'dlock_default_owner'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION dlock.default_owner() IS
    'The owner this session''s leases get when owner is NULL: application_name:pid:backend start (Unix ms).';

CREATE VIEW dlock.leases WITH (security_invoker = true) AS
SELECT s.name,
       s.owner,
       s.token,
       CASE
           WHEN s.released_at IS NOT NULL THEN 'released'
           WHEN s.expires_at OPERATOR(pg_catalog.<=) c.now THEN 'expired'
           ELSE 'held'
       END AS state,
       s.acquired_at,
       s.expires_at,
       CASE
           WHEN s.released_at IS NULL AND s.expires_at OPERATOR(pg_catalog.>) c.now
           THEN s.expires_at OPERATOR(pg_catalog.-) c.now
       END AS valid_for,
       s.ttl,
       s.released_at,
       s.acquired_by
  FROM dlock.lease_store AS s
 CROSS JOIN (SELECT pg_catalog.clock_timestamp() AS now) AS c;
COMMENT ON VIEW dlock.leases IS
    'One row per lease: state held, expired or released, judged by the server clock at query time.';

GRANT USAGE ON SCHEMA dlock TO PUBLIC;
GRANT SELECT ON dlock.lease_store, dlock.leases TO PUBLIC;
