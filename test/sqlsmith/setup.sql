-- What test/sqlsmith/run.sh gives sqlsmith to work on, run as the role
-- smith: leases of every kind and state, fenced writes, a protected table,
-- advisory locks. sqlsmith reads columns of these tables and views into
-- the arguments of dlock's functions.
SET client_min_messages = warning;

-- Exclusive leases: held, with lock-delay, max_hold and min_hold, released,
-- and one whose second of ttl has run out by the time sqlsmith reads it.
SELECT dlock.try_acquire('job-' || i, '1 hour', 'worker-' || i)
  FROM generate_series(1, 5) AS i;
SELECT dlock.try_acquire('delayed', '10 minutes', 'worker-d',
                         lock_delay => '1 minute', max_hold => '20 minutes',
                         min_hold => '5 minutes');
SELECT dlock.release('job-5', (dlock.get('job-5')).token, 'worker-5');
SELECT dlock.try_acquire('gone', '1 second', 'worker-g');

-- A shared lease with three readers, a semaphore of three with two holders,
-- a multi-lease.
SELECT dlock.try_acquire('catalog', '1 hour', 'reader-' || i, shared => true)
  FROM generate_series(1, 3) AS i;
SELECT dlock.try_acquire('pool', '1 hour', 'slot-' || i, permits => 3)
  FROM generate_series(1, 2) AS i;
SELECT * FROM dlock.try_acquire_all('{"a","b","c"}', '1 hour', 'batch');

-- A table written with fenced_update, and one whose trigger fences every
-- writer.
CREATE TABLE reports (
  day date PRIMARY KEY,
  status text,
  payload jsonb,
  fence_token bigint
);
INSERT INTO reports
  SELECT DATE '2026-11-01' + i, 'new', jsonb_build_object('n', i), NULL
    FROM generate_series(0, 29) AS i;
SELECT dlock.fenced_update('reports', (dlock.get('job-1')).token,
                           '{"status": "done"}', '{"day": "2026-11-02"}');

CREATE TABLE accounts (
  id integer PRIMARY KEY,
  balance numeric(10, 2) NOT NULL DEFAULT 0,
  fence_token bigint NOT NULL DEFAULT 0
);
INSERT INTO accounts (id, balance) SELECT i, i * 10 FROM generate_series(1, 20) AS i;
SELECT dlock.protect('accounts');
UPDATE accounts SET balance = 5, fence_token = (dlock.get('job-2')).token
 WHERE id = 1;

-- Fences without a token column, and a session's advisory lock (ended
-- with the session, but its name stays in dlock.advisory_names).
SELECT dlock.fence('bucket-' || i, (dlock.get('job-3')).token)
  FROM generate_series(1, 3) AS i;
SELECT dlock.advisory_lock('nightly');

-- Values at the edges of what dlock's arguments take, for sqlsmith to pass
-- as arguments: it draws them from the columns of the tables it reads.
CREATE TABLE edges (
  t text,
  n bigint,
  i integer,
  d interval,
  at timestamptz,
  j jsonb,
  names text[],
  target regclass,
  b boolean
);
INSERT INTO edges VALUES
  ('job-1', 1, 1, '0', 'infinity', '{}', '{}', 'reports', true),
  ('', 0, 0, '-1 second', '-infinity', '[]', '{job-1,job-1}', 'accounts', false),
  (repeat('n', 255), -1, -1, '1 microsecond', 'epoch', 'null',
   '{NULL}', 'reports_pkey', NULL),
  (repeat('n', 256), 9223372036854775807, 2147483647, '178000000 years',
   now(), '{"fence_token": 1}', '{a,b,c}', 0, true),
  ('with "quotes" and ''apostrophes''', -9223372036854775808, -2147483648,
   '-178000000 years', now() + '1 hour', '{"day": null}', '{catalog,pool}',
   'edges', false),
  ('ünïcödé', 1099511627776, 1000, '2147483647 days',
   '294276-12-31 23:59:59+00', '{"status": "x", "day": "2026-11-03"}',
   '{job-2,delayed,gone}', 'dlock.lease_store', true),
  (NULL, NULL, 1001, '1 mon -30 days 2147483647 hours', NULL,
   '{"balance": 1e400}', NULL, NULL, NULL);

-- The routines sqlsmith sees unless run.sh is given --all: dlock's, and a
-- few of PostgreSQL's that make or combine the values dlock takes. The
-- whole catalog has some 3,000 routines, among which dlock's 30 are called
-- by one statement in twenty. run.sh puts schema focus before pg_catalog in
-- sqlsmith's search_path, and sqlsmith reads pg_proc unqualified. (Doing the
-- same with pg_type, to hide the pseudo-types whose casts make many
-- statements fail to parse, makes sqlsmith crash.)
CREATE SCHEMA focus;
CREATE VIEW focus.pg_proc AS
  SELECT * FROM pg_catalog.pg_proc
   WHERE pronamespace OPERATOR(pg_catalog.=) 'dlock'::regnamespace
      OR (pronamespace OPERATOR(pg_catalog.=) 'pg_catalog'::regnamespace
          AND proname OPERATOR(pg_catalog.=) ANY (ARRAY[
            'now', 'clock_timestamp', 'make_interval', 'justify_interval',
            'concat', 'repeat', 'left', 'right', 'upper', 'chr', 'md5',
            'jsonb_build_object', 'to_jsonb', 'jsonb_set', 'array_append',
            'array_cat', 'string_to_array', 'int8pl', 'int8mi', 'int8um',
            'interval_um', 'interval_pl', 'interval_mul',
            'timestamptz_pl_interval', 'pg_backend_pid', 'txid_current',
            'count', 'max', 'min', 'array_agg', 'string_agg', 'bool_and',
            'abs', 'to_regclass', 'format', 'quote_ident',
            'pg_sleep']::name[]));
