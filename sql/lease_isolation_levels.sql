-- REPEATABLE READ and SERIALIZABLE: try_acquire, renew and release work
-- (a conflict with a concurrent grant raises 40001, see the isolation
-- specs); acquire refuses to wait (0A000): its snapshot could never see the
-- lease being released.
\set ECHO none
\i sql/setup/fresh_dlock.sql
\set ECHO all
SET client_min_messages = warning;

BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT token AS rr_token, owner FROM dlock.try_acquire('rr', interval '5 min', 'rr-owner') \gset
SELECT :'owner' AS owner, token = :rr_token AS same_token FROM dlock.renew('rr', :rr_token, interval '6 min');
SELECT regress.outcome($$SELECT dlock.acquire('rr-other', '5 s', '1 s')$$) AS acquire_in_rr;
SELECT dlock.release('rr', :rr_token) AS released;
COMMIT;
SELECT state FROM dlock.leases WHERE name = 'rr';

BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT token AS ser_token FROM dlock.try_acquire('ser', interval '5 min', 'ser-owner') \gset
SELECT :ser_token > :rr_token AS larger_token;
SELECT dlock.try_acquire('ser', interval '5 min', 'someone-else') IS NULL AS busy;
SELECT regress.outcome($$SELECT dlock.acquire('ser', '5 s', '0 s', 'ser-owner')$$) AS acquire_in_serializable;
SELECT dlock.release('ser', :ser_token) AS released;
COMMIT;
SELECT state FROM dlock.leases WHERE name = 'ser';

-- acquire in READ COMMITTED inside an explicit transaction is fine.
BEGIN ISOLATION LEVEL READ COMMITTED;
SELECT token > :ser_token AS larger_token, owner
  FROM dlock.acquire('rc', interval '5 min', interval '1 s', 'rc-owner');
COMMIT;

-- A read-only transaction (a hot standby's included): every function that
-- writes leases raises 25006 before looking at the lease, held or not;
-- reads work.
SELECT token AS ro_token FROM dlock.try_acquire('ro', interval '1 min', 'ro-owner') \gset
BEGIN READ ONLY;
SELECT regress.outcome($$SELECT dlock.try_acquire('ro', '1 min', 'ro-owner')$$) AS try_acquire_held;
SELECT regress.outcome($$SELECT dlock.try_acquire('ro-free', '1 min')$$) AS try_acquire_free;
SELECT regress.outcome($$SELECT dlock.acquire('ro-free', '1 min', '0 s')$$) AS acquire;
SELECT regress.outcome(format($$SELECT dlock.renew('ro', %s)$$, :ro_token)) AS renew;
SELECT regress.outcome(format($$SELECT dlock.release('ro', %s)$$, :ro_token)) AS release;
SELECT regress.outcome($$SELECT dlock.release('ro', 1)$$) AS release_not_held;
SELECT regress.outcome($$SELECT dlock.release_all('ro-owner')$$) AS release_all;
SELECT regress.outcome($$SELECT dlock.force_release('ro', 'test')$$) AS force_release;
SELECT regress.outcome($$SELECT dlock.sweep()$$) AS sweep;
-- assert_held locks the lease's row, so it too is refused, naming itself.
SELECT code, message FROM regress.error_of(format($$SELECT dlock.assert_held('ro', %s)$$, :ro_token));
SELECT token = :ro_token AS same_token, owner FROM dlock.get('ro');
SELECT state FROM dlock.leases WHERE name = 'ro';
COMMIT;
SELECT count(*) AS free_rows FROM dlock.lease_store WHERE name = 'ro-free';
SELECT dlock.release('ro', :ro_token) AS released;
