-- Shared leases: readers share, a writer needs them all gone; each holder
-- is a grant of its own (token, owner, renew, release, lock-delay); the
-- same owner retries, but never switches mode; dlock.leases and get().
\set ECHO none
\i sql/setup/fresh_dlock.sql
\set ECHO all
SET client_min_messages = warning;

-- Two readers share; a writer is refused while they hold it.
SELECT token, owner FROM dlock.try_acquire('doc', '1 min', 'r1', shared => true);
SELECT token, owner FROM dlock.try_acquire('doc', '1 min', 'r2', shared => true);
SELECT dlock.try_acquire('doc', '1 min', 'w') IS NULL AS writer_busy;
SELECT regress.outcome($$SELECT dlock.acquire('doc', '1 min', '0', 'w')$$) AS writer_waits;
-- A reader's retry gets its grant back (same token, later expiry).
SELECT token FROM dlock.try_acquire('doc', '2 min', 'r1', shared => true);
SELECT name, owner, token, state, mode, permits, holders, ttl
  FROM dlock.leases WHERE name = 'doc' ORDER BY token;
-- get(): the held holder with the latest token.
SELECT token, owner FROM dlock.get('doc');

-- No upgrade or downgrade: LD004, with the token to release.
SELECT * FROM regress.error_of($$SELECT dlock.try_acquire('doc', '1 min', 'r1')$$);

-- Each holder renews, asserts and releases its own grant, by token.
SELECT token, valid_for > '4 min' AS renewed FROM dlock.renew('doc', 2, '5 min');
SELECT regress.outcome($$SELECT dlock.assert_held('doc', 1)$$) AS r1_holds,
       regress.outcome($$SELECT dlock.assert_held('doc', 2)$$) AS r2_holds;
SELECT dlock.release('doc', 1, 'r2') AS wrong_owner, dlock.release('doc', 1) AS released,
       dlock.release('doc', 1) AS again;
SELECT regress.outcome($$SELECT dlock.renew('doc', 1)$$) AS renew_released;
SELECT dlock.try_acquire('doc', '1 min', 'w') IS NULL AS writer_still_busy;

-- The last reader expires (past its lock-delay): the writer gets the
-- lease with a larger token, and the readers' rows go.
SELECT regress.expire('doc', holder_token => 2);
SELECT token, owner FROM dlock.try_acquire('doc', '1 min', 'w');
SELECT name, owner, token, state, mode, holders FROM dlock.leases WHERE name = 'doc' ORDER BY token;
SELECT count(*) AS holder_rows FROM dlock.lease_holders WHERE name = 'doc';
SELECT regress.outcome($$SELECT dlock.renew('doc', 2)$$) AS renew_expired_reader;
-- While the writer holds it, readers are refused; the writer cannot read.
SELECT dlock.try_acquire('doc', '1 min', 'r3', shared => true) IS NULL AS reader_busy;
SELECT * FROM regress.error_of($$SELECT dlock.try_acquire('doc', '1 min', 'w', shared => true)$$);
SELECT dlock.release('doc', 3) AS writer_released;
SELECT token FROM dlock.try_acquire('doc', '1 min', 'r3', shared => true);

-- A reader that expired unreleased keeps writers out for its lock-delay,
-- and readers may still join.
SELECT token FROM dlock.try_acquire('delayed', '1 min', 'r1', shared => true, lock_delay => '1 h');
SELECT regress.expire('delayed', holder_token => 5);
SELECT dlock.try_acquire('delayed', '1 min', 'w') IS NULL AS writer_busy_in_lock_delay;
SELECT token FROM dlock.try_acquire('delayed', '1 min', 'r2', shared => true);
SELECT regress.expire('delayed', true, 5);
SELECT regress.expire('delayed', holder_token => 6);
SELECT token, owner FROM dlock.try_acquire('delayed', '1 min', 'w');

-- The default owner is a session's, and never retries: a second shared
-- grant in one session is another holder.
SELECT count(*) AS grants FROM (
    SELECT dlock.try_acquire('default', '1 min', shared => true)
    UNION ALL SELECT dlock.try_acquire('default', '1 min', shared => true)) AS g;
SELECT count(*) AS holders FROM dlock.leases WHERE name = 'default' AND state = 'held';

-- A reader's token whose row is gone is stale: a newer grant took the
-- name (LD001 from assert_held, LD002 naming the latest token from renew).
SELECT token FROM dlock.try_acquire('gone', '1 min', 'r1', shared => true);
SELECT dlock.release('gone', token) FROM dlock.leases WHERE name = 'gone';
SELECT token FROM dlock.try_acquire('gone', '1 min', 'r2', shared => true);
SELECT count(*) AS holder_rows FROM dlock.lease_holders WHERE name = 'gone';
SELECT code, detail FROM regress.error_of($$SELECT dlock.assert_held('gone', 10)$$);
SELECT code, detail FROM regress.error_of($$SELECT dlock.renew('gone', 10)$$);
-- A reader taking a name whose exclusive grant expired unreleased
-- replaces that grant's row; its token is stale too.
SELECT token FROM dlock.try_acquire('was-exclusive', '1 min', 'w');
SELECT regress.expire('was-exclusive');
SELECT token FROM dlock.try_acquire('was-exclusive', '1 min', 'r1', shared => true);
SELECT count(*) AS store_rows FROM dlock.lease_store WHERE name = 'was-exclusive';
SELECT code, detail FROM regress.error_of($$SELECT dlock.renew('was-exclusive', 12)$$);
SELECT code, detail FROM regress.error_of($$SELECT dlock.assert_held('was-exclusive', 12)$$);

-- shared NULL: 22004.
SELECT code, message FROM regress.error_of($$SELECT dlock.try_acquire('x', '1 min', shared => NULL)$$);
SELECT count(*) AS nothing_written FROM dlock.leases WHERE name = 'x';

-- At most 1000 readers at once, as a semaphore has at most 1000 permits:
-- the 1001st is busy (NULL), as a permit is when all are taken; a
-- reader's retry still gets its grant back, and one leaving makes room.
SELECT count(*) AS readers FROM generate_series(1, 1000) AS g,
       dlock.try_acquire('crowd', '1 h', 'r' || g, shared => true) AS l
 WHERE l.token IS NOT NULL;
SELECT dlock.try_acquire('crowd', '1 h', 'r1001', shared => true) IS NULL AS reader_busy;
SELECT regress.outcome($$SELECT dlock.acquire('crowd', '1 h', '0', 'r1001', shared => true)$$) AS reader_waits;
SELECT count(*) AS holder_rows FROM dlock.lease_holders WHERE name = 'crowd';
SELECT owner = 'r7' AS same_grant FROM dlock.try_acquire('crowd', '2 h', 'r7', shared => true);
SELECT dlock.release('crowd', token) AS released FROM dlock.leases
 WHERE name = 'crowd' AND owner = 'r1';
SELECT dlock.try_acquire('crowd', '1 h', 'r1001', shared => true) IS NOT NULL AS reader_granted;
SELECT count(*) AS held FROM dlock.leases WHERE name = 'crowd' AND state = 'held';
