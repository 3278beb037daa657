-- The start of every regression suite, read with \i so that each suite runs
-- alone: a fresh dlock (tokens start at 1) and the helpers in schema
-- regress. Prints nothing.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS dlock CASCADE;
CREATE EXTENSION dlock;
DROP SCHEMA IF EXISTS regress CASCADE;
CREATE SCHEMA regress;

-- Runs a statement in a subtransaction (an error leaves nothing behind) and
-- reports its error's fields.
CREATE FUNCTION regress.error_of(statement text,
    OUT code text, OUT message text, OUT detail text, OUT hint text)
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE statement;
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS code = RETURNED_SQLSTATE, message = MESSAGE_TEXT,
        detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
END $$;

-- Compact form: 'ok', or the SQLSTATE and DETAIL.
CREATE FUNCTION regress.outcome(statement text) RETURNS text
LANGUAGE sql AS $$
    SELECT coalesce(e.code || coalesce(': ' || nullif(e.detail, ''), ''), 'ok')
      FROM regress.error_of(statement) AS e
$$;

-- Expires a lease now, as if its TTL had just run out, so that no test
-- waits for the clock; past_delay also ends its lock-delay. With
-- holder_token, the holder of a shared lease or a semaphore with that
-- token instead. Returns the grant's state afterwards.
CREATE FUNCTION regress.expire(lease text, past_delay boolean DEFAULT false,
                               holder_token bigint DEFAULT NULL)
RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
    state text;
BEGIN
    EXECUTE format($$
        UPDATE %s
           SET expires_at = clock_timestamp() - CASE WHEN $2 THEN lock_delay ELSE '0' END,
               acquired_at = least(acquired_at,
                                   clock_timestamp() - CASE WHEN $2 THEN lock_delay ELSE '0' END)
         WHERE name = $1 AND ($3 IS NULL OR token = $3)
     RETURNING dlock.lease_state(released_at, expires_at, lock_delay, clock_timestamp())$$,
        CASE WHEN holder_token IS NULL THEN 'dlock.lease_store' ELSE 'dlock.lease_holders' END)
      INTO state USING lease, past_delay, holder_token;
    RETURN state;
END $f$;
RESET client_min_messages;
