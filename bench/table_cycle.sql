-- Hand-written lease table, uncontended: claim this client's own row if it
-- is free or expired, then release it by moving its expiry into the past.
-- A claim that returns no row makes \gset fail the transaction.
INSERT INTO bench.lease AS l (name, token, owner, expires_at)
VALUES ('cycle-' || :tag::text || '-' || :client_id::text,
        nextval('bench.token_seq'), 'client-' || :client_id::text,
        clock_timestamp() + interval '30 seconds')
ON CONFLICT (name) DO UPDATE
   SET token = excluded.token, owner = excluded.owner,
       expires_at = excluded.expires_at
 WHERE l.expires_at < clock_timestamp()
RETURNING token AS tok \gset
UPDATE bench.lease SET expires_at = '-infinity'
 WHERE name = 'cycle-' || :tag::text || '-' || :client_id::text
   AND token = :tok;
