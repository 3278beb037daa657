-- Lease administration: renew counts and hold times, lock-delay, max_hold,
-- force_release, release_all, sweep, dlock.log_grants.
\set ECHO none
\i sql/setup/fresh_dlock.sql
\set ECHO all
SET client_min_messages = warning;

-- The view tells renewals, how long a lease has been held and whether the
-- acquiring backend is still connected.
SELECT token AS t FROM dlock.try_acquire('admin-a', interval '1 min', 'worker-1') \gset
SELECT token = :t AS renewed FROM dlock.renew('admin-a', :t);
SELECT token = :t AS renewed FROM dlock.renew('admin-a', :t);
SELECT state, renew_count, held_for >= interval '0' AS held_for_known,
       backend_pid = pg_backend_pid() AS my_backend, backend_connected,
       lock_delay, max_hold, forced_by
  FROM dlock.leases WHERE name = 'admin-a';

-- Chubby's lock-delay: a lease that expires without being released stays
-- unavailable until expires_at + lock_delay; a released one is free at once.
-- (Expiry is forced with regress.expire, so nothing waits for the clock.)
SELECT token AS ld FROM dlock.try_acquire('admin-delay', interval '1 min', 'worker-1',
                                          lock_delay => interval '1 h') \gset
SELECT regress.expire('admin-delay');
SELECT state, lock_delay FROM dlock.leases WHERE name = 'admin-delay';
SELECT dlock.try_acquire('admin-delay', interval '1 min', 'worker-2') IS NULL AS busy_in_delay;
SELECT regress.outcome($$SELECT dlock.acquire('admin-delay', '1 min', '50 ms', 'worker-2')$$) AS acquire_times_out;
SELECT regress.expire('admin-delay', past_delay => true);
SELECT state FROM dlock.leases WHERE name = 'admin-delay';
SELECT token > :ld AS taken_after_delay, owner
  FROM dlock.try_acquire('admin-delay', interval '1 min', 'worker-2');
SELECT state, lock_delay FROM dlock.leases WHERE name = 'admin-delay';
SELECT token AS ld2 FROM dlock.try_acquire('admin-released', interval '1 min', 'worker-1',
                                           lock_delay => interval '1 h') \gset
SELECT dlock.release('admin-released', :ld2);
SELECT token > :ld2 AS released_is_free_at_once
  FROM dlock.try_acquire('admin-released', interval '1 min', 'worker-2');

