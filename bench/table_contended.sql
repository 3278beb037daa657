-- Hand-written lease table, contended: every client tries the same row
-- once per transaction; a winner releases it at once. A claim that finds
-- the row held returns no row, and \aset then leaves tok at 0.
\set tok 0
INSERT INTO bench.lease AS l (name, token, owner, expires_at)
VALUES ('hot-' || :tag::text, nextval('bench.token_seq'),
        'client-' || :client_id::text,
        clock_timestamp() + interval '30 seconds')
ON CONFLICT (name) DO UPDATE
   SET token = excluded.token, owner = excluded.owner,
       expires_at = excluded.expires_at
 WHERE l.expires_at < clock_timestamp()
RETURNING token AS tok \aset
\if :tok > 0
UPDATE bench.lease SET expires_at = '-infinity'
 WHERE name = 'hot-' || :tag::text AND token = :tok;
\endif
