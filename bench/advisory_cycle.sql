-- Session-level advisory lock, uncontended: lock this client's own key,
-- then unlock it. Nothing is written or made durable.
\set key 1000 + :client_id
SELECT pg_try_advisory_lock(:key);
SELECT pg_advisory_unlock(:key);
