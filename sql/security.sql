-- Security: a hostile search_path runs nothing when dlock's functions and
-- views are used; non-owners cannot write dlock's tables or draw tokens;
-- a pre-created dlock schema makes the install fail instead of adopting it.
\set ECHO none
\i sql/setup/fresh_dlock.sql
\set ECHO all
SET client_min_messages = warning;

CREATE ROLE regress_dlock_attacker;
CREATE SCHEMA hostile AUTHORIZATION regress_dlock_attacker;
CREATE TABLE hostile.ran (what text);
GRANT ALL ON hostile.ran TO PUBLIC;
SET ROLE regress_dlock_attacker;
-- Look-alikes of everything dlock's SQL uses; each records that it ran.
CREATE FUNCTION hostile.clock_timestamp() RETURNS timestamptz LANGUAGE sql AS
    $$ INSERT INTO hostile.ran VALUES ('clock_timestamp') RETURNING '2000-01-01'::timestamptz $$;
CREATE FUNCTION hostile.now() RETURNS timestamptz LANGUAGE sql AS
    $$ INSERT INTO hostile.ran VALUES ('now') RETURNING '2000-01-01'::timestamptz $$;
CREATE FUNCTION hostile.nextval(regclass) RETURNS bigint LANGUAGE sql AS
    $$ INSERT INTO hostile.ran VALUES ('nextval') RETURNING 1::bigint $$;
CREATE FUNCTION hostile.coalesce_like(interval, interval) RETURNS interval LANGUAGE sql AS
    $$ INSERT INTO hostile.ran VALUES ('interval +') RETURNING $1 $$;
CREATE FUNCTION hostile.text_eq(text, text) RETURNS boolean LANGUAGE sql AS
    $$ INSERT INTO hostile.ran VALUES ('text =') RETURNING true $$;
CREATE FUNCTION hostile.int8_eq(bigint, bigint) RETURNS boolean LANGUAGE sql AS
    $$ INSERT INTO hostile.ran VALUES ('bigint =') RETURNING true $$;
CREATE FUNCTION hostile.int8_le(bigint, bigint) RETURNS boolean LANGUAGE sql AS
    $$ INSERT INTO hostile.ran VALUES ('bigint <=') RETURNING true $$;
CREATE FUNCTION hostile.ts_gt(timestamptz, timestamptz) RETURNS boolean LANGUAGE sql AS
    $$ INSERT INTO hostile.ran VALUES ('timestamptz >') RETURNING true $$;
CREATE FUNCTION hostile.int4_eq(integer, integer) RETURNS boolean LANGUAGE sql AS
    $$ INSERT INTO hostile.ran VALUES ('integer =') RETURNING true $$;
CREATE FUNCTION hostile.hashtextextended(text, bigint) RETURNS bigint LANGUAGE sql AS
    $$ INSERT INTO hostile.ran VALUES ('hashtextextended') RETURNING 0::bigint $$;
CREATE OPERATOR hostile.= (LEFTARG = text, RIGHTARG = text, FUNCTION = hostile.text_eq);
CREATE OPERATOR hostile.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = hostile.int8_eq);
CREATE OPERATOR hostile.= (LEFTARG = integer, RIGHTARG = integer, FUNCTION = hostile.int4_eq);
CREATE OPERATOR hostile.<= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = hostile.int8_le);
CREATE OPERATOR hostile.> (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = hostile.ts_gt);
RESET ROLE;

CREATE TABLE guarded (id integer PRIMARY KEY, v text, fence_token bigint);
INSERT INTO guarded VALUES (1, 'a', NULL);
CREATE TABLE results (step text, outcome text);

-- Every dlock function and view, with the hostile schema first on the path
-- (even before pg_catalog). Results are stored, not compared, here.
SET search_path = hostile, pg_catalog, public;
INSERT INTO results SELECT 'try_acquire', (dlock.try_acquire('sec', '1 min', 'me')).token::text;
INSERT INTO results SELECT 'acquire', (dlock.acquire('sec2', '1 min', '1 s', 'me', '1 s', '1 min')).token::text;
INSERT INTO results SELECT 'renew', (dlock.renew('sec', (SELECT token FROM dlock.lease_store WHERE name OPERATOR(pg_catalog.=) 'sec'))).token::text;
INSERT INTO results SELECT 'assert_held', 'held'
  FROM dlock.assert_held('sec', (SELECT token FROM dlock.lease_store WHERE name OPERATOR(pg_catalog.=) 'sec'));
