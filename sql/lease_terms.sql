-- Grant terms by name: every optional parameter of try_acquire and acquire
-- in any order; min_hold; the owner check of renew and release; the
-- default owner that never re-enters; the edges of acquire's timeout.
\set ECHO none
\i sql/setup/fresh_dlock.sql
\set ECHO all
SET client_min_messages = warning;

-- Every optional parameter by name, in any order; positional calls as
-- before.
SELECT token, owner FROM dlock.try_acquire(max_hold => '1 h', name => 'n1', lock_delay => '5 s',
                                           ttl => '30 s', owner => 'o1', min_hold => '10 s');
SELECT ttl, lock_delay, max_hold, min_hold FROM dlock.leases WHERE name = 'n1';
SELECT token, owner = dlock.default_owner() AS default_owner
  FROM dlock.acquire('n2', '30 s', '1 s', min_hold => '1 s');
SELECT token, owner FROM dlock.acquire(timeout => '0', ttl => '30 s', name => 'n3',
                                       max_hold => '1 min', owner => 'o3');
SELECT token, owner FROM dlock.try_acquire('n4', '30 s', 'o4', '1 s', '1 h');
SELECT token, owner FROM dlock.acquire('n5', '30 s', '0', 'o5', '1 s', '1 h', '1 s');
SELECT name, ttl, lock_delay, max_hold, min_hold FROM dlock.leases ORDER BY name;

-- min_hold: released early, the lease stays unavailable to everyone until
-- acquired_at + min_hold; renew and release treat it as released.
SELECT dlock.release('n1', 1) AS released_early;
SELECT state, released_at IS NOT NULL AS has_released_at FROM dlock.leases WHERE name = 'n1';
SELECT dlock.try_acquire('n1', '30 s', 'o1') IS NULL AS same_owner_busy,
       dlock.try_acquire('n1', '30 s', 'other') IS NULL AS other_busy;
SELECT dlock.get('n1') IS NULL AS not_held;
SELECT regress.outcome($$SELECT dlock.renew('n1', 1)$$) AS renew;
SELECT dlock.release('n1', 1) AS release_again;
-- Its min_hold over (moved into the past, so that nothing waits for the
-- clock), the lease is free.
UPDATE dlock.lease_store SET acquired_at = acquired_at - interval '10 s' WHERE name = 'n1';
SELECT state FROM dlock.leases WHERE name = 'n1';
SELECT token, owner FROM dlock.try_acquire('n1', '30 s', 'other');
-- An administrator's force_release frees a lease inside its min_hold.
SELECT token AS early FROM dlock.try_acquire('n7', '30 s', 'o7', min_hold => '1 h') \gset
SELECT dlock.release('n7', :early) AS released;
SELECT state FROM dlock.leases WHERE name = 'n7';
SELECT owner FROM dlock.force_release('n7', 'the report is needed again');
SELECT state, min_hold, forced_by = current_user AS forced FROM dlock.leases WHERE name = 'n7';
SELECT token > :early AS taken FROM dlock.try_acquire('n7', '30 s', 'other');
SELECT dlock.force_release('n7', 'again') IS NOT NULL AS forced_held;
SELECT dlock.force_release('n7', 'nothing left') IS NULL AS nothing_to_force;
-- min_hold does not hold back an expiry: an unreleased grant is free at
-- its expiry (and lock-delay) as before.
SELECT regress.expire('n2', true);
SELECT token, owner FROM dlock.try_acquire('n2', '30 s', 'other');
-- The same rule for SQL.
SELECT dlock.lease_state(now() - interval '1 s', now() + interval '1 min', '0', now(),
                         now() + interval '1 s') AS early,
       dlock.lease_state(now() - interval '1 s', now() + interval '1 min', '0', now(), now()) AS ended,
       dlock.lease_state(now() - interval '1 s', now() + interval '1 min', '0', now()) AS no_min_hold;
-- min_hold within max_hold and dlock.max_ttl, not negative (22023).
SELECT regress.outcome($$SELECT dlock.try_acquire('n6', '30 s', min_hold => '2 h', max_hold => '1 h')$$) AS over_max_hold;
SELECT regress.outcome($$SELECT dlock.try_acquire('n6', '30 s', min_hold => '-1 s')$$) AS negative;
SELECT regress.outcome($$SELECT dlock.try_acquire('n6', '30 s', min_hold => '2 days')$$) AS over_max_ttl;
SELECT count(*) AS n6_rows FROM dlock.lease_store WHERE name = 'n6';

-- renew and release with an owner: it must be the grant's (a token is a
-- capability within its role; the owner check keeps a client from using
-- a token it was not granted).
SELECT token AS alice_token FROM dlock.try_acquire('own', '30 s', 'alice') \gset
SELECT regress.outcome(format('SELECT dlock.renew(%L, %s, owner => %L)', 'own', :alice_token, 'bob')) AS renew_as_bob;
SELECT dlock.release('own', :alice_token, owner => 'bob') AS release_as_bob;
SELECT owner, state FROM dlock.leases WHERE name = 'own';
SELECT owner FROM dlock.renew('own', :alice_token, owner => 'alice');
SELECT dlock.release('own', :alice_token, 'alice') AS release_as_alice;

-- The default owner never re-enters a lease it holds: try_acquire is
-- busy, acquire waits (here until its timeout).
SELECT token AS mine FROM dlock.try_acquire('mine', '30 s') \gset
SELECT dlock.try_acquire('mine', '30 s') IS NULL AS try_again_busy;
SELECT regress.outcome($$SELECT dlock.acquire('mine', '30 s', '10 ms')$$) AS acquire_again;
SELECT token = :mine AS unchanged FROM dlock.get('mine');

-- acquire's timeout: the longest an interval can say waits (cut short here
-- by statement_timeout: 57014, not an instant 55P03); one microsecond
-- more is refused with 22023; zero is one attempt.
SELECT regress.outcome($$SELECT dlock.acquire('mine', '30 s', interval '106751991 days 04:00:54.775808', 'x')$$) AS too_long;
SET statement_timeout = '100ms';
SELECT dlock.acquire('mine', '30 s', interval '106751991 days 04:00:54.775807', 'x');
RESET statement_timeout;
SELECT regress.outcome($$SELECT dlock.acquire('mine', '30 s', '0', 'x')$$) AS zero;

-- An interval whose day part alone lies past the 64-bit range of
-- microseconds, brought back into it by a time part of the other sign, is
-- as long as it says: 106751992 days less 2562047788:00:54.775807 is
-- 71945224193 us (about 20 h), a ttl like any other, and the same
-- negated is a negative timeout, not one out of range.
SELECT expires_at - acquired_at AS length
  FROM dlock.try_acquire('n9', interval '106751992 days -2562047788:00:54.775807', 'o9');
SELECT code, message
  FROM regress.error_of($$SELECT dlock.acquire('n10', '30 s', interval '-106751992 days 2562047788:00:54.775807')$$);

-- A row whose acquired_at is 'infinity' (written by hand) puts max_hold's
-- cap at the end of time: a renewal gets its whole ttl, a finite expiry.
SELECT token AS t11 FROM dlock.try_acquire('n11', '30 s', 'o11', max_hold => '1 min') \gset
UPDATE dlock.lease_store SET acquired_at = 'infinity' WHERE name = 'n11';
BEGIN;
SELECT isfinite(expires_at) AS finite,
       expires_at >= now() + interval '30 s' AS whole_ttl,
       expires_at <= clock_timestamp() + interval '30 s' AS not_more
  FROM dlock.renew('n11', :t11, owner => 'o11');
COMMIT;
