-- Fencing: fenced_update, fence, protect, assert_held, and tokens dlock
-- never issued.
\set ECHO none
\i sql/setup/fresh_dlock.sql
\set ECHO all
SET client_min_messages = warning;

CREATE TABLE accounts (
    id          int PRIMARY KEY,
    region      text,
    balance     numeric,
    note        text,
    seen        timestamptz,
    tags        text[],
    doc         jsonb,
    fence_token bigint,
    doubled     numeric GENERATED ALWAYS AS (balance * 2) STORED
);
INSERT INTO accounts (id, region, balance, note) VALUES (1, 'eu', 10, 'a'), (2, 'us', 20, 'b'), (3, NULL, 30, 'c');

SELECT token AS t1 FROM dlock.try_acquire('accounts', interval '1 min', 'writer-1') \gset

-- Values reach the columns through their types' own input functions.
SELECT dlock.fenced_update('accounts', :t1,
    $${"balance": 12.50, "note": "it's \"quoted\"", "seen": "2026-11-30 12:00:00+00",
       "tags": ["a", "b,c"], "doc": {"k": [1, null]}}$$, '{"id": 1}') AS updated;
SELECT id, balance, note, seen AT TIME ZONE 'UTC' AS seen_utc, tags, doc, doubled,
       fence_token = :t1 AS fenced
  FROM accounts WHERE id = 1;
SELECT dlock.fenced_update('accounts', :t1, '{"note": null, "balance": "1e3"}', '{"id": 1}') AS updated;
SELECT note IS NULL AS note_is_null, balance FROM accounts WHERE id = 1;
-- Equal tokens pass: a holder writes many times. A JSON null in match
-- matches SQL NULL; several match columns must all match.
SELECT dlock.fenced_update('accounts', :t1, '{"note": "no region"}', '{"region": null}') AS updated;
SELECT dlock.fenced_update('accounts', :t1, '{"note": "x"}', '{"id": 2, "region": "eu"}') AS none_match;
SELECT id, note, fence_token = :t1 AS fenced FROM accounts ORDER BY id;

-- A newer holder writes; the old holder's write is refused with LD001,
-- its DETAIL naming the highest fence; nothing changes.
SELECT dlock.release('accounts', :t1);
SELECT token AS t2 FROM dlock.try_acquire('accounts', interval '1 min', 'writer-2') \gset
SELECT dlock.fenced_update('accounts', :t2, '{"balance": 99}', '{"id": 1}') AS updated;
SELECT regress.outcome(format($$SELECT dlock.fenced_update('accounts', %s, '{"balance": 1}', '{"id": 1}')$$, :t1))
       = 'LD001: 1 matching row(s) carry a higher fence; the highest is ' || :t2 || '.' AS stale_refused;
SELECT balance, fence_token = :t2 AS newer_fence FROM accounts WHERE id = 1;
-- A row the newer holder has not written still takes the older token.
SELECT dlock.fenced_update('accounts', :t1, '{"note": "older"}', '{"id": 3}') AS older_row;

-- A match selecting rows of which any carries a higher fence is stale as a
-- whole: LD001, and the rows it could have written are left alone too.
UPDATE accounts SET region = 'eu' WHERE id = 3;
SELECT regress.outcome(format($$SELECT dlock.fenced_update('accounts', %s, '{"note": "partly stale"}', '{"region": "eu"}')$$, :t1))
       = 'LD001: 1 matching row(s) carry a higher fence; the highest is ' || :t2 || '.' AS partly_stale_refused;
SELECT id, note FROM accounts WHERE region = 'eu' ORDER BY id;
UPDATE accounts SET region = NULL WHERE id = 3;

