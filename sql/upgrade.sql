-- Every upgrade path gives the same objects as a fresh install of the
-- default version from its own full script; DROP EXTENSION leaves nothing
-- behind.
\set ECHO none
\i sql/setup/fresh_dlock.sql
\set ECHO all
SET client_min_messages = warning;

-- Each member object of the extension, with what defines it: function
-- definitions, table columns, constraints, indexes, view queries, sequence
-- settings, comments and privileges.
CREATE FUNCTION regress.dlock_objects() RETURNS TABLE (object text, definition text)
LANGUAGE sql AS $$
SELECT pg_describe_object(d.classid, d.objid, 0),
       concat_ws(' | ',
           CASE d.classid
               WHEN 'pg_proc'::regclass THEN
                   (SELECT pg_get_functiondef(p.oid) || coalesce(p.proacl::text, '')
                      FROM pg_proc p WHERE p.oid = d.objid)
               WHEN 'pg_class'::regclass THEN
                   (SELECT c.relkind::text || coalesce(c.relacl::text, '') || coalesce(array_to_string(c.reloptions, ','), '')
                           || coalesce(pg_get_viewdef(c.oid), '')
                           || coalesce((SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
                                                          || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
                                                          || coalesce(' default ' || pg_get_expr(ad.adbin, ad.adrelid), ''),
                                                          ', ' ORDER BY a.attnum)
                                          FROM pg_attribute a
                                          LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
                                         WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), '')
                           || coalesce((SELECT string_agg(pg_get_constraintdef(k.oid), ', ' ORDER BY k.conname)
                                          FROM pg_constraint k WHERE k.conrelid = c.oid), '')
                           || coalesce((SELECT string_agg(pg_get_indexdef(i.indexrelid), ', ' ORDER BY i.indexrelid::regclass::text)
                                          FROM pg_index i WHERE i.indrelid = c.oid), '')
                           || coalesce((SELECT concat_ws(',', s.seqtypid::regtype, s.seqstart, s.seqincrement, s.seqmax,
                                                         s.seqmin, s.seqcache, s.seqcycle)
                                          FROM pg_sequence s WHERE s.seqrelid = c.oid), '')
                      FROM pg_class c WHERE c.oid = d.objid)
               WHEN 'pg_type'::regclass THEN format_type(d.objid, NULL)
               WHEN 'pg_namespace'::regclass THEN
                   (SELECT coalesce(n.nspacl::text, '') FROM pg_namespace n WHERE n.oid = d.objid)
           END,
           obj_description(d.objid, (SELECT relname FROM pg_class WHERE oid = d.classid)),
           (SELECT 'dumped' FROM pg_extension e2
             WHERE e2.extname = 'dlock' AND d.objid = ANY (e2.extconfig)))
  FROM pg_depend d
  JOIN pg_extension e ON e.oid = d.refobjid AND d.refclassid = 'pg_extension'::regclass
 WHERE e.extname = 'dlock' AND d.deptype = 'e'
$$;

CREATE TABLE regress.upgraded (path text, object text, definition text);

