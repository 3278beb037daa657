-- The lease contract: grant, re-acquire, renew, release, expiry, takeover.
-- Tokens are exact: this database's token sequence starts at 1 here.
\set ECHO none
\i sql/setup/fresh_dlock.sql
\set ECHO all
SET client_min_messages = warning;

-- A free lease is granted with the first token, for exactly the TTL.
SELECT name, token, owner = dlock.default_owner() AS default_owner,
       expires_at - acquired_at AS granted_for,
       valid_for > interval '1.9 min' AND valid_for <= interval '2 min' AS valid_for_ok
  FROM dlock.try_acquire('report', interval '2 min');

-- The default owner is application name, backend pid and backend start.
SELECT dlock.default_owner() ~ ('^pg_regress/lease_api:' || pg_backend_pid() || ':[0-9]{13}$')
       AS owner_format;

-- The default owner never re-enters: it is the backend's, and a
-- transaction pooler gives one backend to many clients. Asking again is
-- busy, and the grant stays as it was.
SELECT dlock.try_acquire('report', interval '5 min') IS NULL AS default_owner_busy;

-- Another owner gets NULL at once.
SELECT dlock.try_acquire('report', interval '2 min', 'other') IS NULL AS busy;
SELECT token, owner = dlock.default_owner() AS still_mine FROM dlock.get('report');

SELECT name, token, state, ttl, released_at IS NULL AS not_released,
       acquired_by = current_user AS acquired_by_me
  FROM dlock.leases ORDER BY name;

-- renew: compare-and-set on (name, token); NULL ttl keeps the granted TTL.
SELECT token, expires_at - clock_timestamp() BETWEEN interval '1 min' AND interval '2 min' AS keeps_ttl
  FROM dlock.renew('report', 1);
SELECT token, valid_for BETWEEN interval '9 min' AND interval '10 min' AS new_ttl
  FROM dlock.renew('report', 1, interval '10 min');
SELECT ttl FROM dlock.leases WHERE name = 'report';

-- release: compare-and-delete. Wrong token: false, nothing changes.
SELECT dlock.release('report', 2) AS wrong_token;
SELECT state FROM dlock.leases WHERE name = 'report';
SELECT dlock.release('report', 1) AS released;
SELECT dlock.release('report', 1) AS released_twice;
SELECT state, released_at IS NOT NULL AS has_released_at FROM dlock.leases WHERE name = 'report';
SELECT dlock.get('report') IS NULL AS nobody_holds_it;

-- Renew after release is never an upsert: LD002, and the lease stays released.
SELECT regress.outcome($$SELECT dlock.renew('report', 1)$$);
SELECT state FROM dlock.leases WHERE name = 'report';

-- A released lease is granted again with a new, larger token.
SELECT token, owner FROM dlock.try_acquire('report', interval '2 min', 'other');
SELECT dlock.release('report', 2);

-- Expiry and takeover, on the server clock (expired explicitly, so that
-- nothing waits for the clock).
SELECT token FROM dlock.try_acquire('short', interval '1 min', 'alice');
SELECT regress.expire('short');
SELECT state, valid_for FROM dlock.leases WHERE name = 'short';
SELECT dlock.get('short') IS NULL AS expired_is_not_held;
SELECT regress.outcome($$SELECT dlock.renew('short', 3)$$) AS renew_expired;
SELECT dlock.release('short', 3) AS release_expired;
SELECT token, owner FROM dlock.try_acquire('short', interval '5 s', 'bob');
-- The old holder's token is dead: renew raises LD002, release is false,
-- and neither touches bob's grant.
SELECT regress.outcome($$SELECT dlock.renew('short', 3)$$) AS renew_taken;
SELECT dlock.release('short', 3) AS release_taken;
SELECT token, owner, state FROM dlock.leases WHERE name = 'short';
-- alice re-acquiring is a different owner now: busy.
SELECT dlock.try_acquire('short', interval '5 s', 'alice') IS NULL AS alice_busy;
-- A token never granted for this lease.
SELECT regress.outcome($$SELECT dlock.renew('short', 999)$$) AS renew_unknown;
SELECT regress.outcome($$SELECT dlock.renew('no-such-lease', 1)$$) AS renew_missing;
SELECT dlock.release('no-such-lease', 1) AS release_missing;