-- Columns the write does not name are left out of the conversion: a NOT
-- NULL domain elsewhere in the row does not get in the way.
CREATE DOMAIN regress_positive AS int NOT NULL CHECK (VALUE > 0);
CREATE TABLE domained (id int PRIMARY KEY, a regress_positive DEFAULT 1, b varchar(3), fence_token bigint);
INSERT INTO domained VALUES (1, 5, 'x');
SELECT dlock.fenced_update('domained', :t2, '{"a": 7}', '{"id": 1}') AS domain_set;
SELECT dlock.fenced_update('domained', :t2, '{"b": "yz"}', '{"a": 7}') AS domain_matched;
SELECT regress.outcome(format($$SELECT dlock.fenced_update('domained', %s, '{"a": -1}', '{"id": 1}')$$, :t2)) AS domain_check;
SELECT regress.outcome(format($$SELECT dlock.fenced_update('domained', %s, '{"b": "long"}', '{"id": 1}')$$, :t2)) AS typmod_check;
SELECT id, a, b FROM domained;
DROP TABLE domained;
DROP DOMAIN regress_positive;

-- Bad input: the documented SQLSTATE, and nothing changes.
SELECT regress.outcome($$SELECT dlock.fenced_update(NULL, 1, '{"a": 1}', '{"id": 1}')$$) AS null_target;
SELECT regress.outcome($$SELECT dlock.fenced_update('accounts', NULL, '{"a": 1}', '{"id": 1}')$$) AS null_token;
SELECT regress.outcome($$SELECT dlock.fenced_update('accounts', 1, NULL, '{"id": 1}')$$) AS null_changes;
SELECT regress.outcome($$SELECT dlock.fenced_update('accounts', 1, '{"note": "x"}', NULL)$$) AS null_match;
SELECT regress.outcome($$SELECT dlock.fenced_update('accounts', 1, '{"note": "x"}', '{"id": 1}', NULL)$$) AS null_fence_column;
SELECT regress.outcome($$SELECT dlock.fenced_update('accounts', 1, '{}', '{"id": 1}')$$) AS empty_changes;
SELECT regress.outcome($$SELECT dlock.fenced_update('accounts', 1, '{"note": "x"}', '{}')$$) AS empty_match;
SELECT regress.outcome($$SELECT dlock.fenced_update('accounts', 1, '[1]', '{"id": 1}')$$) AS changes_not_object;
SELECT regress.outcome($$SELECT dlock.fenced_update('accounts', 1, '{"nope": 1}', '{"id": 1}')$$) AS unknown_column;
SELECT regress.outcome($$SELECT dlock.fenced_update('accounts', 1, '{"note": "x"}', '{"nope": 1}')$$) AS unknown_match_column;
SELECT regress.outcome($$SELECT dlock.fenced_update('accounts', 1, '{"fence_token": 5}', '{"id": 1}')$$) AS sets_fence;
SELECT regress.outcome($$SELECT dlock.fenced_update('accounts', 1, '{"doubled": 5}', '{"id": 1}')$$) AS generated_column;
SELECT regress.outcome($$SELECT dlock.fenced_update('accounts', 1, '{"ctid": "(0,1)"}', '{"id": 1}')$$) AS system_column;
SELECT regress.outcome($$SELECT dlock.fenced_update('accounts', 1, '{"note": "x"}', '{"id": 1}', 'missing')$$) AS missing_fence;
SELECT regress.outcome($$SELECT dlock.fenced_update('accounts', 1, '{"note": "x"}', '{"id": 1}', 'note')$$) AS fence_not_bigint;
SELECT regress.outcome(format($$SELECT dlock.fenced_update('accounts', %s, '{"balance": "lots"}', '{"id": 1}')$$, :t2)) AS bad_value;
SELECT regress.outcome($$SELECT dlock.fenced_update('accounts', 9223372036854775807, '{"note": "x"}', '{"id": 1}')$$)
       LIKE 'LD003: The largest token issued so far is %' AS forged_token;
SELECT regress.outcome($$SELECT dlock.fenced_update('accounts', 0, '{"note": "x"}', '{"id": 1}')$$)
       LIKE 'LD003%' AS zero_token;