-- Every older version, updated to the default one.
CREATE FUNCTION regress.update_from(version text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    DROP EXTENSION dlock;
    EXECUTE format('CREATE EXTENSION dlock VERSION %L', version);
    ALTER EXTENSION dlock UPDATE;
    INSERT INTO regress.upgraded SELECT 'from ' || version, * FROM regress.dlock_objects();
    RETURN (SELECT extversion FROM pg_extension WHERE extname = 'dlock');
END $$;
SELECT v AS from_version, regress.update_from(v) AS updated_to
  FROM unnest(ARRAY['0.1.0', '0.2.0', '0.3.0', '0.4.0', '0.5.0', '0.6.0', '0.7.0', '0.8.0']) AS v;

DROP EXTENSION dlock;
-- Nothing is left behind: no schema, no object, no trigger function.
SELECT count(*) AS schemas FROM pg_namespace WHERE nspname = 'dlock';
SELECT count(*) AS functions FROM pg_proc WHERE probin = '$libdir/dlock';

CREATE EXTENSION dlock;
SELECT extversion FROM pg_extension WHERE extname = 'dlock';

-- Differences from a fresh install, in either direction, per path: none.
SELECT p.path, d.side, d.object
  FROM (SELECT DISTINCT path FROM regress.upgraded) AS p(path),
  LATERAL ((SELECT 'only after update' AS side, u.object, u.definition
              FROM regress.upgraded u WHERE u.path = p.path
            EXCEPT SELECT 'only after update', * FROM regress.dlock_objects())
           UNION ALL
           (SELECT 'only in fresh install', * FROM regress.dlock_objects()
            EXCEPT SELECT 'only in fresh install', u.object, u.definition
              FROM regress.upgraded u WHERE u.path = p.path)) AS d;
SELECT path, count(*) AS objects FROM regress.upgraded GROUP BY path ORDER BY path;

-- What was compared.
SELECT object FROM regress.dlock_objects() ORDER BY object;

-- The library needs the SQL objects of its own version: with older ones
-- each lease function raises 55000 with a hint to update, never a
-- missing column or function.
DROP EXTENSION dlock;
CREATE EXTENSION dlock VERSION '0.4.0';
SELECT code, hint FROM regress.error_of($$SELECT dlock.try_acquire('old-objects', '1 min', 'w')$$);
SELECT code, hint FROM regress.error_of($$SELECT dlock.release_all('w')$$);
SELECT code, hint FROM regress.error_of('SELECT dlock.sweep()');
ALTER EXTENSION dlock UPDATE;
SELECT dlock.sweep('0 s') AS swept;
-- 0.5.0 has every column, but renew_count still NOT NULL.
DROP EXTENSION dlock;
CREATE EXTENSION dlock VERSION '0.5.0';
SELECT code, hint FROM regress.error_of($$SELECT dlock.try_acquire('old-objects', '1 min', 'w')$$);
SELECT code, hint FROM regress.error_of('SELECT dlock.sweep()');
-- Rows written before 0.6.0 hold a renew_count of 0 where 0.6.0 writes
-- NULL: both read as 0, and the row's next grant stores NULL.
INSERT INTO dlock.lease_store (name, token, acquired_at, expires_at, ttl, acquired_by,
                               owner, renew_count, lock_delay)
VALUES ('from-0.5.0', nextval('dlock.token_seq'), clock_timestamp(),
        clock_timestamp() + interval '1 min', '1 min', current_user, 'w', 0, '0');
ALTER EXTENSION dlock UPDATE;
SELECT state, renew_count, lock_delay FROM dlock.leases WHERE name = 'from-0.5.0';
SELECT valid_for > '50 s' AS renewed
  FROM dlock.renew('from-0.5.0', (SELECT token FROM dlock.leases WHERE name = 'from-0.5.0'));
SELECT state, renew_count, lock_delay FROM dlock.leases WHERE name = 'from-0.5.0';
SELECT dlock.release('from-0.5.0', token) AS released FROM dlock.leases WHERE name = 'from-0.5.0';
SELECT count(*) AS granted FROM dlock.try_acquire('from-0.5.0', '1 min', 'w');
SELECT renew_count, lock_delay FROM dlock.lease_store WHERE name = 'from-0.5.0';
SELECT state, renew_count, lock_delay FROM dlock.leases WHERE name = 'from-0.5.0';
-- 0.6.0 lacks dlock.lease_holders: 55000 too. Its leases stay held
-- across the update, with the same token.
DROP EXTENSION dlock;
CREATE EXTENSION dlock VERSION '0.6.0';
SELECT code, hint FROM regress.error_of($$SELECT dlock.try_acquire('old-objects', '1 min', 'w')$$);
SELECT code, hint FROM regress.error_of('SELECT dlock.sweep()');
INSERT INTO dlock.lease_store (name, token, acquired_at, expires_at, ttl, acquired_by, owner)
VALUES ('from-0.6.0', nextval('dlock.token_seq'), clock_timestamp(),
        clock_timestamp() + interval '1 min', '1 min', current_user, 'w');
ALTER EXTENSION dlock UPDATE;
SELECT name, token, state, mode, permits, holders FROM dlock.leases WHERE name = 'from-0.6.0';
SELECT token FROM dlock.try_acquire('from-0.6.0', '1 min', 'w');
SELECT dlock.try_acquire('from-0.6.0', '1 min', 'other', shared => true) IS NULL AS busy;
-- 0.8.0 only adds the statistics: this library serves 0.7.0's objects as
-- they are, and a lease taken before the update stays held across it.
DROP EXTENSION dlock;
CREATE EXTENSION dlock VERSION '0.7.0';
SELECT token AS from_070_token FROM dlock.try_acquire('from-0.7.0', '1 min', 'w') \gset
SELECT dlock.try_acquire('from-0.7.0', '1 min', 'other') IS NULL AS busy;
ALTER EXTENSION dlock UPDATE;
SELECT token = :from_070_token AS same_token, state FROM dlock.leases WHERE name = 'from-0.7.0';
SELECT dlock.release('from-0.7.0', :from_070_token, 'w') AS released;
-- 0.9.0 adds lapses to the statistics: this library serves 0.8.0's
-- dlock.stats and dlock.stats_totals as they are (without the column)
-- until the update, which adds the column last, keeps what users granted
-- on the views and their views of them, and shows the lapses counted
-- before it. A lease taken before the update stays held across it.
DROP EXTENSION dlock;
CREATE EXTENSION dlock VERSION '0.8.0';
SELECT token AS from_080_token FROM dlock.try_acquire('from-0.8.0', '1 min', 'w') \gset
SELECT regress.expire('from-0.8.0');
SELECT token AS from_080_token FROM dlock.try_acquire('from-0.8.0', '1 min', 'other') \gset
CREATE VIEW regress.my_stats AS SELECT name, grants FROM dlock.stats;
REVOKE SELECT ON dlock.stats_totals FROM PUBLIC;
SELECT name, grants, takeovers, holders FROM dlock.stats WHERE name = 'from-0.8.0';
SELECT count(*) AS stats_columns FROM pg_attribute
 WHERE attrelid = 'dlock.stats'::regclass AND attnum > 0;
SELECT grants >= 2 AS totals_read FROM dlock.stats_totals;
ALTER EXTENSION dlock UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'dlock';
SELECT token = :from_080_token AS same_token, state FROM dlock.leases WHERE name = 'from-0.8.0';
SELECT name, grants, takeovers, holders, lapses FROM dlock.stats WHERE name = 'from-0.8.0';
SELECT attname FROM pg_attribute
 WHERE attrelid = 'dlock.stats'::regclass AND attnum > 0 ORDER BY attnum DESC LIMIT 2;
SELECT lapses >= 1 AS totals_lapses FROM dlock.stats_totals;
SELECT * FROM regress.my_stats WHERE name = 'from-0.8.0';
SELECT count(*) AS public_grants FROM pg_class, aclexplode(relacl) AS a
 WHERE oid = 'dlock.stats_totals'::regclass AND a.grantee = 0;
DROP VIEW regress.my_stats;
SELECT dlock.release('from-0.8.0', :from_080_token, 'other') AS released;

-- An update that replaces a function's signature (dlock.replace_function)
-- carries over what users granted and revoked on the old one, and the new
-- one's initial privileges stay dlock's own, so pg_dump still dumps the
-- users' changes.
DROP EXTENSION dlock;
CREATE EXTENSION dlock VERSION '0.4.0';
CREATE ROLE "regress App" NOLOGIN;
GRANT EXECUTE ON FUNCTION dlock.try_acquire(text, interval, text) TO "regress App" WITH GRANT OPTION;
REVOKE EXECUTE ON FUNCTION dlock.release(text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dlock.release(text, bigint) TO "regress App";
-- The views are replaced in place: a user's view on them and a revoke
-- on them stay.
CREATE VIEW regress.my_leases AS SELECT name, state FROM dlock.leases;
REVOKE SELECT ON dlock.lock_waits FROM PUBLIC;
-- A user's view on an old signature stops the update and is named.
CREATE VIEW regress.uses_old_release AS SELECT dlock.release('x', 1) AS released;
SELECT code, message, detail FROM regress.error_of('ALTER EXTENSION dlock UPDATE');
SELECT extversion FROM pg_extension WHERE extname = 'dlock';
DROP VIEW regress.uses_old_release;
ALTER EXTENSION dlock UPDATE;
SELECT p.oid::regprocedure AS function,
       CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END AS grantee,
       a.privilege_type, a.is_grantable
  FROM pg_proc AS p, aclexplode(p.proacl) AS a
 WHERE p.oid IN ('dlock.try_acquire'::regproc, 'dlock.release'::regproc)
   AND a.grantee <> p.proowner
 ORDER BY 1, 2;
SELECT count(*) AS init_privs_of_replaced
  FROM pg_init_privs
 WHERE objoid IN ('dlock.try_acquire'::regproc, 'dlock.release'::regproc);
SELECT obj_description('dlock.try_acquire'::regproc, 'pg_proc') LIKE 'Grants the lease%' AS commented;
SELECT count(*) AS my_leases FROM regress.my_leases;
SELECT has_table_privilege('regress App', 'dlock.lock_waits', 'SELECT') AS app_reads_lock_waits,
       has_table_privilege('regress App', 'dlock.leases', 'SELECT') AS app_reads_leases;
DROP VIEW regress.my_leases;
DROP EXTENSION dlock;
DROP ROLE "regress App";
