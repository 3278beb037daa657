-- dlock.notify_lease_ends and two-phase commit. PostgreSQL refuses to
-- PREPARE a transaction that has sent a notification (0A000): with the
-- setting on, a force_release, a takeover or a release_all cannot be
-- prepared; with it off (SET LOCAL) they can. Endings that send nothing
-- (a holder's own release, a same-token retry, the force_release of a
-- grant already released) prepare with it on. What the notifications say
-- is test/isolation/specs/lease_ended.spec's.
\set ECHO none
\i sql/setup/fresh_dlock.sql
\set ECHO all
SET client_min_messages = warning;

SELECT token FROM dlock.try_acquire('ended-a', interval '10 min', 'worker');
SELECT token FROM dlock.try_acquire('ended-b', interval '10 min', 'worker');

-- On by default; any role may set it.
SHOW dlock.notify_lease_ends;
CREATE ROLE regress_notify_user;
SET ROLE regress_notify_user;
SET dlock.notify_lease_ends = off;
SHOW dlock.notify_lease_ends;
RESET dlock.notify_lease_ends;
RESET ROLE;
DROP ROLE regress_notify_user;

\set VERBOSITY sqlstate
-- force_release: refused at PREPARE, and rolled back with it.
BEGIN;
SELECT token FROM dlock.force_release('ended-a', 'to be prepared');
PREPARE TRANSACTION 'dlock_lease_ended';
-- A takeover after expiry: likewise.
SELECT regress.expire('ended-b');
BEGIN;
SELECT token FROM dlock.try_acquire('ended-b', interval '10 min', 'other');
PREPARE TRANSACTION 'dlock_lease_ended';
-- release_all: likewise.
BEGIN;
SELECT dlock.release_all('worker') AS released;
PREPARE TRANSACTION 'dlock_lease_ended';
\set VERBOSITY default
SELECT name, token, owner, state FROM dlock.leases ORDER BY name;

-- With the setting off for the transaction, each prepares and commits.
BEGIN;
SET LOCAL dlock.notify_lease_ends = off;
SELECT token FROM dlock.force_release('ended-a', 'prepared');
PREPARE TRANSACTION 'dlock_lease_ended';
COMMIT PREPARED 'dlock_lease_ended';
BEGIN;
SET LOCAL dlock.notify_lease_ends = off;
SELECT token FROM dlock.try_acquire('ended-b', interval '10 min', 'other');
PREPARE TRANSACTION 'dlock_lease_ended';
COMMIT PREPARED 'dlock_lease_ended';
BEGIN;
SET LOCAL dlock.notify_lease_ends = off;
SELECT dlock.release_all('other') AS released;
PREPARE TRANSACTION 'dlock_lease_ended';
COMMIT PREPARED 'dlock_lease_ended';
SHOW dlock.notify_lease_ends;
SELECT name, token, owner, state, forced_by IS NOT NULL AS forced, force_reason
  FROM dlock.leases ORDER BY name;

-- Endings that notify nobody prepare with the setting on: a same-token
-- retry, a holder's own release inside min_hold, and the force_release
-- that ends that released-early grant's min_hold.
SELECT token AS c FROM dlock.try_acquire('ended-c', interval '10 min', 'worker', min_hold => '1 h') \gset
BEGIN;
SELECT token = :c AS same_token FROM dlock.try_acquire('ended-c', interval '20 min', 'worker');
PREPARE TRANSACTION 'dlock_lease_ended';
COMMIT PREPARED 'dlock_lease_ended';
BEGIN;
SELECT dlock.release('ended-c', :c, 'worker') AS released;
PREPARE TRANSACTION 'dlock_lease_ended';
COMMIT PREPARED 'dlock_lease_ended';
SELECT state FROM dlock.leases WHERE name = 'ended-c';
BEGIN;
SELECT token = :c AS ended FROM dlock.force_release('ended-c', 'end min_hold');
PREPARE TRANSACTION 'dlock_lease_ended';
COMMIT PREPARED 'dlock_lease_ended';
SELECT state FROM dlock.leases WHERE name = 'ended-c';
