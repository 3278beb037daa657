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
  FROM unnest(ARRAY['0.1.0', '0.2.0', '0.3.0']) AS v;

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

-- The library serves a database whose SQL objects are still at 0.3.0 until
-- it is updated, except sweep, which needs dlock.lease_state (55000 and a
-- hint to update, not a missing function).
DROP EXTENSION dlock;
CREATE EXTENSION dlock VERSION '0.3.0';
SELECT count(*) AS granted FROM dlock.try_acquire('old-objects', '1 min', 'w');
SELECT dlock.release_all('w') AS released_all;
SELECT code, hint FROM regress.error_of('SELECT dlock.sweep()');
ALTER EXTENSION dlock UPDATE;
SELECT dlock.sweep('0 s') AS swept;
