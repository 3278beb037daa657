-- dlock, many names: take and release a random one of :names leases,
-- drawn from this client's own share of them (no two clients draw the same),
-- under an owner named as the hand-written table's.
\set n :client_id + :clients * random(0, :names / :clients - 1)
SELECT (dlock.try_acquire('names-' || :names::text || '-' || :n::text, interval '30 seconds',
                          'client-' || :client_id::text)).token AS tok \gset
SELECT dlock.release('names-' || :names::text || '-' || :n::text, :tok);