CREATE VIEW accounts_view AS SELECT * FROM accounts;
SELECT regress.outcome($$SELECT dlock.fenced_update('accounts_view', 1, '{"note": "x"}', '{"id": 1}')$$) AS not_a_table;
SELECT id, balance, note, fence_token = :t2 AS t2_fence FROM accounts ORDER BY id;
-- A relation that does not exist (OID 0, or dropped since the regclass was
-- made): 42P01, for fenced_update, protect and unprotect alike.
CREATE TABLE dropped (id int PRIMARY KEY, fence_token bigint);
SELECT 'dropped'::regclass::oid AS dropped_oid \gset
DROP TABLE dropped;
SELECT regress.outcome(format($$SELECT dlock.fenced_update(%s, %s, '{"id": 2}', '{"id": 1}')$$, :dropped_oid, :t2))
       = '42P01' AS fenced_update_dropped,
       regress.outcome(format($$SELECT dlock.fenced_update(0, %s, '{"id": 2}', '{"id": 1}')$$, :t2)) AS fenced_update_oid_0,
       regress.outcome(format('SELECT dlock.protect(%s)', :dropped_oid)) = '42P01' AS protect_dropped,
       regress.outcome('SELECT dlock.protect(0)') AS protect_oid_0,
       regress.outcome(format('SELECT dlock.unprotect(%s)', :dropped_oid)) = '42P01' AS unprotect_dropped;
SELECT (regress.error_of('SELECT dlock.unprotect(0)')).message AS unprotect_oid_0_message;
-- An index is no table (42809, as table_open says); a system column is no
-- fence column (428C9, as for changes).
SELECT regress.outcome(format($$SELECT dlock.fenced_update('accounts_pkey', %s, '{"note": "x"}', '{"id": 1}')$$, :t2)) AS index_target,
       regress.outcome($$SELECT dlock.protect('accounts_pkey')$$) AS protect_index,
       regress.outcome(format($$SELECT dlock.fenced_update('accounts', %s, '{"note": "x"}', '{"id": 1}', 'xmin')$$, :t2)) AS system_fence_column;
-- Messages that would not fit are cut at a character boundary: a client in
-- another encoding still gets the error itself, not 22021 for a message
-- cut inside a character.
SELECT code, octet_length(message) <= 511 AS fits,
       convert_to(message, 'LATIN1') IS NOT NULL AS whole_characters
  FROM regress.error_of(format($$SELECT dlock.fenced_update('accounts', %s, jsonb_build_object(repeat('é', 300), 1), '{"id": 1}')$$, :t2));
SET client_encoding = 'LATIN1';
\set VERBOSITY sqlstate
SELECT dlock.fenced_update('accounts', 1, jsonb_build_object(repeat('é', 300), 1), '{"id": 1}');
\set VERBOSITY default
RESET client_encoding;

-- Identifiers are quoted: odd table and column names work, and names are
-- never SQL.
CREATE TABLE "Odd ""Table""" ("Key;--" int PRIMARY KEY, "Value" text, "Fence" bigint);
INSERT INTO "Odd ""Table""" VALUES (1, 'v', NULL);
SELECT dlock.fenced_update('"Odd ""Table"""', :t2, '{"Value": "w"}', '{"Key;--": 1}', 'Fence') AS updated;
SELECT "Key;--", "Value", "Fence" = :t2 AS fenced FROM "Odd ""Table""";

-- The caller's privileges apply: a role without UPDATE gets 42501, and
-- row-level security hides rows (0 updated, not LD001).
CREATE ROLE regress_dlock_writer;
GRANT USAGE ON SCHEMA regress TO regress_dlock_writer;
GRANT EXECUTE ON FUNCTION regress.outcome(text), regress.error_of(text) TO regress_dlock_writer;
GRANT SELECT ON accounts TO regress_dlock_writer;
SET ROLE regress_dlock_writer;
SELECT regress.outcome(format($$SELECT dlock.fenced_update('public.accounts', %s, '{"note": "x"}', '{"id": 1}')$$, :t2)) AS no_update_privilege;
RESET ROLE;
GRANT UPDATE ON accounts TO regress_dlock_writer;
ALTER TABLE accounts ENABLE ROW LEVEL SECURITY;
CREATE POLICY eu_only ON accounts USING (region = 'eu');
SET ROLE regress_dlock_writer;
SELECT dlock.fenced_update('public.accounts', :t2, '{"note": "eu"}', '{"id": 1}') AS visible_row;
SELECT dlock.fenced_update('public.accounts', :t2, '{"note": "us"}', '{"id": 2}') AS hidden_row;
SELECT dlock.fenced_update('public.accounts', :t1, '{"note": "stale"}', '{"id": 2}') AS hidden_stale_row;
RESET ROLE;
ALTER TABLE accounts DISABLE ROW LEVEL SECURITY;
SELECT id, note FROM accounts ORDER BY id;

