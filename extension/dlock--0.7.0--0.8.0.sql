-- dlock 0.7.0 -> 0.8.0: statistics (dlock.stats, dlock.stats_totals).
\echo Use "ALTER EXTENSION dlock UPDATE TO '0.8.0'" to load this file. \quit

-- Nothing below depends on the updater's search_path: every reference is
-- schema-qualified, operators included (OPERATOR(pg_catalog.x)).
SET LOCAL search_path = pg_catalog, pg_temp;

-- ------------------------------------------------------------ statistics

-- Counters in shared memory, per database and lease name, kept when dlock
-- is in shared_preload_libraries (see dlock.stats_status()); lost at a
-- server restart, not transactional.
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
    OUT stats_since timestamptz)
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
    OUT stats_reset timestamptz)
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
       coalesce(h.holders, 0) AS holders, s.stats_since
  FROM dlock.lease_stats() AS s
  LEFT JOIN dlock.held_grants AS h ON h.name OPERATOR(pg_catalog.=) s.name;
COMMENT ON VIEW dlock.stats IS
    'One row per lease name of this database counted (the least used evicted when dlock.stats_max is reached): grants, busy answers, waits and their time, takeovers, force-releases, refused renewals, releases and hold time (milliseconds), held grants now, and since when. Empty unless dlock is in shared_preload_libraries (dlock.stats_status()).';

CREATE VIEW dlock.stats_totals WITH (security_invoker = true) AS
SELECT t.grants, t.busy, t.waits, t.wait_timeouts,
       t.total_wait_time, t.max_wait_time, t.takeovers, t.force_releases,
       t.renew_failures, t.releases, t.total_hold_time, t.max_hold_time,
       (SELECT coalesce(pg_catalog.sum(h.holders), 0)::pg_catalog.int4
          FROM dlock.held_grants AS h) AS holders,
       t.names, t.max_names, t.evictions, t.stats_reset
  FROM dlock.lease_stats_totals() AS t;
COMMENT ON VIEW dlock.stats_totals IS
    'One row: dlock.stats'' counters over every name of this database since its last reset, evicted names included; held grants now, names counted, dlock.stats_max, evictions and when the counters were reset. Empty unless dlock is in shared_preload_libraries (dlock.stats_status()).';

GRANT SELECT ON dlock.held_grants, dlock.stats, dlock.stats_totals TO PUBLIC;
