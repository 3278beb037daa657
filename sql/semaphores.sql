-- Semaphores: up to N holders of a name, each with its own grant; the
-- permit count fixed while anyone holds; bad permits.
\set ECHO none
\i sql/setup/fresh_dlock.sql
\set ECHO all
SET client_min_messages = warning;

SELECT token, owner FROM dlock.try_acquire('api', '1 min', 'a', permits => 3);
SELECT token, owner FROM dlock.try_acquire('api', '1 min', 'b', permits => 3);
SELECT token, owner FROM dlock.acquire('api', '1 min', '0', 'c', permits => 3);
SELECT dlock.try_acquire('api', '1 min', 'd', permits => 3) IS NULL AS fourth_busy;
SELECT regress.outcome($$SELECT dlock.acquire('api', '1 min', '0', 'd', permits => 3)$$) AS fourth_waits;
SELECT owner, token, state, mode, permits, holders FROM dlock.leases WHERE name = 'api' ORDER BY token;
-- The holder's retry: its own permit again.
SELECT token FROM dlock.try_acquire('api', '1 min', 'b', permits => 3);

-- Another count while anyone holds: 22023 naming the count in force; an
-- exclusive or shared request too. Nothing changes.
SELECT * FROM regress.error_of($$SELECT dlock.try_acquire('api', '1 min', 'd', permits => 2)$$);
SELECT regress.outcome($$SELECT dlock.try_acquire('api', '1 min', 'd')$$) AS exclusive,
       regress.outcome($$SELECT dlock.try_acquire('api', '1 min', 'd', shared => true)$$) AS shared,
       regress.outcome($$SELECT dlock.try_acquire('api', '1 min', 'b', permits => 4)$$) AS holder_other_count;
SELECT count(*) AS holders FROM dlock.lease_holders WHERE name = 'api';

-- A release frees a permit; so does an expiry.
SELECT dlock.release('api', 1) AS released;
SELECT token, owner FROM dlock.try_acquire('api', '1 min', 'd', permits => 3);
SELECT regress.expire('api', holder_token => 2);
SELECT token, owner FROM dlock.try_acquire('api', '1 min', 'e', permits => 3);
SELECT dlock.try_acquire('api', '1 min', 'f', permits => 3) IS NULL AS full_again;
SELECT owner, token, state, holders FROM dlock.leases WHERE name = 'api' ORDER BY token;

-- With no holder left, the next grant sets the count.
SELECT count(*) FILTER (WHERE dlock.release('api', token)) AS released
  FROM dlock.leases WHERE name = 'api' AND state = 'held';
SELECT token, owner FROM dlock.try_acquire('api', '1 min', 'g', permits => 2);
SELECT owner, permits, holders FROM dlock.leases WHERE name = 'api' AND state = 'held';

-- permits => 1 is an ordinary lease, and counts as one with exclusive ones.
SELECT token FROM dlock.try_acquire('one', '1 min', 'a', permits => 1);
SELECT dlock.try_acquire('one', '1 min', 'b') IS NULL AS busy;
SELECT count(*) AS holder_rows FROM dlock.lease_holders WHERE name = 'one';

-- Bad permits: 22023, nothing written.
SELECT code, message, detail FROM regress.error_of($$SELECT dlock.try_acquire('bad', '1 min', permits => 0)$$);
SELECT code, message FROM regress.error_of($$SELECT dlock.try_acquire('bad', '1 min', permits => 1001)$$);
SELECT code, message FROM regress.error_of($$SELECT dlock.acquire('bad', '1 min', '1 s', permits => -1)$$);
SELECT code, message FROM regress.error_of($$SELECT dlock.try_acquire('bad', '1 min', permits => 2, shared => true)$$);
SELECT token FROM dlock.try_acquire('big', '1 min', permits => 1000);
SELECT count(*) AS bad_rows FROM dlock.leases WHERE name = 'bad';

-- Administration: force_release with a token ends that holder; without,
-- every holder; release_all covers holders; sweep deletes holder rows.
SELECT token FROM dlock.try_acquire('adm', '1 min', 'x', permits => 3);
SELECT token FROM dlock.try_acquire('adm', '1 min', 'y', permits => 3);
SELECT owner, token FROM dlock.force_release('adm', 'stuck', token => 10);
SELECT owner, token, state, forced_by IS NOT NULL AS forced FROM dlock.leases
 WHERE name = 'adm' ORDER BY token;
SELECT token FROM dlock.try_acquire('adm', '1 min', 'z', permits => 3);
SELECT owner, token FROM dlock.force_release('adm', 'maintenance');
SELECT owner, token, state FROM dlock.leases WHERE name = 'adm' ORDER BY token;
SELECT token FROM dlock.try_acquire('adm', '1 min', 'x', permits => 3);
SELECT token FROM dlock.try_acquire('adm2', '1 min', 'x', shared => true);
SELECT dlock.release_all('x') AS released;
SELECT dlock.sweep('0 s') AS swept;
SELECT count(*) AS left_rows FROM dlock.lease_holders WHERE name LIKE 'adm%';
