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
       has_function_privilege('dlock.force_release(text, text)', 'EXECUTE') AS can_force;
DROP EXTENSION dlock;
SELECT count(*) AS schemas_left FROM pg_namespace WHERE nspname = 'dlock';
-- A fresh install too; \dx shows pg_catalog, not a schema of the user's.
CREATE EXTENSION dlock;
SELECT extversion, extnamespace::regnamespace AS dx_schema FROM pg_extension WHERE extname = 'dlock';
SELECT token > 0 AS works FROM dlock.try_acquire('x', '1 min');
DROP EXTENSION dlock;
\c :orig_db :orig_user
DROP DATABASE regress_dlock_owned;
DROP ROLE regress_dbowner;
DROP TABLE tokens;
DROP OWNED BY regress_alice, regress_bob, regress_carol, regress_ops;
DROP ROLE regress_alice, regress_bob, regress_carol, regress_ops;

-- dlock_admin: dlock adopts only the role it created (marked with its
-- comment). The first install created it; set it aside for these cases.
SELECT shobj_description(oid, 'pg_authid') LIKE 'dlock administrators: %Created by dlock.' AS marked,
       rolcanlogin FROM pg_roles WHERE rolname = 'dlock_admin';
DROP EXTENSION dlock;
ALTER ROLE dlock_admin RENAME TO regress_dlock_admin_kept;
-- Someone else's role of that name, one that can log in: a fresh install
-- refuses it, and nothing is installed.
CREATE ROLE dlock_admin LOGIN;
SELECT regress.outcome('CREATE EXTENSION dlock') AS install_over_foreign_role;
SELECT count(*) AS installed FROM pg_extension WHERE extname = 'dlock';
-- Even a plain NOLOGIN one without dlock's mark.
ALTER ROLE dlock_admin NOLOGIN;
SELECT regress.outcome('CREATE EXTENSION dlock') AS install_over_unmarked_role;
-- Updating from 0.3.0 (which adopted any such role) keeps a plain one, the
-- kind 0.3.0 created, and marks it as dlock's ...
CREATE EXTENSION dlock VERSION '0.3.0';
ALTER EXTENSION dlock UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'dlock';
SELECT shobj_description(oid, 'pg_authid') LIKE 'dlock administrators: %Created by dlock.' AS marked
  FROM pg_roles WHERE rolname = 'dlock_admin';
-- ... but refuses one that can log in (the update fails as a whole).
DROP EXTENSION dlock;
COMMENT ON ROLE dlock_admin IS NULL;
ALTER ROLE dlock_admin LOGIN;
CREATE EXTENSION dlock VERSION '0.3.0';
SELECT regress.outcome('ALTER EXTENSION dlock UPDATE') AS update_over_login_role;
SELECT extversion FROM pg_extension WHERE extname = 'dlock';
-- Back to the role dlock made.
DROP EXTENSION dlock;
DROP ROLE dlock_admin;
ALTER ROLE regress_dlock_admin_kept RENAME TO dlock_admin;
CREATE EXTENSION dlock;
SELECT has_function_privilege('dlock_admin', 'dlock.sweep(interval)', 'EXECUTE') AS admin_may_sweep;
