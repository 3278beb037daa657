-- dlock 0.1.0 -> 0.2.0: fencing. Storage that rejects a stale holder's
-- write (fenced_update, fence, protect), assert_held, and tokens that keep
-- growing across WAL timelines and restores.
\echo Use "ALTER EXTENSION dlock UPDATE TO '0.2.0'" to load this file. \quit

-- The history (cluster, WAL timeline) tokens were last issued on. When a
-- grant finds itself on another one (a promoted standby, point-in-time
-- recovery), or finds no record while tokens have been issued (a restored
-- dump), the token sequence first jumps to a new epoch, above any token the
-- old history may have issued. Not dumped, so a restored database always
-- starts a new epoch.
CREATE TABLE dlock.token_epoch (
    single_row        boolean PRIMARY KEY DEFAULT true CHECK (single_row),
    system_identifier bigint  NOT NULL,
    timeline          integer NOT NULL,
    database          oid     NOT NULL
);
COMMENT ON TABLE dlock.token_epoch IS
    'The cluster, WAL timeline and database fencing tokens were last issued on. Written only by dlock''s functions.';
-- A database upgraded from 0.1.0 that has issued tokens did so on this
-- history. A new install (also the one pg_restore makes before restoring
-- the sequence) records nothing: its first grant records the history, and
-- jumps first if the sequence was restored with tokens already issued.
INSERT INTO dlock.token_epoch (system_identifier, timeline, database)
SELECT s.system_identifier, c.timeline_id, d.oid
  FROM pg_catalog.pg_control_system() AS s, pg_catalog.pg_control_checkpoint() AS c,
       pg_catalog.pg_database AS d
 WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()
   AND (SELECT q.is_called FROM dlock.token_seq AS q);

-- Highest token accepted per resource by dlock.fence().
CREATE TABLE dlock.fences (
    resource  text        PRIMARY KEY,
    token     bigint      NOT NULL,
    fenced_at timestamptz NOT NULL
);
COMMENT ON TABLE dlock.fences IS
    'Highest fencing token dlock.fence() accepted per resource. Written only by dlock''s functions.';
SELECT pg_catalog.pg_extension_config_dump('dlock.fences', '');

GRANT SELECT ON dlock.fences TO PUBLIC;
-- Lets any role check that a token was issued (pg_sequence_last_value);
-- drawing tokens still needs dlock's functions.
GRANT SELECT ON SEQUENCE dlock.token_seq TO PUBLIC;

CREATE FUNCTION dlock.assert_held(name text, token bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'dlock_assert_held'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION dlock.assert_held(text, bigint) IS
    'Raises unless the lease is held with this token now; keeps any other write of the lease from happening until this transaction ends.';

CREATE FUNCTION dlock.fenced_update(target regclass, token bigint, changes jsonb, match jsonb,
                                    fence_column name DEFAULT 'fence_token')
RETURNS bigint
AS 'MODULE_PATHNAME', 'dlock_fenced_update'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION dlock.fenced_update(regclass, bigint, jsonb, jsonb, name) IS
    'UPDATE target SET changes, fence_column = token WHERE match AND fence_column <= token; rows updated, or SQLSTATE LD001 if only rows with a higher fence match.';

CREATE FUNCTION dlock.fence(resource text, token bigint)
RETURNS bigint
AS 'MODULE_PATHNAME', 'dlock_fence'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION dlock.fence(text, bigint) IS
    'Accepts token for resource if it is at least the highest accepted before (and records it); SQLSTATE LD001 otherwise. Locks the resource until commit.';

CREATE FUNCTION dlock.fence_guard()
RETURNS trigger
AS 'MODULE_PATHNAME', 'dlock_fence_guard'
LANGUAGE C;
COMMENT ON FUNCTION dlock.fence_guard() IS
    'Trigger installed by dlock.protect(): refuses to lower a row''s fence column (LD001) or to set a token never issued (LD003).';

CREATE FUNCTION dlock.protect(target regclass, fence_column name DEFAULT 'fence_token')
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    column_type regtype;
BEGIN
    IF target IS NULL OR fence_column IS NULL THEN
        RAISE EXCEPTION 'target and fence_column must not be NULL'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT a.atttypid INTO column_type
      FROM pg_catalog.pg_attribute AS a
     WHERE a.attrelid OPERATOR(pg_catalog.=) target
       AND a.attname OPERATOR(pg_catalog.=) fence_column
       AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column "%" of relation % does not exist', fence_column, target
            USING ERRCODE = 'undefined_column';
    END IF;
    IF column_type OPERATOR(pg_catalog.<>) 'pg_catalog.int8'::pg_catalog.regtype THEN
        RAISE EXCEPTION 'fence column "%" must be of type bigint', fence_column
            USING ERRCODE = 'datatype_mismatch', DETAIL = pg_catalog.format('It is of type %s.', column_type);
    END IF;
    EXECUTE pg_catalog.format(
        'CREATE OR REPLACE TRIGGER dlock_protect BEFORE INSERT OR UPDATE ON %s '
        'FOR EACH ROW EXECUTE FUNCTION dlock.fence_guard(%L)', target, fence_column);
END
$$;
COMMENT ON FUNCTION dlock.protect(regclass, name) IS
    'Installs trigger dlock_protect on target: no INSERT or UPDATE may lower fence_column or set a token never issued.';

CREATE FUNCTION dlock.unprotect(target regclass)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF target IS NULL THEN
        RAISE EXCEPTION 'target must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS dlock_protect ON %s', target);
END
$$;
COMMENT ON FUNCTION dlock.unprotect(regclass) IS
    'Removes the trigger dlock.protect() installed on target.';