INSERT INTO results SELECT 'fenced_update', dlock.fenced_update('public.guarded', (SELECT token FROM dlock.lease_store WHERE name OPERATOR(pg_catalog.=) 'sec'), '{"v": "b"}', '{"id": 1}')::text;
INSERT INTO results SELECT 'fence', dlock.fence('sec-resource', (SELECT token FROM dlock.lease_store WHERE name OPERATOR(pg_catalog.=) 'sec'))::text;
INSERT INTO results SELECT 'protect', 'installed' FROM dlock.protect('public.guarded');
UPDATE public.guarded SET v = 'c';
INSERT INTO results SELECT 'protected update', v FROM public.guarded;
INSERT INTO results SELECT 'get', (dlock.get('sec')).owner;
INSERT INTO results SELECT 'leases', (count(*) OPERATOR(pg_catalog.>) 0)::text FROM dlock.leases;
INSERT INTO results SELECT 'advisory_lock', dlock.advisory_lock('sec-adv', '1 s')::text;
INSERT INTO results SELECT 'advisory_locks', count(*)::text FROM dlock.advisory_locks;
INSERT INTO results SELECT 'lock_waits', count(*)::text FROM dlock.lock_waits;
INSERT INTO results SELECT 'advisory_unlock', dlock.advisory_unlock('sec-adv')::text;
INSERT INTO results SELECT 'key', dlock.key('sec')::text;
INSERT INTO results SELECT 'release', dlock.release('sec', (SELECT token FROM dlock.lease_store WHERE name OPERATOR(pg_catalog.=) 'sec'))::text;
INSERT INTO results SELECT 'release_all', dlock.release_all('me')::text;
INSERT INTO results SELECT 'force_release', (dlock.force_release('sec2', 'test') IS NULL)::text;
INSERT INTO results SELECT 'sweep', (dlock.sweep('1 h') OPERATOR(pg_catalog.>=) 0)::text;
INSERT INTO results SELECT 'unprotect', 'removed' FROM dlock.unprotect('public.guarded');
RESET search_path;

SELECT step, outcome ~ '^[0-9]+$' AS is_number, outcome FROM results
 WHERE step NOT IN ('try_acquire', 'acquire', 'renew', 'key', 'fence') OR outcome !~ '^[0-9]+$';
SELECT count(*) AS numeric_results FROM results WHERE step IN ('try_acquire', 'acquire', 'renew', 'key', 'fence') AND outcome ~ '^-?[0-9]+$';
-- Nothing hostile ran.
SELECT what, count(*) AS hostile_calls FROM hostile.ran GROUP BY what;

-- Installing and updating with the hostile schema first on the path (the
-- extension is then recorded in that schema, and PostgreSQL runs the
-- scripts with it first) runs nothing hostile either: the scripts pin
-- search_path to pg_catalog, pg_temp for themselves, and leave the
-- session's search_path as it was.
SET search_path = hostile, pg_catalog, public;
DROP EXTENSION dlock;
CREATE EXTENSION dlock;
DROP EXTENSION dlock;
CREATE EXTENSION dlock VERSION '0.1.0';
ALTER EXTENSION dlock UPDATE;
SHOW search_path;
RESET search_path;
SELECT extversion, extnamespace::regnamespace AS recorded_in FROM pg_extension WHERE extname = 'dlock';
SELECT count(*) AS hostile_calls_during_install FROM hostile.ran;
DROP EXTENSION dlock;
CREATE EXTENSION dlock;

-- Non-owners read dlock's tables but cannot write them or draw tokens.
GRANT USAGE ON SCHEMA regress TO regress_dlock_attacker;
SET ROLE regress_dlock_attacker;
SELECT regress.outcome($$INSERT INTO dlock.lease_store (name, token, acquired_at, expires_at, ttl, acquired_by, owner) VALUES ('x', 1, now(), now(), '1 s', 'x', 'x')$$) AS insert_leases;
SELECT regress.outcome($$UPDATE dlock.lease_store SET token = 1$$) AS update_leases;
SELECT regress.outcome($$DELETE FROM dlock.fences$$) AS delete_fences;
SELECT regress.outcome($$INSERT INTO dlock.token_epoch VALUES (true, 1, 1, 1)$$) AS insert_epoch;
SELECT regress.outcome($$INSERT INTO dlock.advisory_names VALUES (1, 'x')$$) AS insert_names;
SELECT regress.outcome($$SELECT nextval('dlock.token_seq')$$) AS draw_token;
SELECT regress.outcome($$SELECT setval('dlock.token_seq', 1)$$) AS rewind_tokens;
SELECT regress.outcome($$SELECT dlock.force_release('sec', 'x')$$) AS force_release;
SELECT regress.outcome($$SELECT dlock.sweep()$$) AS sweep;
SELECT count(*) >= 0 AS can_read_leases FROM dlock.leases;
RESET ROLE;

-- A dlock schema created beforehand (here by an unprivileged role) makes
-- CREATE EXTENSION fail; nothing is adopted.
DROP EXTENSION dlock;
CREATE SCHEMA dlock AUTHORIZATION regress_dlock_attacker;
SELECT regress.outcome('CREATE EXTENSION dlock') AS install_over_foreign_schema;
SELECT count(*) AS extension_rows FROM pg_extension WHERE extname = 'dlock';
DROP SCHEMA dlock;
CREATE EXTENSION dlock;
SELECT nspowner = (SELECT oid FROM pg_roles WHERE rolname = current_user) AS schema_owned_by_installer
  FROM pg_namespace WHERE nspname = 'dlock';

DROP TABLE guarded, results;
DROP SCHEMA hostile CASCADE;
DROP OWNED BY regress_dlock_attacker;
DROP ROLE regress_dlock_attacker;
