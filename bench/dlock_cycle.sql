-- dlock, uncontended: take this client's own lease, then release it.
-- A lease not granted gives a NULL token, and release() raises 22004 on a
-- NULL token, so a missed grant shows up as a failed transaction.
SELECT (dlock.try_acquire('cycle-' || :tag::text || '-' || :client_id::text,
                          interval '30 seconds')).token AS tok \gset
SELECT dlock.release('cycle-' || :tag::text || '-' || :client_id::text, :tok);
