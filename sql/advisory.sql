-- Advisory locks: dlock.key(), advisory_lock()/advisory_unlock(), and the
-- decoding in dlock.advisory_locks.
\set ECHO none
\i sql/setup/fresh_dlock.sql
\set ECHO all
SET client_min_messages = warning;

-- dlock.key: first 8 bytes of SHA-256 of the UTF-8 name, big-endian, signed.
-- Known answers (python3: struct.unpack('>q', hashlib.sha256(b'nightly-report').digest()[:8])).
SELECT dlock.key('nightly-report') AS nightly_report, dlock.key('a') AS a,
       dlock.key('ключ') AS cyrillic;
SELECT dlock.key('nightly-report') = ('x' || left(encode(sha256('nightly-report'::bytea), 'hex'), 16))::bit(64)::bigint
       AS same_as_sha256_in_sql;
SELECT dlock.key(NULL) IS NULL AS strict;
SELECT regress.outcome($$SELECT dlock.key('')$$) AS empty_name;
-- Two names hashtext() maps to the same 32-bit value get different keys.
SELECT hashtext('name-97514') = hashtext('name-293514') AS hashtext_collides,
       dlock.key('name-97514') <> dlock.key('name-293514') AS keys_differ;

-- Decoding: bigint keys and int4 pairs, as pg_advisory_lock takes them.
SELECT pg_advisory_lock(k) FROM unnest(ARRAY[0, 42, 4294967303, -1,
    -9223372036854775808, 9223372036854775807]::bigint[]) AS k;
SELECT pg_advisory_lock_shared(-1, 5), pg_advisory_lock(2147483647, -2147483648);
SELECT key_space, key, key1, key2, mode, granted, pid = pg_backend_pid() AS mine, blocked_by
  FROM dlock.advisory_locks ORDER BY key_space, key, key1;
SELECT pg_advisory_unlock_all();
SELECT count(*) AS left_over FROM dlock.advisory_locks WHERE pid = pg_backend_pid();

-- advisory_lock by name: the key is dlock.key(name), and the view knows
-- the name. Session locks stay until unlocked; xact locks until commit.
SELECT dlock.advisory_lock('reindex-orders') AS taken;
SELECT dlock.advisory_lock('reindex-orders', interval '0 s') AS taken_again;
SELECT name, key = dlock.key('reindex-orders') AS key_matches, mode, granted
  FROM dlock.advisory_locks WHERE pid = pg_backend_pid();
SELECT pg_try_advisory_lock(dlock.key('reindex-orders')) AS plain_function_agrees;
SELECT dlock.advisory_unlock('reindex-orders') AS one, dlock.advisory_unlock('reindex-orders') AS two,
       pg_advisory_unlock(dlock.key('reindex-orders')) AS three;
SELECT dlock.advisory_unlock('reindex-orders') AS not_held;
SELECT dlock.advisory_lock('report', NULL, shared => true) AS shared_taken;
SELECT mode FROM dlock.advisory_locks WHERE pid = pg_backend_pid();
SELECT dlock.advisory_unlock('report', shared => true) AS shared_released;
BEGIN;
SELECT dlock.advisory_lock('migration', interval '1 s', xact => true) AS xact_taken;
SELECT count(*) AS held_in_transaction FROM dlock.advisory_locks WHERE name = 'migration';
COMMIT;
SELECT count(*) AS held_after_commit FROM dlock.advisory_locks WHERE name = 'migration';
-- lock_timeout is restored after a bounded wait.
SHOW lock_timeout;
SELECT dlock.advisory_lock('restore-check', interval '50 ms') AS taken;
SHOW lock_timeout;
SELECT dlock.advisory_unlock('restore-check');

-- Bad input.
SELECT regress.outcome($$SELECT dlock.advisory_lock(NULL)$$) AS null_name;
SELECT regress.outcome($$SELECT dlock.advisory_lock('')$$) AS empty_name;
SELECT regress.outcome($$SELECT dlock.advisory_lock('x', '-1 s')$$) AS negative_timeout;
SELECT regress.outcome($$SELECT dlock.advisory_lock('x', NULL, NULL)$$) AS null_shared;
SELECT regress.outcome($$SELECT dlock.advisory_unlock(NULL)$$) AS unlock_null;
SELECT count(*) AS nothing_held FROM dlock.advisory_locks WHERE pid = pg_backend_pid();
SELECT name FROM dlock.advisory_names ORDER BY name;
