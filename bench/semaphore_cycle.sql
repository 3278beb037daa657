-- dlock semaphore, uncontended: take one of 3 permits of this client's own
-- name, then release it (a NULL token fails release() with 22004).
SELECT (dlock.try_acquire('permits-' || :tag::text || '-' || :client_id::text,
                          interval '30 seconds', permits => 3)).token AS tok \gset
SELECT dlock.release('permits-' || :tag::text || '-' || :client_id::text, :tok);
