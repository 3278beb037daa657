-- dlock 0.8.0 -> 0.9.0: statistics count lapses (grants that expired
-- unreleased), in a last column of dlock.stats and dlock.stats_totals.
\echo Use "ALTER EXTENSION dlock UPDATE TO '0.9.0'" to load this file. \quit

-- Nothing below depends on the updater's search_path: every reference is
-- schema-qualified, operators included (OPERATOR(pg_catalog.x)).
SET LOCAL search_path = pg_catalog, pg_temp;

-- ------------------------------------------------------------ statistics

-- A function's OUT columns cannot change in place, and the views depend on
-- the functions: each function is created again under a passing name, the
-- view moved onto it with CREATE OR REPLACE VIEW (the new column last, so
-- that what users granted on the views and their views of them stay),
-- the old function replaced (users' grants carried over) and the new one
-- renamed to the old name. The C functions serve both versions' columns.
CREATE FUNCTION dlock.lease_stats_0_9_0(
    OUT name text, OUT grants bigint, OUT busy bigint, OUT waits bigint,
    OUT wait_timeouts bigint, OUT total_wait_time double precision,
    OUT max_wait_time double precision, OUT takeovers bigint,
    OUT force_releases bigint, OUT renew_failures bigint, OUT releases bigint,
    OUT total_hold_time double precision, OUT max_hold_time double precision,
    OUT stats_since timestamptz, OUT lapses bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'dlock_lease_stats'
LANGUAGE C VOLATILE PARALLEL SAFE;

CREATE FUNCTION dlock.lease_stats_totals_0_9_0(
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

CREATE OR REPLACE VIEW dlock.stats WITH (security_invoker = true) AS
SELECT s.name, s.grants, s.busy, s.waits, s.wait_timeouts,
       s.total_wait_time, s.max_wait_time, s.takeovers, s.force_releases,
       s.renew_failures, s.releases, s.total_hold_time, s.max_hold_time,
       coalesce(h.holders, 0) AS holders, s.stats_since, s.lapses
  FROM dlock.lease_stats_0_9_0() AS s
  LEFT JOIN dlock.held_grants AS h ON h.name OPERATOR(pg_catalog.=) s.name;
COMMENT ON VIEW dlock.stats IS
    'One row per lease name of this database counted (the least used evicted when dlock.stats_max is reached): grants, busy answers, waits and their time, takeovers, force-releases, refused renewals, releases and hold time (milliseconds), held grants now, since when, and lapses (grants that expired unreleased). Empty unless dlock is in shared_preload_libraries (dlock.stats_status()).';

CREATE OR REPLACE VIEW dlock.stats_totals WITH (security_invoker = true) AS
SELECT t.grants, t.busy, t.waits, t.wait_timeouts,
       t.total_wait_time, t.max_wait_time, t.takeovers, t.force_releases,
       t.renew_failures, t.releases, t.total_hold_time, t.max_hold_time,
       (SELECT coalesce(pg_catalog.sum(h.holders), 0)::pg_catalog.int4
          FROM dlock.held_grants AS h) AS holders,
       t.names, t.max_names, t.evictions, t.stats_reset, t.lapses
  FROM dlock.lease_stats_totals_0_9_0() AS t;
COMMENT ON VIEW dlock.stats_totals IS
    'One row: dlock.stats'' counters over every name of this database since its last reset, evicted names included; held grants now, names counted, dlock.stats_max, evictions, when the counters were reset, and lapses. Empty unless dlock is in shared_preload_libraries (dlock.stats_status()).';

SELECT dlock.replace_function('dlock.lease_stats()', 'dlock.lease_stats_0_9_0()');
ALTER FUNCTION dlock.lease_stats_0_9_0() RENAME TO lease_stats;
COMMENT ON FUNCTION dlock.lease_stats() IS
    'The counters of each lease name of this database counted, for dlock.stats (times in milliseconds); no rows unless dlock is in shared_preload_libraries.';

SELECT dlock.replace_function('dlock.lease_stats_totals()', 'dlock.lease_stats_totals_0_9_0()');
ALTER FUNCTION dlock.lease_stats_totals_0_9_0() RENAME TO lease_stats_totals;
COMMENT ON FUNCTION dlock.lease_stats_totals() IS
    'The counters over every name of this database since its last reset, evicted names included, for dlock.stats_totals; no row unless dlock is in shared_preload_libraries.';
