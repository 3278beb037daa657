-- Statistics (dlock.stats, dlock.stats_totals): what each call counts. The
-- cluster runs with shared_preload_libraries = 'dlock'.
\set ECHO none
\i sql/setup/fresh_dlock.sql
\set ECHO all
SET client_min_messages = warning;

SELECT dlock.stats_status();
SELECT dlock.stats_reset();
SELECT count(*) AS names FROM dlock.stats;
SELECT grants, busy, releases, holders, names, evictions, max_names,
       stats_reset <= clock_timestamp() AS reset_known
  FROM dlock.stats_totals;

-- A grant, a busy answer, the owner's retry (no new grant), a release: its
-- hold time is the grant's, to the microsecond.
SELECT token AS t FROM dlock.try_acquire('st-a', '1 min', 'a') \gset
SELECT dlock.try_acquire('st-a', '1 min', 'b') IS NULL AS busy;
SELECT token = :t AS same_grant FROM dlock.try_acquire('st-a', '1 min', 'a');
SELECT name, grants, busy, holders, releases FROM dlock.stats;
SELECT dlock.release('st-a', :t, 'a') AS released;
SELECT s.grants, s.busy, s.releases, s.holders,
       s.total_hold_time = extract(epoch FROM l.released_at - l.acquired_at) * 1000 AS hold_exact,
       s.max_hold_time = s.total_hold_time AS one_hold,
       s.waits, s.takeovers, s.force_releases, s.renew_failures
  FROM dlock.stats AS s JOIN dlock.leases AS l USING (name)
 WHERE name = 'st-a';
-- A release that finds nothing to release counts nothing.
SELECT dlock.release('st-a', :t, 'a') AS released;
SELECT releases FROM dlock.stats WHERE name = 'st-a';

-- Renewals refused: after the release, and with another owner's name.
SELECT regress.outcome(format('SELECT dlock.renew(%L, %s)', 'st-a', :t));
SELECT token AS t FROM dlock.try_acquire('st-a', '1 min', 'a') \gset
SELECT regress.outcome(format('SELECT dlock.renew(%L, %s, owner => %L)', 'st-a', :t, 'b'));
SELECT token = :t AS renewed FROM dlock.renew('st-a', :t);
SELECT grants, renew_failures, holders FROM dlock.stats WHERE name = 'st-a';

-- A force-release ends the grant: counted with its hold time; one of a
-- grant its holder had released already is not.
SELECT token AS t FROM dlock.try_acquire('st-forced', '1 min', 'a') \gset
SELECT dlock.force_release('st-forced', 'stats test') IS NOT NULL AS forced;
SELECT s.force_releases, s.releases, s.holders,
       s.max_hold_time = extract(epoch FROM l.released_at - l.acquired_at) * 1000 AS hold_exact
  FROM dlock.stats AS s JOIN dlock.leases AS l USING (name)
 WHERE name = 'st-forced';
SELECT token AS t FROM dlock.try_acquire('st-forced', '1 min', 'a', min_hold => '1 min') \gset
SELECT dlock.release('st-forced', :t, 'a') AS released;
SELECT dlock.force_release('st-forced', 'inside min_hold') IS NOT NULL AS forced;
SELECT grants, releases, force_releases, lapses FROM dlock.stats WHERE name = 'st-forced';

-- A takeover after expiry: the new grant counts, and the expired one's
-- hold time runs from its grant to its expiry.
SELECT token AS t FROM dlock.try_acquire('st-takeover', '1 min', 'a') \gset
SELECT regress.expire('st-takeover');
SELECT extract(epoch FROM expires_at - acquired_at) * 1000 AS expired_hold
  FROM dlock.lease_store WHERE name = 'st-takeover' \gset
SELECT token > :t AS newer FROM dlock.try_acquire('st-takeover', '1 min', 'b');
SELECT grants, takeovers, releases, max_hold_time = :expired_hold AS hold_exact, holders,
       lapses
  FROM dlock.stats WHERE name = 'st-takeover';

-- acquire: a wait that times out, and one granted when the holder's
-- 300 ms expire (the call waits as long as that takes; its timeout is
-- only a deadline).
SELECT token AS t FROM dlock.try_acquire('st-wait', '1 min', 'a') \gset
SELECT regress.outcome($$SELECT dlock.acquire('st-wait', '1 min', timeout => '50 ms', owner => 'b')$$);
SELECT waits, wait_timeouts, grants, max_wait_time > 0 AS waited,
       total_wait_time = max_wait_time AS one_wait
  FROM dlock.stats WHERE name = 'st-wait';
SELECT dlock.release('st-wait', :t, 'a') AS released;
SELECT token AS t FROM dlock.try_acquire('st-wait', '300 ms', 'a') \gset
SELECT token > :t AS granted
  FROM dlock.acquire('st-wait', '1 min', timeout => '5 min', owner => 'b');