-- An expired lease re-acquired by its own owner gets a new token: the old
-- grant ended, and its token may already have been used against storage.
SELECT token FROM dlock.try_acquire('mine', interval '1 min', 'carol');
SELECT regress.expire('mine');
SELECT token FROM dlock.try_acquire('mine', interval '5 s', 'carol');

-- Expiry is measured from the call, never from the transaction start: a
-- lease acquired in a transaction that began a while ago still gets its
-- full TTL.
BEGIN;
SELECT pg_sleep(0.3);
SELECT acquired_at - now() >= interval '0.3 s' AS measured_from_call,
       expires_at - acquired_at AS granted_for,
       valid_for > interval '50 s' AS full_ttl_left
  FROM dlock.try_acquire('old-transaction', interval '1 min');
COMMIT;
SELECT state FROM dlock.leases WHERE name = 'old-transaction';

-- acquire: free lease at once; busy lease until the timeout (55P03);
-- a holder whose lease expires while we wait (we win, with a larger token).
SELECT token FROM dlock.acquire('queue', interval '5 min', interval '1 s', 'dave');
SELECT regress.outcome($$SELECT dlock.acquire('queue', '5 s', '150 ms', 'erin')$$) AS timed_out;
-- frank's short lease runs out while grace waits (its 300 ms are a real
-- wait here, but only its lower bound is asserted: never before expiry).
SELECT token, expires_at AS frank_expires
  FROM dlock.try_acquire('soon-free', interval '300 ms', 'frank') \gset
SELECT :token AS frank_token;
SELECT token, owner, acquired_at >= :'frank_expires' AS after_expiry
  FROM dlock.acquire('soon-free', interval '5 s', interval '1 min', 'grace');
-- timeout 0 is a single attempt.
SELECT regress.outcome($$SELECT dlock.acquire('queue', '5 s', '0 s', 'erin')$$) AS zero_timeout;
SELECT token FROM dlock.acquire('queue', interval '5 min', interval '0 s', 'dave');

-- statement_timeout (and cancel) interrupt the wait: 57014.
SET statement_timeout = '200ms';
\set VERBOSITY sqlstate
SELECT dlock.acquire('queue', interval '5 s', interval '10 s', 'erin');
-- The longest timeout waits too (its deadline does not overflow).
SELECT dlock.acquire('queue', interval '5 s', interval '106751991 days', 'erin');
\set VERBOSITY default
RESET statement_timeout;
SELECT owner FROM dlock.get('queue');

-- dlock.max_ttl caps every grant and renewal.
SET dlock.max_ttl = '1s';
SHOW dlock.max_ttl;
SELECT regress.outcome($$SELECT dlock.try_acquire('capped', '2 s')$$) AS above_max;
SELECT token FROM dlock.try_acquire('capped', interval '1 s');
SELECT regress.outcome($$SELECT dlock.renew('capped', 11, '1 min')$$) AS renew_above_max;
-- A lease granted before the cap was lowered keeps its TTL only within it.
SELECT regress.outcome($$SELECT dlock.renew('queue', 8)$$) AS renew_kept_ttl_above_max;
SELECT token, valid_for <= interval '1 s' AS capped FROM dlock.renew('queue', 8, interval '1 s');
RESET dlock.max_ttl;

-- One sequence: tokens grow across all leases, in grant order.
SELECT name, token, coalesce(nullif(owner, dlock.default_owner()), '(default)') AS owner
  FROM dlock.leases ORDER BY token;
SELECT last_value FROM dlock.token_seq;

-- An explicit owner acquiring again gets the same token and a later expiry
-- (a client whose reply was lost can retry safely), also by name.
SELECT token AS retry_token, acquired_at AS first_acquired, expires_at AS first_expires
  FROM dlock.try_acquire('retry', interval '2 min', owner => 'worker-1') \gset
SELECT token = :retry_token AS same_token, acquired_at = :'first_acquired' AS same_grant,
       expires_at > :'first_expires' AS extended,
       expires_at - acquired_at > interval '5 min' AS new_ttl_counted
  FROM dlock.try_acquire(ttl => interval '5 min', owner => 'worker-1', name => 'retry');
SELECT dlock.release('retry', :retry_token, owner => 'worker-1') AS released;
