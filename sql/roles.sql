-- Leases belong to the role that acquired them; dlock_admin administers;
-- a database owner without superuser installs and updates dlock.
\set ECHO none
\i sql/setup/fresh_dlock.sql
\set ECHO all
SET client_min_messages = warning;

CREATE ROLE regress_alice;
CREATE ROLE regress_bob;
CREATE ROLE regress_carol IN ROLE regress_alice;  -- a member of alice
CREATE ROLE regress_ops IN ROLE dlock_admin;
GRANT USAGE ON SCHEMA regress TO regress_alice, regress_bob, regress_carol, regress_ops;
CREATE TABLE tokens (who text PRIMARY KEY, token bigint);
GRANT ALL ON tokens TO PUBLIC;

SET ROLE regress_alice;
INSERT INTO tokens SELECT 'alice', token FROM dlock.try_acquire('payroll', '1 h', 'payroll-worker');
SELECT acquired_by FROM dlock.leases WHERE name = 'payroll';
RESET ROLE;

-- bob knows the token (every role can read dlock.leases) but may not use it.
SET ROLE regress_bob;
SELECT regress.outcome($$SELECT dlock.renew('payroll', (SELECT token FROM tokens WHERE who = 'alice'))$$) AS bob_renew;
SELECT regress.outcome($$SELECT dlock.release('payroll', (SELECT token FROM tokens WHERE who = 'alice'))$$) AS bob_release;
SELECT regress.outcome($$SELECT dlock.assert_held('payroll', (SELECT token FROM tokens WHERE who = 'alice'))$$) AS bob_assert;
-- Using alice's owner name makes bob another owner: busy, not a retry.
SELECT dlock.try_acquire('payroll', '1 h', 'payroll-worker') IS NULL AS bob_retry_busy;
SELECT dlock.release_all('payroll-worker') AS bob_release_all;
-- A release by bob with a wrong token takes nothing (not even the lease's
-- gate, which would hold up alice's renewals).
BEGIN;
SELECT dlock.release('payroll', 999) AS wrong_token;
SELECT count(*) AS gates_held FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid();
COMMIT;
SELECT regress.outcome($$SELECT dlock.force_release('payroll', 'bob wants it')$$) AS bob_force;
RESET ROLE;
SELECT state, owner FROM dlock.leases WHERE name = 'payroll';

-- A member of alice acts for her, release_all included.
SET ROLE regress_carol;
SELECT token = (SELECT token FROM tokens WHERE who = 'alice') AS carol_renews
  FROM dlock.renew('payroll', (SELECT token FROM tokens WHERE who = 'alice'));
SELECT dlock.try_acquire('payroll-side', '1 h', 'payroll-worker') IS NOT NULL AS carol_side_lease;
RESET ROLE;
SET ROLE regress_alice;
SELECT dlock.try_acquire('payroll-extra', '1 h', 'payroll-worker') IS NOT NULL AS alice_extra_lease;
RESET ROLE;
SET ROLE regress_carol;
SELECT dlock.release_all('payroll-worker') AS carol_releases_her_and_alices_extra;
SELECT name, state FROM dlock.leases WHERE name LIKE 'payroll%' ORDER BY name;
RESET ROLE;
SET ROLE regress_alice;
INSERT INTO tokens SELECT 'alice2', token FROM dlock.try_acquire('payroll', '1 h', 'payroll-worker')
  ON CONFLICT DO NOTHING;
UPDATE tokens SET token = (SELECT token FROM dlock.lease_store WHERE name = 'payroll') WHERE who = 'alice';
RESET ROLE;

-- dlock_admin force-releases; alice's token is dead at once.
SET ROLE regress_ops;
SELECT owner FROM dlock.force_release('payroll', 'payroll-worker lost its network');
SELECT dlock.sweep(interval '1 day') >= 0 AS ops_can_sweep;
RESET ROLE;
SET ROLE regress_alice;
SELECT regress.outcome($$SELECT dlock.renew('payroll', (SELECT token FROM tokens WHERE who = 'alice'))$$)
       LIKE 'LD002: The lease was force-released by regress_ops: payroll-worker lost its network%' AS alice_renew_fails;
SELECT regress.outcome($$SELECT dlock.assert_held('payroll', (SELECT token FROM tokens WHERE who = 'alice'))$$)
       LIKE 'LD002%' AS alice_assert_fails;
RESET ROLE;
SET ROLE regress_bob;
SELECT token > (SELECT token FROM tokens WHERE who = 'alice') AS bob_takes_over
  FROM dlock.try_acquire('payroll', '1 h', 'bob-worker');
RESET ROLE;
SET ROLE regress_alice;
SELECT regress.outcome(format($$SELECT dlock.assert_held('payroll', %s)$$,
       (SELECT token FROM dlock.lease_store WHERE name = 'payroll'))) AS alice_on_bobs_grant;
RESET ROLE;

-- dlock_admin also releases another role's leases by owner.
SET ROLE regress_ops;
SELECT dlock.release_all('bob-worker') AS ops_release_all;
RESET ROLE;

-- A database owner without superuser installs dlock (trusted) and updates
-- it; the install gives it no write access to dlock's tables.
SELECT current_database() AS orig_db, current_user AS orig_user \gset
CREATE ROLE regress_dbowner LOGIN;
CREATE DATABASE regress_dlock_owned OWNER regress_dbowner;
\c regress_dlock_owned regress_dbowner
SET client_min_messages = warning;
SELECT rolsuper FROM pg_roles WHERE rolname = current_user;
CREATE EXTENSION dlock VERSION '0.1.0';
ALTER EXTENSION dlock UPDATE;
SELECT extversion, extowner::regrole FROM pg_extension WHERE extname = 'dlock';
SELECT token > 0 AS works FROM dlock.try_acquire('x', '1 min');
SELECT has_table_privilege('dlock.lease_store', 'INSERT') AS can_insert,
       has_table_privilege('dlock.lease_store', 'SELECT') AS can_select,
       has_function_privilege('dlock.force_release(text, text, bigint)', 'EXECUTE') AS can_force;
DROP EXTENSION dlock;
SELECT count(*) AS schemas_left FROM pg_namespace WHERE nspname = 'dlock';
-- A fresh install too.
CREATE EXTENSION dlock;
SELECT extversion FROM pg_extension WHERE extname = 'dlock';
SELECT token > 0 AS works FROM dlock.try_acquire('x', '1 min');
DROP EXTENSION dlock;
\c :orig_db :orig_user
DROP DATABASE regress_dlock_owned;
DROP ROLE regress_dbowner;
DROP TABLE tokens;
DROP OWNED BY regress_alice, regress_bob, regress_carol, regress_ops;
DROP ROLE regress_alice, regress_bob, regress_carol, regress_ops;

-- dlock_admin: an existing role of that name is adopted only if it
-- confers nothing of its own (else its powers would pass to every member
-- ops adds). Set dlock's own role aside for these cases.
DROP EXTENSION dlock;
ALTER ROLE dlock_admin RENAME TO regress_dlock_admin_kept;
CREATE TABLE regress.secrets (s text);
CREATE FUNCTION regress.not_dlocks() RETURNS int LANGUAGE sql RETURN 1;
-- A plain NOLOGIN role (as restored by pg_dumpall -g) is adopted.
CREATE ROLE dlock_admin NOLOGIN;
CREATE EXTENSION dlock;
SELECT has_function_privilege('dlock_admin', 'dlock.sweep(interval)', 'EXECUTE') AS adopted;
DROP EXTENSION dlock;
-- Anything it would confer makes the install fail, and nothing is installed.
CREATE FUNCTION pg_temp.install_over(how text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE how;
    RETURN regress.outcome('CREATE EXTENSION dlock');
END $$;
SELECT how, pg_temp.install_over(how) AS outcome
  FROM unnest(ARRAY['ALTER ROLE dlock_admin LOGIN',
                    'ALTER ROLE dlock_admin NOLOGIN BYPASSRLS',
                    'ALTER ROLE dlock_admin NOBYPASSRLS; GRANT pg_read_all_data TO dlock_admin',
                    'REVOKE pg_read_all_data FROM dlock_admin; GRANT SELECT ON regress.secrets TO dlock_admin',
                    'REVOKE SELECT ON regress.secrets FROM dlock_admin; ALTER TABLE regress.secrets OWNER TO dlock_admin',
                    'ALTER TABLE regress.secrets OWNER TO CURRENT_USER; GRANT EXECUTE ON FUNCTION regress.not_dlocks() TO dlock_admin']) AS how;
SELECT count(*) AS installed FROM pg_extension WHERE extname = 'dlock';
-- The update from 0.3.0 (which adopted any such role) applies the same
-- rule: it fails as a whole and leaves 0.3.0 in place.
CREATE EXTENSION dlock VERSION '0.3.0';
SELECT regress.outcome('ALTER EXTENSION dlock UPDATE') AS update_over_role_with_privileges;
SELECT extversion FROM pg_extension WHERE extname = 'dlock';
REVOKE EXECUTE ON FUNCTION regress.not_dlocks() FROM dlock_admin;
ALTER EXTENSION dlock UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'dlock';
-- Back to dlock's own role.
DROP EXTENSION dlock;
DROP ROLE dlock_admin;
DROP TABLE regress.secrets;
DROP FUNCTION regress.not_dlocks();
ALTER ROLE regress_dlock_admin_kept RENAME TO dlock_admin;
CREATE EXTENSION dlock;
SELECT has_function_privilege('dlock_admin', 'dlock.sweep(interval)', 'EXECUTE') AS admin_may_sweep,
       shobj_description(oid, 'pg_authid') LIKE 'dlock administrators: %' AS commented
  FROM pg_roles WHERE rolname = 'dlock_admin';
