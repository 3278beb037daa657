-- All-or-nothing multi-leases: try_acquire_all and acquire_all grant every
-- name (tokens in name order) or none; bad names arrays.
\set ECHO none
\i sql/setup/fresh_dlock.sql
\set ECHO all
SET client_min_messages = warning;

SELECT name, token, owner FROM dlock.try_acquire_all('{c,a,b}', '1 min', 'o1');
-- One of them busy: no row, nothing written, no token drawn.
SELECT name, token FROM dlock.try_acquire_all('{d,a}', '1 min', 'o2');
SELECT count(*) AS d_rows FROM dlock.leases WHERE name = 'd';
SELECT last_value AS last_token FROM dlock.token_seq;
-- The holder's retry: the same tokens.
SELECT name, token FROM dlock.try_acquire_all(ARRAY['a', 'b'], '2 min', 'o1');
-- acquire_all with a zero timeout: the same as try, but 55P03 when busy.
SELECT code, message FROM regress.error_of($$SELECT * FROM dlock.acquire_all('{d,a}', '1 min', '0', 'o2')$$);
SELECT count(*) AS d_rows FROM dlock.leases WHERE name = 'd';
SELECT name, token FROM dlock.acquire_all('{e,d}', '1 min', '1 s', 'o2', lock_delay => '1 s');
SELECT name, owner, lock_delay FROM dlock.leases WHERE name IN ('d', 'e') ORDER BY name;
-- Each lease is released on its own, or all of an owner's at once.
SELECT dlock.release('a', 1) AS released;
SELECT dlock.release_all('o1') AS released;
SELECT name, token FROM dlock.try_acquire_all('{a,b,c}', '1 min', 'o3');
-- A shared holder makes the name busy too.
SELECT token FROM dlock.try_acquire('s', '1 min', 'r', shared => true);
SELECT name FROM dlock.try_acquire_all('{s,t}', '1 min', 'o4');
SELECT count(*) AS t_rows FROM dlock.leases WHERE name = 't';
-- A name a semaphore holds is refused, as try_acquire refuses it.
SELECT token FROM dlock.try_acquire('sem', '1 min', 'p', permits => 2);
SELECT code, detail FROM regress.error_of($$SELECT dlock.try_acquire_all('{sem,u}', '1 min', 'o4')$$);
SELECT count(*) AS u_rows FROM dlock.leases WHERE name = 'u';

-- Bad input: 22004 for a NULL array or element, 22023 for an empty array,
-- a name twice or a bad name; nothing written.
SELECT code, message, detail FROM regress.error_of($$SELECT dlock.try_acquire_all(NULL, '1 min')$$);
SELECT code, message, detail FROM regress.error_of($$SELECT dlock.try_acquire_all('{x,NULL}', '1 min')$$);
SELECT code, message FROM regress.error_of($$SELECT dlock.try_acquire_all('{}', '1 min')$$);
SELECT code, message, detail FROM regress.error_of($$SELECT dlock.try_acquire_all('{{x,y},{z,w}}', '1 min')$$);
SELECT code, message FROM regress.error_of($$SELECT dlock.acquire_all('{x,y,x}', '1 min', '1 s')$$);
SELECT code, message FROM regress.error_of($$SELECT dlock.try_acquire_all('{x,""}', '1 min')$$);
SELECT code, message FROM regress.error_of($$SELECT dlock.try_acquire_all('{x}', '0')$$);
SELECT code, message FROM regress.error_of($$SELECT dlock.acquire_all('{x}', '1 min', NULL)$$);
SELECT count(*) AS x_rows FROM dlock.leases WHERE name IN ('x', 'y');

-- Every parameter by name.
SELECT name, token FROM dlock.try_acquire_all(ttl => '1 min', names => '{n1,n2}', owner => 'o5',
                                              max_hold => '1 h', min_hold => '1 s');
SELECT name, max_hold, min_hold FROM dlock.leases WHERE name LIKE 'n_' ORDER BY name;
-- acquire_all cannot wait in REPEATABLE READ.
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT code, message FROM regress.error_of($$SELECT dlock.acquire_all('{z}', '1 min', '1 s')$$);
COMMIT;

-- dlock.max_names (default 100) caps the names array: each name's gate is
-- a lock in the shared lock table until commit. A longer array is refused
-- with 22023 before anything is taken: no row, no token, no lock.
SHOW dlock.max_names;
SELECT count(*) AS granted FROM dlock.try_acquire_all(
    ARRAY(SELECT 'many-' || g FROM generate_series(1, 100) AS g), '1 min', 'o6');
SELECT last_value AS last_token FROM dlock.token_seq;
SELECT code, message, detail, hint FROM regress.error_of($$
    SELECT dlock.try_acquire_all(ARRAY(SELECT 'more-' || g FROM generate_series(1, 101) AS g), '1 min')$$);
SET dlock.max_names = 3;
SELECT code, message, detail FROM regress.error_of($$SELECT dlock.try_acquire_all('{cap1,cap2,cap3,cap4}', '1 min')$$);
SELECT code, message, detail FROM regress.error_of($$SELECT dlock.acquire_all('{cap1,cap2,cap3,cap4}', '1 min', '1 s')$$);
-- Counted before anything else is checked: a NULL element or a name twice too.
SELECT code, detail FROM regress.error_of($$SELECT dlock.acquire_all('{cap1,cap1,NULL,cap4}', '1 min', '1 s')$$);
SELECT count(*) AS refused_rows FROM dlock.leases WHERE name LIKE 'more-%' OR name LIKE 'cap_';
SELECT last_value AS last_token FROM dlock.token_seq;
SELECT count(*) AS advisory_locks FROM pg_locks
 WHERE pid = pg_backend_pid() AND locktype = 'advisory';
-- Within the cap, granted as before.
SELECT name, token FROM dlock.try_acquire_all('{cap1,cap2,cap3}', '1 min', 'o7');
RESET dlock.max_names;
-- Only a superuser may raise it: a cap the caller could lift protects nothing.
CREATE ROLE regress_dlock_names;
GRANT USAGE ON SCHEMA regress TO regress_dlock_names;
SET ROLE regress_dlock_names;
SELECT code, message FROM regress.error_of($$SET dlock.max_names = 1000$$);
RESET ROLE;
REVOKE USAGE ON SCHEMA regress FROM regress_dlock_names;
DROP ROLE regress_dlock_names;