-- protect(): writers that set the fence column themselves are fenced too.
SELECT dlock.protect('accounts');
SELECT regress.outcome(format('UPDATE accounts SET balance = 0, fence_token = %s WHERE id = 1', :t1))
       = 'LD001: The row''s fence is ' || :t2 || '.' AS lower_refused;
SELECT regress.outcome('UPDATE accounts SET fence_token = NULL WHERE id = 1') LIKE 'LD001%' AS null_refused;
SELECT regress.outcome('UPDATE accounts SET fence_token = 9223372036854775807 WHERE id = 1') LIKE 'LD003%' AS forged_refused;
SELECT regress.outcome('INSERT INTO accounts (id, fence_token) VALUES (7, 9223372036854775807)') LIKE 'LD003%' AS forged_insert_refused;
SELECT regress.outcome(format('UPDATE accounts SET note = %L, fence_token = %s WHERE id = 1', 'same token', :t2)) AS equal_ok;
SELECT regress.outcome('UPDATE accounts SET note = ''no fence change'' WHERE id = 1') AS untouched_fence_ok;
SELECT regress.outcome(format('INSERT INTO accounts (id, fence_token) VALUES (8, %s)', :t2)) AS issued_insert_ok;
SELECT regress.outcome($$SELECT dlock.protect('accounts', 'missing')$$) AS protect_missing_column;
SELECT regress.outcome($$SELECT dlock.protect('accounts', 'note')$$) AS protect_not_bigint;
-- The trigger re-checks the column's type when it runs.
CREATE TABLE retyped (id int, fence_token bigint);
SELECT dlock.protect('retyped');
ALTER TABLE retyped ALTER COLUMN fence_token TYPE text;
SELECT regress.outcome($$INSERT INTO retyped VALUES (1, 'abc')$$) AS retyped_fence;
DROP TABLE retyped;
SELECT regress.outcome($$SELECT dlock.protect(NULL)$$) AS protect_null;
-- 0 marks a row not fenced yet (DEFAULT 0 works); lowering to 0 does not.
SELECT regress.outcome('INSERT INTO accounts (id, fence_token) VALUES (9, 0)') AS zero_insert_ok;
SELECT regress.outcome('UPDATE accounts SET fence_token = 0 WHERE id = 1') LIKE 'LD001%' AS zero_lowering_refused;
SELECT tgname FROM pg_trigger WHERE tgrelid = 'accounts'::regclass;
SELECT dlock.unprotect('accounts');
SELECT tgname FROM pg_trigger WHERE tgrelid = 'accounts'::regclass;
SELECT regress.outcome(format('UPDATE accounts SET fence_token = %s WHERE id = 1', :t1)) AS unprotected;

-- fence(): the highest token accepted per resource.
SELECT dlock.fence('ledger', :t1) = :t1 AS first;
SELECT dlock.fence('ledger', :t1) = :t1 AS equal;
SELECT dlock.fence('ledger', :t2) = :t2 AS higher;
SELECT regress.outcome(format($$SELECT dlock.fence('ledger', %s)$$, :t1))
       = 'LD001: The resource has accepted token ' || :t2 || '.' AS lower_refused;
SELECT token = :t2 AS recorded FROM dlock.fences WHERE resource = 'ledger';
SELECT regress.outcome($$SELECT dlock.fence('ledger', 9223372036854775807)$$) LIKE 'LD003%' AS forged;
SELECT regress.outcome($$SELECT dlock.fence(NULL, 1)$$) AS null_resource;
SELECT regress.outcome($$SELECT dlock.fence('ledger', NULL)$$) AS null_token;
SELECT regress.outcome($$SELECT dlock.fence('', 1)$$) AS empty_resource;
SELECT (regress.error_of($$SELECT dlock.fence('', 1)$$)).message AS empty_resource_message;
SELECT regress.outcome($$SELECT dlock.fence(repeat('r', 256), 1)$$) AS long_resource;
SELECT token = :t2 AS unchanged FROM dlock.fences WHERE resource = 'ledger';