SELECT waits, wait_timeouts, grants, takeovers, releases,
       max_hold_time = 300 AS expired_after_its_ttl, holders
  FROM dlock.stats WHERE name = 'st-wait';
-- acquire on a free lease does not wait.
SELECT token > 0 AS granted FROM dlock.acquire('st-free', '1 min', timeout => '1 s', owner => 'a');
SELECT grants, waits FROM dlock.stats WHERE name = 'st-free';

-- Shared leases and semaphores: each holder's grant counts, and holders
-- are the grants held now.
SELECT count(*) AS granted FROM (
    SELECT dlock.try_acquire('st-shared', '1 min', 'r' || i, shared => true) AS l
      FROM generate_series(1, 3) AS i) AS g WHERE l IS NOT NULL;
SELECT dlock.try_acquire('st-shared', '1 min', 'w') IS NULL AS writer_busy;
SELECT count(*) AS granted FROM (
    SELECT dlock.try_acquire('st-sem', '1 min', 'p' || i, permits => 2) AS l
      FROM generate_series(1, 3) AS i) AS g WHERE l IS NOT NULL;
SELECT name, grants, busy, holders FROM dlock.stats
 WHERE name IN ('st-shared', 'st-sem') ORDER BY name;

-- try_acquire_all: all granted, or the busy name counted busy.
SELECT count(*) AS granted FROM dlock.try_acquire_all('{st-m1,st-m2}', '1 min', 'a');
SELECT count(*) AS granted FROM dlock.try_acquire_all('{st-m1,st-m3}', '1 min', 'b');
SELECT name, grants, busy FROM dlock.stats WHERE name LIKE 'st-m%' ORDER BY name;
-- release_all counts a release per grant.
SELECT dlock.release_all('a') AS released;
SELECT name, releases, holders FROM dlock.stats WHERE name LIKE 'st-m%' ORDER BY name;

-- Lapses: grants that expired unreleased, counted once each, when the
-- server ends their row. Taken over by the same owner (a new token):
SELECT token AS t FROM dlock.try_acquire('st-lapse-same', '1 min', 'a') \gset
SELECT regress.expire('st-lapse-same');
SELECT token > :t AS new_token FROM dlock.try_acquire('st-lapse-same', '1 min', 'a');
SELECT grants, takeovers, lapses, releases FROM dlock.stats WHERE name = 'st-lapse-same';
-- Force-released after its expiry: a force-release and a lapse.
SELECT token AS t FROM dlock.try_acquire('st-lapse-forced', '1 min', 'a') \gset
SELECT regress.expire('st-lapse-forced');
SELECT dlock.force_release('st-lapse-forced', 'expired') IS NOT NULL AS forced;
SELECT grants, force_releases, lapses, takeovers FROM dlock.stats WHERE name = 'st-lapse-forced';
-- A takeover rolled back counts nothing; the one that commits counts the
-- lapse once.
SELECT token AS t FROM dlock.try_acquire('st-lapse-once', '1 min', 'a') \gset
SELECT regress.expire('st-lapse-once');
BEGIN;
SELECT token > :t AS took_over FROM dlock.try_acquire('st-lapse-once', '1 min', 'b');
ROLLBACK;
SELECT grants, takeovers, lapses FROM dlock.stats WHERE name = 'st-lapse-once';
SELECT token > :t AS took_over FROM dlock.try_acquire('st-lapse-once', '1 min', 'b');
SELECT grants, takeovers, lapses FROM dlock.stats WHERE name = 'st-lapse-once';
-- Two readers that expired, taken over by a writer: two lapses.
SELECT count(*) AS granted FROM (
    SELECT dlock.try_acquire('st-lapse-shared', '1 min', 'r' || i, shared => true) AS l
      FROM generate_series(1, 2) AS i) AS g WHERE l IS NOT NULL;
SELECT regress.expire('st-lapse-shared', holder_token => token)
  FROM dlock.lease_holders WHERE name = 'st-lapse-shared' ORDER BY token;
SELECT token > 0 AS writer FROM dlock.try_acquire('st-lapse-shared', '1 min', 'w');
SELECT grants, takeovers, lapses FROM dlock.stats WHERE name = 'st-lapse-shared';
-- Swept after its expiry: a lapse; a released row swept is none, and a
-- row swept once is gone.
SELECT token AS t FROM dlock.try_acquire('st-lapse-swept', '1 min', 'a') \gset
SELECT regress.expire('st-lapse-swept', past_delay => true);
SELECT token AS t FROM dlock.try_acquire('st-released-swept', '1 min', 'a') \gset
SELECT dlock.release('st-released-swept', :t, 'a') AS released;
SELECT dlock.sweep('0 s') > 0 AS swept;
SELECT count(*) AS rows_left FROM dlock.lease_store
 WHERE name IN ('st-lapse-swept', 'st-released-swept');
