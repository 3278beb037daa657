-- How dlock stores leases: one row per name, written in place.
SET client_min_messages = warning;

-- A lease's grants and releases update its row in place, heap-only while
-- its page has room. 200 grants and releases in one transaction leave
-- every row version in place until it commits, so the page fills and later
-- versions move to other pages with new index entries: the primary key
-- still finds the lease, and amcheck finds every row version indexed.
CREATE FUNCTION pg_temp.row_writes(OUT inserted bigint, OUT updated bigint,
                                    OUT heap_only bigint) LANGUAGE sql AS $$
  SELECT pg_stat_get_xact_tuples_inserted('dlock.lease_store'::regclass),
         pg_stat_get_xact_tuples_updated('dlock.lease_store'::regclass),
         pg_stat_get_xact_tuples_hot_updated('dlock.lease_store'::regclass) $$;
BEGIN;
-- (On PostgreSQL 15 these counters include earlier transactions' counts
-- not yet reported, so count from here.)
SELECT inserted AS inserted_before, updated AS updated_before,
       heap_only AS heap_only_before FROM pg_temp.row_writes() \gset
DO $$
DECLARE
  t bigint;
BEGIN
  FOR i IN 1..200 LOOP
    t := (dlock.try_acquire('many-versions', '1 min', 'versions')).token;
    PERFORM dlock.release('many-versions', t);
  END LOOP;
END $$;
SELECT inserted - :inserted_before AS inserted,
       updated - :updated_before AS updated,
       heap_only - :heap_only_before BETWEEN 1 AND 398 AS some_not_heap_only
  FROM pg_temp.row_writes();
COMMIT;
SELECT token = (SELECT last_value FROM dlock.token_seq) AS latest_token, state
  FROM dlock.leases WHERE name = 'many-versions';
SELECT token = (SELECT last_value FROM dlock.token_seq) AS latest_token, owner
  FROM dlock.try_acquire('many-versions', interval '1 min', 'versions');
SELECT count(*) AS rows FROM dlock.lease_store WHERE name = 'many-versions';
CREATE EXTENSION amcheck;
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
BEGIN;
SELECT inserted AS inserted_before, updated AS updated_before,
       heap_only AS heap_only_before FROM pg_temp.row_writes() \gset
-- Owners change with every grant, so no version is heap-only.
DO $$
DECLARE
  t bigint;
BEGIN
  FOR i IN 1..50 LOOP
    t := (dlock.try_acquire('many-versions', '1 min', 'owner-' || i)).token;
    PERFORM dlock.release('many-versions', t);
  END LOOP;
END $$;
SELECT inserted - :inserted_before AS inserted,
       updated - :updated_before AS updated,
       heap_only - :heap_only_before AS heap_only
  FROM pg_temp.row_writes();
COMMIT;
SELECT count(*) AS granted FROM dlock.try_acquire('many-versions', '1 min', 'last-owner');
SET enable_seqscan = off;
SELECT name FROM dlock.lease_store WHERE owner = 'last-owner' AND released_at IS NULL;
SELECT name FROM dlock.lease_store WHERE lower(owner) = 'last-owner';
RESET enable_seqscan;
SELECT bt_index_check(index, heapallindexed => true)
  FROM unnest(ARRAY['dlock.lease_store_pkey', 'dlock.lease_store_held',
                    'dlock.lease_store_owner_lower']::regclass[]) AS index;
DROP EXTENSION amcheck;
DROP INDEX dlock.lease_store_owner_unique, dlock.lease_store_held,
           dlock.lease_store_owner_lower;
