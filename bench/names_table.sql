-- Hand-written lease table, many names: claim and release a random one of
-- :names rows, drawn from this client's own share of them.
\set n :client_id + :clients * random(0, :names / :clients - 1)
INSERT INTO bench.lease AS l (name, token, owner, expires_at)
VALUES ('names-' || :names::text || '-' || :n::text, nextval('bench.token_seq'), 'client-' || :client_id::text,
        clock_timestamp() + interval '30 seconds')
ON CONFLICT (name) DO UPDATE
   SET token = excluded.token, owner = excluded.owner,
       expires_at = excluded.expires_at
 WHERE l.expires_at < clock_timestamp()
RETURNING token AS tok \gset
UPDATE bench.lease SET expires_at = '-infinity'
 WHERE name = 'names-' || :names::text || '-' || :n::text AND token = :tok;