SELECT dlock.sweep('0 s') AS swept_again;
SELECT name, grants, releases, lapses FROM dlock.stats
 WHERE name IN ('st-lapse-swept', 'st-released-swept') ORDER BY name;

-- A grant's events count at its commit: one rolled back, or in a
-- savepoint rolled back, adds no name and counts nothing; one in a
-- savepoint released counts at the commit.
BEGIN;
SELECT token > 0 AS granted FROM dlock.try_acquire('st-rolled-back', '1 min', 'a');
SELECT count(*) AS before_commit FROM dlock.stats WHERE name = 'st-rolled-back';
ROLLBACK;
SELECT count(*) AS counted FROM dlock.stats WHERE name = 'st-rolled-back';
BEGIN;
SELECT count(*) AS granted FROM (
    SELECT dlock.try_acquire('st-burst-' || i, '1 min', 'a') AS l
      FROM generate_series(1, 400) AS i) AS g WHERE l IS NOT NULL;
ROLLBACK;
SELECT count(*) AS counted FROM dlock.stats WHERE name LIKE 'st-burst-%';
BEGIN;
SELECT token > 0 AS granted FROM dlock.try_acquire('st-sp-kept', '1 min', 'a');
SAVEPOINT s;
SELECT token > 0 AS granted FROM dlock.try_acquire('st-sp-gone', '1 min', 'a');
ROLLBACK TO SAVEPOINT s;
SAVEPOINT s2;
SELECT token > 0 AS granted FROM dlock.try_acquire('st-sp-released', '1 min', 'a');
RELEASE SAVEPOINT s2;
SELECT count(*) AS before_commit FROM dlock.stats WHERE name LIKE 'st-sp-%';
COMMIT;
SELECT name, grants, holders FROM dlock.stats WHERE name LIKE 'st-sp-%' ORDER BY name;
-- A transaction whose only grant was in a savepoint rolled back, then
-- the next one's grants: counted, each once.
BEGIN;
SAVEPOINT s;
SELECT token > 0 AS granted FROM dlock.try_acquire('st-sp-only', '1 min', 'a');
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT count(*) AS granted FROM (
    SELECT dlock.try_acquire('st-next-' || i, '1 min', 'a') AS l
      FROM generate_series(1, 40) AS i) AS g WHERE l IS NOT NULL;
SELECT count(*) AS names, sum(grants) AS grants FROM dlock.stats
 WHERE name = 'st-sp-only' OR name LIKE 'st-next-%';
-- A renewal of a name never granted is refused and adds no name; anyone
-- may call it, with any name.
SELECT code FROM regress.error_of($$SELECT dlock.renew('st-made-up', 12345)$$);
SELECT count(*) AS counted FROM dlock.stats WHERE name = 'st-made-up';

-- dlock.track_stats = off counts nothing.
SET dlock.track_stats = off;
SELECT dlock.stats_status();
SELECT token > 0 AS granted FROM dlock.try_acquire('st-untracked', '1 min', 'a');
SELECT count(*) AS counted FROM dlock.stats WHERE name = 'st-untracked';
RESET dlock.track_stats;

-- The totals add up every name.
SELECT t.grants = s.grants AND t.busy = s.busy AND t.releases = s.releases
       AND t.waits = s.waits AND t.takeovers = s.takeovers
       AND t.force_releases = s.force_releases AND t.renew_failures = s.renew_failures
       AND t.max_hold_time = s.max_hold AND t.lapses = s.lapses AS sums,
       t.grants, t.busy, t.waits, t.wait_timeouts, t.takeovers, t.force_releases,
       t.renew_failures, t.releases, t.holders, t.names, t.evictions, t.lapses
  FROM dlock.stats_totals AS t,
       (SELECT sum(grants) AS grants, sum(busy) AS busy, sum(releases) AS releases,
               sum(waits) AS waits, sum(takeovers) AS takeovers,
               sum(force_releases) AS force_releases, sum(renew_failures) AS renew_failures,
               max(max_hold_time) AS max_hold, sum(lapses) AS lapses
          FROM dlock.stats) AS s;

-- Only administrators reset; everyone reads.
CREATE ROLE regress_stats_reader;
GRANT USAGE ON SCHEMA regress TO regress_stats_reader;
SET ROLE regress_stats_reader;
SELECT count(*) > 0 AS readable FROM dlock.stats;
SELECT regress.outcome('SELECT dlock.stats_reset()');
RESET ROLE;
GRANT dlock_admin TO regress_stats_reader;
SET ROLE regress_stats_reader;
SELECT regress.outcome('SELECT dlock.stats_reset()');
RESET ROLE;
REVOKE USAGE ON SCHEMA regress FROM regress_stats_reader;
DROP ROLE regress_stats_reader;
SELECT count(*) AS names FROM dlock.stats;
SELECT grants, holders, names, evictions, lapses FROM dlock.stats_totals;
