-- dlock shared lease, uncontended: take a shared grant of this client's own
-- lease, then release it (a NULL token fails release() with 22004).
SELECT (dlock.try_acquire('shared-' || :tag::text || '-' || :client_id::text,
                          interval '30 seconds', shared => true)).token AS tok \gset
SELECT dlock.release('shared-' || :tag::text || '-' || :client_id::text, :tok);
