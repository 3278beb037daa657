-- How dlock stores leases: one row per name, written in place.
\set ECHO none
\i sql/setup/fresh_dlock.sql
\set ECHO all
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS amcheck;

-- Grants and releases `times` times the lease 'many-versions', in the
-- calling transaction, under one owner or a new owner each time; returns
-- the rows of dlock.lease_store inserted, updated, and updated heap-only.
-- (PostgreSQL 15's pg_stat_get_xact_* counters also hold earlier
-- transactions' counts not yet reported, so count the difference.)
CREATE FUNCTION pg_temp.cycles(times int, same_owner boolean,
                               OUT inserted bigint, OUT updated bigint,
                               OUT heap_only bigint)
LANGUAGE plpgsql AS $$
DECLARE
  t bigint;
  store oid := 'dlock.lease_store'::regclass;
  inserted_before bigint := pg_stat_get_xact_tuples_inserted(store);
  updated_before bigint := pg_stat_get_xact_tuples_updated(store);
  heap_only_before bigint := pg_stat_get_xact_tuples_hot_updated(store);
BEGIN
  FOR i IN 1..times LOOP
    t := (dlock.try_acquire('many-versions', '1 min',
                            CASE WHEN same_owner THEN 'versions' ELSE 'owner-' || i END)).token;
    PERFORM dlock.release('many-versions', t);
  END LOOP;
  inserted := pg_stat_get_xact_tuples_inserted(store) - inserted_before;
  updated := pg_stat_get_xact_tuples_updated(store) - updated_before;
  heap_only := pg_stat_get_xact_tuples_hot_updated(store) - heap_only_before;
END $$;

-- A lease's grants and releases update its row in place, heap-only while
-- its page has room. 200 grants and releases in one transaction leave
-- every row version in place until it commits, so the page fills and later
-- versions move to other pages with new index entries: the primary key
-- still finds the lease, and amcheck finds every row version indexed.
BEGIN;
SELECT inserted, updated, heap_only BETWEEN 1 AND 398 AS some_not_heap_only
  FROM pg_temp.cycles(200, true);
COMMIT;
SELECT token = (SELECT last_value FROM dlock.token_seq) AS latest_token, state
  FROM dlock.leases WHERE name = 'many-versions';
SELECT token = (SELECT last_value FROM dlock.token_seq) AS latest_token, owner
  FROM dlock.try_acquire('many-versions', interval '1 min', 'versions');
SELECT count(*) AS rows FROM dlock.lease_store WHERE name = 'many-versions';
SELECT bt_index_check('dlock.lease_store_pkey', heapallindexed => true);

-- Indexes someone added to dlock.lease_store are kept as an UPDATE keeps
-- them: a partial and an expression index get their entries, and an index
-- left not ready by a failed CREATE INDEX CONCURRENTLY is skipped.
SELECT dlock.release('many-versions', token) FROM dlock.leases WHERE name = 'many-versions';
SELECT count(*) AS granted FROM dlock.try_acquire('same-owner-1', '1 min', 'same-owner');
SELECT count(*) AS granted FROM dlock.try_acquire('same-owner-2', '1 min', 'same-owner');
CREATE UNIQUE INDEX CONCURRENTLY lease_store_owner_unique ON dlock.lease_store (owner);
SELECT indisready, indisvalid FROM pg_index
 WHERE indexrelid = 'dlock.lease_store_owner_unique'::regclass;
CREATE INDEX lease_store_held ON dlock.lease_store (owner) WHERE released_at IS NULL;
CREATE INDEX lease_store_owner_lower ON dlock.lease_store (lower(owner));
-- Owners change with every grant, so no version is heap-only.
BEGIN;
SELECT inserted, updated, heap_only FROM pg_temp.cycles(50, false);
COMMIT;
SELECT count(*) AS granted FROM dlock.try_acquire('many-versions', '1 min', 'last-owner');
SET enable_seqscan = off;
SELECT name FROM dlock.lease_store WHERE owner = 'last-owner' AND released_at IS NULL;
SELECT name FROM dlock.lease_store WHERE lower(owner) = 'last-owner';
RESET enable_seqscan;
SELECT bt_index_check(index, heapallindexed => true)
  FROM unnest(ARRAY['dlock.lease_store_pkey', 'dlock.lease_store_held',
                    'dlock.lease_store_owner_lower']::regclass[]) AS index;
DROP INDEX dlock.lease_store_owner_unique, dlock.lease_store_held,
           dlock.lease_store_owner_lower;
DROP EXTENSION amcheck;

-- A busy answer writes nothing: no transaction ID (so no WAL, no commit
-- to flush), no row lock and no gate held, however often it is asked.
SELECT count(*) AS granted FROM dlock.try_acquire('busy-reads', '1 min', 'holder');
BEGIN;
SELECT count(*) AS busy_nulls
  FROM generate_series(1, 3) AS i
 WHERE dlock.try_acquire('busy-reads', '1 min', 'other-' || i) IS NULL;
SELECT pg_current_xact_id_if_assigned() IS NULL AS no_xid,
       (SELECT count(*) FROM pg_locks
         WHERE pid = pg_backend_pid() AND locktype IN ('advisory', 'tuple', 'transactionid'))
           AS locks_held;
COMMIT;

-- Rows are small: a renew_count of 0 and unset terms are NULLs, which
-- take no room (dlock.leases shows a renew_count of 0).
CREATE ROLE regress_rows;
SET ROLE regress_rows;
SELECT count(*) AS granted
  FROM dlock.try_acquire('names-1000000-123456', '30 s', 'client-0');
RESET ROLE;
SELECT renew_count, lock_delay, max_hold, min_hold, forced_by, force_reason
  FROM dlock.lease_store WHERE name = 'names-1000000-123456';
SELECT renew_count, lock_delay FROM dlock.leases WHERE name = 'names-1000000-123456';
SELECT pg_column_size(s.*) AS row_bytes
  FROM dlock.lease_store AS s WHERE name = 'names-1000000-123456';
SELECT count(*) AS ended FROM dlock.force_release('names-1000000-123456', 'test over');
DROP ROLE regress_rows;

-- As services use leases, each grant and release in a transaction of its
-- own: 100 leases taken and released 20 times each. Their rows are
-- updated heap-only and old versions pruned, so they stay on the pages
-- their first grants filled.
CREATE TEMP TABLE hot_cycles (updated bigint, heap_only bigint, new_pages bigint);
DO $$
DECLARE
  store oid := 'dlock.lease_store'::regclass;
  pages_before bigint := pg_relation_size(store) / current_setting('block_size')::int;
  updated bigint := 0;
  heap_only bigint := 0;
  u bigint;
  h bigint;
  t bigint;
BEGIN
  FOR round IN 1..20 LOOP
    FOR i IN 1..100 LOOP
      FOR step IN 1..2 LOOP
        u := pg_stat_get_xact_tuples_updated(store);
        h := pg_stat_get_xact_tuples_hot_updated(store);
        IF step = 1 THEN
          t := (dlock.try_acquire('hot-' || i, '1 min', 'hot')).token;
        ELSE
          PERFORM dlock.release('hot-' || i, t);
        END IF;
        updated := updated + pg_stat_get_xact_tuples_updated(store) - u;
        heap_only := heap_only + pg_stat_get_xact_tuples_hot_updated(store) - h;
        COMMIT;
      END LOOP;
    END LOOP;
  END LOOP;
  INSERT INTO hot_cycles
  VALUES (updated, heap_only,
          pg_relation_size(store) / current_setting('block_size')::int - pages_before);
END $$;
SELECT * FROM hot_cycles;