-- assert_held(): the lease is held with this token now.
SELECT regress.outcome(format($$SELECT dlock.assert_held('accounts', %s)$$, :t2)) AS held;
SELECT regress.outcome(format($$SELECT dlock.assert_held('accounts', %s)$$, :t1))
       = 'LD001: The lease was taken by token ' || :t2 || '.' AS old_token;
SELECT regress.outcome($$SELECT dlock.assert_held('accounts', 9223372036854775807)$$) LIKE 'LD003%' AS forged;
SELECT regress.outcome(format($$SELECT dlock.assert_held('no-such-lease', %s)$$, :t2)) AS other_lease;
SELECT token AS t3 FROM dlock.try_acquire('brief', interval '1 min', 'writer-3') \gset
SELECT regress.expire('brief');
SELECT regress.outcome(format($$SELECT dlock.assert_held('brief', %s)$$, :t3))
       = 'LD002: The lease expired; its latest token is ' || :t3 || '.' AS expired;
SELECT dlock.release('accounts', :t2);
SELECT regress.outcome(format($$SELECT dlock.assert_held('accounts', %s)$$, :t2)) LIKE 'LD002: The lease was released%' AS released;
SELECT regress.outcome($$SELECT dlock.assert_held(NULL, 1)$$) AS null_name;
SELECT regress.outcome($$SELECT dlock.assert_held('accounts', NULL)$$) AS null_token;
-- renew of a token never issued: LD003 too.
SELECT regress.outcome($$SELECT dlock.renew('accounts', 9223372036854775807)$$) LIKE 'LD003%' AS renew_forged;

-- The token sequence must stay NO CYCLE, CACHE 1 and logged.
ALTER SEQUENCE dlock.token_seq CACHE 10;
SELECT regress.outcome($$SELECT dlock.try_acquire('seq-check', '1 min')$$) AS cached;
ALTER SEQUENCE dlock.token_seq CACHE 1 CYCLE;
SELECT regress.outcome($$SELECT dlock.try_acquire('seq-check', '1 min')$$) AS cycling;
ALTER SEQUENCE dlock.token_seq NO CYCLE INCREMENT -1;
SELECT regress.outcome($$SELECT dlock.try_acquire('seq-check', '1 min')$$) AS counting_down;
ALTER SEQUENCE dlock.token_seq INCREMENT 1;
ALTER SEQUENCE dlock.token_seq SET UNLOGGED;
SELECT regress.outcome($$SELECT dlock.try_acquire('seq-check', '1 min')$$) AS unlogged;
ALTER SEQUENCE dlock.token_seq SET LOGGED;
SELECT token > :t3 AS grants_again FROM dlock.try_acquire('seq-check', interval '1 min');
-- A sequence moved back is caught at the next grant of a lease it would
-- give a smaller token than before; moving it forward again repairs it.
SELECT last_value AS before_rewind FROM dlock.token_seq \gset
SELECT setval('dlock.token_seq', 1) = 1 AS rewound_to_1;
SELECT dlock.release('seq-check', token) FROM dlock.lease_store WHERE name = 'seq-check';
SELECT regress.outcome($$SELECT dlock.try_acquire('seq-check', '1 min')$$) LIKE '55000: It issued 2 for a lease last granted with token %' AS rewound;
SELECT setval('dlock.token_seq', :before_rewind) = :before_rewind AS restored;
SELECT token > :before_rewind AS repaired FROM dlock.try_acquire('seq-check', interval '1 min');
-- On the first history tokens stay below 2^40 (their epoch is 0).
SELECT max(token) >> 40 AS epoch FROM dlock.lease_store;

DROP VIEW accounts_view;
DROP TABLE accounts, "Odd ""Table""";
DROP OWNED BY regress_dlock_writer;
DROP ROLE regress_dlock_writer;
