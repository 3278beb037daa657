-- A lease's state has one definition, src/core's lease_state(), which SQL
-- reaches through dlock.lease_state(): the views and the sweep judge a
-- lease exactly as the lease functions do, up to the microsecond.
\set ECHO none
\i sql/setup/fresh_dlock.sql
\set ECHO all
SET client_min_messages = warning;

-- At the edges: expiry is exclusive (a lease expiring now is no longer
-- held), and so is the end of the lock-delay (free from that instant).
SELECT at - timestamptz '2026-01-01 12:00:00+00' AS at_minus_expiry,
       dlock.lease_state(NULL, '2026-01-01 12:00:00+00', '0', at) AS no_delay,
       dlock.lease_state(NULL, '2026-01-01 12:00:00+00', '1 s', at) AS one_second_delay,
       dlock.lease_state('2026-01-01 11:00:00+00', '2026-01-01 12:00:00+00', '1 s', at) AS released
  FROM unnest(ARRAY[timestamptz '2026-01-01 11:59:59.999999+00',
                    '2026-01-01 12:00:00+00',
                    '2026-01-01 12:00:00.999999+00',
                    '2026-01-01 12:00:01+00']) AS at;
-- NULL expiry or time: NULL; NULL lock-delay: none.
SELECT dlock.lease_state(NULL, NULL, '0', now()) IS NULL AS no_expiry,
       dlock.lease_state(NULL, now(), '0', NULL) IS NULL AS no_time,
       dlock.lease_state(NULL, '2026-01-01 12:00:00+00', NULL, '2026-01-01 12:00:00+00') AS no_delay;
-- Infinite times and huge lock-delays saturate instead of overflowing: a
-- lock-delay reaching past the end of time keeps the lease in it.
SELECT dlock.lease_state(NULL, '2026-01-01', '100000000 days', '2026-06-01') AS delay_past_the_end,
       dlock.lease_state(NULL, 'infinity', '1 day', '2026-06-01') AS expires_at_infinity,
       dlock.lease_state(NULL, '-infinity', '-1 day', '2026-06-01') AS expired_at_minus_infinity;
-- Any interval gets an answer, even one beyond the microsecond range.
SELECT dlock.lease_state(NULL, now(), '2147483647 months 2147483647 days', now()) AS huge_delay,
       dlock.lease_state(NULL, now(), '-2147483648 months -2147483648 days', now()) AS huge_negative_delay;
-- A lock-delay is an exact duration, as everywhere in dlock: a day is
-- 24 hours even across a daylight-saving change (calendar arithmetic would
-- say expired here).
SET TimeZone = 'America/New_York';
SELECT dlock.lease_state(NULL, '2026-03-07 12:00:00', '1 day', '2026-03-08 12:30:00') AS exact_day,
       timestamptz '2026-03-07 12:00:00' + interval '1 day' < timestamptz '2026-03-08 12:30:00'
           AS calendar_day_would_be_over;
RESET TimeZone;

-- The lease functions follow the same rule: in its lock-delay a lease is
-- busy, once expired it is free; get() returns only a held lease.
SELECT token AS t FROM dlock.try_acquire('edge', interval '1 h', 'a', lock_delay => interval '1 h') \gset
SELECT state, dlock.get('edge') IS NOT NULL AS get_sees_it FROM dlock.leases WHERE name = 'edge';
SELECT regress.expire('edge');
SELECT state, dlock.get('edge') IS NULL AS get_sees_none,
       dlock.try_acquire('edge', interval '1 h', 'b') IS NULL AS busy
  FROM dlock.leases WHERE name = 'edge';
SELECT regress.expire('edge', past_delay => true);
SELECT state FROM dlock.leases WHERE name = 'edge';
SELECT owner, token > :t AS new_token FROM dlock.try_acquire('edge', interval '1 h', 'b');
SELECT state FROM dlock.leases WHERE name = 'edge';
SELECT dlock.release('edge', token) AS released FROM dlock.leases WHERE name = 'edge';
SELECT state FROM dlock.leases WHERE name = 'edge';

-- Every row of the view is judged by dlock.lease_state at one instant.
SELECT count(*) AS rows,
       count(*) FILTER (WHERE l.state = dlock.lease_state(s.released_at, s.expires_at, s.lock_delay, now())) AS agree
  FROM dlock.leases AS l JOIN dlock.lease_store AS s USING (name);