-- max_hold: renewals (and the owner's retries) never extend past
-- acquired_at + max_hold.
SELECT token AS mh, acquired_at AS mh_at
  FROM dlock.try_acquire('admin-cap', interval '1 min', 'worker-1', NULL, max_hold => interval '2 min') \gset
SELECT expires_at = :'mh_at'::timestamptz + interval '2 min' AS renewal_capped
  FROM dlock.renew('admin-cap', :mh, interval '1 h');
SELECT expires_at = :'mh_at'::timestamptz + interval '2 min' AS retry_capped, token = :mh AS same_token
  FROM dlock.try_acquire('admin-cap', interval '1 h', 'worker-1');
SELECT max_hold FROM dlock.leases WHERE name = 'admin-cap';
SELECT expires_at - acquired_at AS first_grant_capped
  FROM dlock.try_acquire('admin-cap2', interval '1 h', 'worker-1', NULL, max_hold => interval '2 min');

-- Their arguments: not negative, not above dlock.max_ttl; NULL or 0: none.
SELECT token > 0 AS granted
  FROM dlock.try_acquire('admin-zero', interval '1 min', 'worker-1', interval '0', interval '0');
SELECT lock_delay, max_hold IS NULL AS no_max_hold FROM dlock.leases WHERE name = 'admin-zero';
SELECT regress.outcome($$SELECT dlock.try_acquire('x', '1 s', 'o', lock_delay => '-1 s')$$) AS negative_delay;
SELECT regress.outcome($$SELECT dlock.try_acquire('x', '1 s', 'o', NULL, max_hold => '2 days')$$) AS long_max_hold;
SELECT regress.outcome($$SELECT dlock.acquire('x', '1 s', '1 s', 'o', lock_delay => '2 days')$$) AS acquire_long_delay;

-- force_release: ends the grant whoever holds it and records who and why;
-- the old token is dead at once.
SELECT token AS fr FROM dlock.try_acquire('admin-stuck', interval '1 h', 'worker-3') \gset
SELECT token = :fr AS ended_this_grant, owner FROM dlock.force_release('admin-stuck', 'worker-3 hung in a GC pause');
SELECT state, forced_by = current_user AS forced_by_me, force_reason FROM dlock.leases WHERE name = 'admin-stuck';
SELECT regress.outcome(format($$SELECT dlock.renew('admin-stuck', %s)$$, :fr))
       = 'LD002: The lease was force-released by ' || current_user || ': worker-3 hung in a GC pause; its latest token is ' || :fr || '.'
       AS renew_refused;
SELECT regress.outcome(format($$SELECT dlock.assert_held('admin-stuck', %s)$$, :fr)) LIKE 'LD002%' AS assert_refused;
SELECT dlock.release('admin-stuck', :fr) AS release_false;
SELECT token > :fr AS newer FROM dlock.try_acquire('admin-stuck', interval '1 min', 'worker-4');
SELECT owner, forced_by, force_reason FROM dlock.leases WHERE name = 'admin-stuck';
SELECT dlock.force_release('no-such-lease', 'nothing') IS NULL AS nothing_to_force;
SELECT regress.outcome($$SELECT dlock.force_release('admin-stuck', NULL)$$) AS null_reason;
-- A reason is at most 500 bytes (it is kept and shown in LD002's DETAIL).
SELECT regress.outcome($$SELECT dlock.force_release('admin-stuck', repeat('é', 251))$$) AS long_reason;
SELECT owner FROM dlock.force_release('admin-stuck', repeat('é', 250)) AS fits;

-- release_all: every lease an owner holds, for a worker shutting down.
SELECT count(dlock.try_acquire('admin-job-' || i, interval '1 min', 'worker-9')) FROM generate_series(1, 3) AS i;
SELECT dlock.try_acquire('admin-other', interval '1 min', 'worker-8') IS NOT NULL AS other_owner;
SELECT dlock.release_all('worker-9') AS released;
SELECT dlock.release_all('worker-9') AS released_again;
SELECT name, state FROM dlock.leases WHERE owner IN ('worker-8', 'worker-9') ORDER BY name;
SELECT regress.outcome($$SELECT dlock.release_all(NULL)$$) AS null_owner;

-- sweep: deletes rows released or expired (past their lock-delay) more than
-- older_than ago; held leases, fences and the token sequence are untouched.
SELECT last_value AS seq_before FROM dlock.token_seq \gset
SELECT count(*) AS fences_before FROM dlock.fences \gset
SELECT dlock.sweep(interval '1 h') AS nothing_that_old;
SELECT count(*) FILTER (WHERE state IN ('released', 'expired')) AS sweepable,
       count(*) FILTER (WHERE state IN ('held', 'lock-delay')) AS kept
  FROM dlock.leases \gset
SELECT dlock.sweep(interval '0 s') = :sweepable AS swept_all_old;
SELECT count(*) = :kept AS only_live_left, bool_and(state IN ('held', 'lock-delay')) AS all_live
  FROM dlock.leases;
SELECT last_value = :seq_before AS sequence_untouched FROM dlock.token_seq;
SELECT count(*) = :fences_before AS fences_untouched FROM dlock.fences;
SELECT token > :seq_before AS regrant_is_newer FROM dlock.try_acquire('admin-job-1', interval '1 min', 'worker-9');
SELECT regress.outcome($$SELECT dlock.sweep('-1 s')$$) AS negative;
SELECT regress.outcome($$SELECT dlock.sweep(NULL)$$) AS null_interval;

-- Administrative functions are not for PUBLIC; release_all is.
CREATE ROLE regress_dlock_nobody;
SELECT has_function_privilege('regress_dlock_nobody', 'dlock.force_release(text, text, bigint)', 'EXECUTE') AS force,
       has_function_privilege('regress_dlock_nobody', 'dlock.sweep(interval)', 'EXECUTE') AS sweep,
       has_function_privilege('regress_dlock_nobody', 'dlock.release_all(text)', 'EXECUTE') AS release_all;
DROP ROLE regress_dlock_nobody;

-- dlock.log_grants logs grants and failed renewals (tokens, not timings;
-- the sequence is moved forward to make the token known).
SELECT setval('dlock.token_seq', 1000) = 1000 AS sequence_at_1000;
SET dlock.log_grants = on;
SET client_min_messages = log;
SELECT token > 0 AS granted FROM dlock.try_acquire('admin-logged', interval '1 min', 'worker-5') \gset
SELECT regress.outcome($$SELECT dlock.renew('admin-logged', 1)$$) LIKE 'LD002%' AS renew_failed;
RESET client_min_messages;
RESET dlock.log_grants;
