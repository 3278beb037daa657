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
DROP EXTENSION amcheck;
