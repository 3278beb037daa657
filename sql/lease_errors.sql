-- Bad input: the documented SQLSTATE, and nothing changes.
\set ECHO none
\i sql/setup/fresh_dlock.sql
\set ECHO all
SET client_min_messages = warning;
SELECT count(*) AS rows_before, coalesce(pg_sequence_last_value('dlock.token_seq'), 0) AS seq_before
  FROM dlock.lease_store \gset
SELECT token FROM dlock.try_acquire('held', interval '1 min', 'holder') \gset

-- NULL where a value is required: 22004.
SELECT regress.outcome($$SELECT dlock.try_acquire(NULL, '1 s')$$) AS try_null_name;
SELECT regress.outcome($$SELECT dlock.try_acquire('x', NULL)$$) AS try_null_ttl;
SELECT regress.outcome($$SELECT dlock.acquire(NULL, '1 s', '1 s')$$) AS acquire_null_name;
SELECT regress.outcome($$SELECT dlock.acquire('x', NULL, '1 s')$$) AS acquire_null_ttl;
SELECT regress.outcome($$SELECT dlock.acquire('x', '1 s', NULL)$$) AS acquire_null_timeout;
SELECT regress.outcome($$SELECT dlock.renew(NULL, 1)$$) AS renew_null_name;
SELECT regress.outcome($$SELECT dlock.renew('held', NULL)$$) AS renew_null_token;
SELECT regress.outcome($$SELECT dlock.release(NULL, 1)$$) AS release_null_name;
SELECT regress.outcome($$SELECT dlock.release('held', NULL)$$) AS release_null_token;
SELECT regress.outcome($$SELECT dlock.get(NULL)$$) AS get_null_name;

-- Names: empty or over 255 bytes: 22023. 255 bytes (multibyte too) is fine.
SELECT regress.outcome($$SELECT dlock.try_acquire('', '1 s')$$) AS empty_name;
SELECT regress.outcome($$SELECT dlock.try_acquire(repeat('n', 256), '1 s')$$) AS long_name;
SELECT regress.outcome($$SELECT dlock.renew(repeat('n', 256), 1)$$) AS renew_long_name;
SELECT regress.outcome($$SELECT dlock.release('', 1)$$) AS release_empty_name;
SELECT regress.outcome($$SELECT dlock.get('')$$) AS get_empty_name;
SELECT octet_length(name) AS bytes, token IS NOT NULL AS granted
  FROM dlock.try_acquire(repeat('n', 255), interval '1 s');
SELECT regress.outcome($$SELECT dlock.try_acquire(repeat('é', 128), '1 s')$$) AS long_multibyte;
SELECT octet_length(name) AS bytes FROM dlock.try_acquire(repeat('é', 127), interval '1 s');

-- Owners: empty or over 255 bytes: 22023. NULL means the default owner.
SELECT regress.outcome($$SELECT dlock.try_acquire('x', '1 s', '')$$) AS empty_owner;
SELECT regress.outcome($$SELECT dlock.try_acquire('x', '1 s', repeat('o', 256))$$) AS long_owner;
SELECT regress.outcome($$SELECT dlock.acquire('x', '1 s', '1 s', '')$$) AS acquire_empty_owner;

-- TTL: zero, negative, above dlock.max_ttl (a month counts 30 days): 22023.
SELECT regress.outcome($$SELECT dlock.try_acquire('x', '0 s')$$) AS zero_ttl;
SELECT regress.outcome($$SELECT dlock.try_acquire('x', '-1 s')$$) AS negative_ttl;
SELECT regress.outcome($$SELECT dlock.try_acquire('x', '1 day -24 hours')$$) AS ttl_sums_to_zero;
SELECT regress.outcome($$SELECT dlock.try_acquire('x', '1 day 1 ms')$$) AS ttl_above_max;
SELECT regress.outcome($$SELECT dlock.try_acquire('x', '1 mon')$$) AS month_ttl;
SELECT regress.outcome($$SELECT dlock.try_acquire('x', '2147483647 days')$$) AS ttl_out_of_range;
SELECT regress.outcome($$SELECT dlock.acquire('x', '0 s', '1 s')$$) AS acquire_zero_ttl;
SELECT regress.outcome($$SELECT dlock.renew('held', 1, '0 s')$$) AS renew_zero_ttl;
SELECT regress.outcome($$SELECT dlock.renew('held', 1, '2 days')$$) AS renew_ttl_above_max;

-- Tokens that were never issued: LD003.
SELECT regress.outcome($$SELECT dlock.renew('held', -5)$$) AS renew_negative_token;
SELECT regress.outcome($$SELECT dlock.renew('held', 0)$$) AS renew_zero_token;

-- Timeout: negative: 22023.
SELECT regress.outcome($$SELECT dlock.acquire('x', '1 s', '-1 ms')$$) AS negative_timeout;

-- dlock.max_ttl is a superuser setting with a unit.
SELECT regress.outcome($$SET dlock.max_ttl = -1$$) AS max_ttl_negative;
SELECT setting, unit, context FROM pg_settings WHERE name = 'dlock.max_ttl';

-- Nothing above changed anything: same rows, same sequence, same holder.
SELECT count(*) - :rows_before AS new_rows,
       coalesce(pg_sequence_last_value('dlock.token_seq'), 0) - :seq_before AS tokens_drawn
  FROM dlock.lease_store;
SELECT token = :token AS same_holder, owner FROM dlock.get('held');

-- The glue reads lease_store by column number: the install script's
-- column order is part of the contract (upgrades may only append).
SELECT attnum, attname, atttypid::regtype
  FROM pg_attribute
 WHERE attrelid = 'dlock.lease_store'::regclass AND attnum > 0
 ORDER BY attnum;
