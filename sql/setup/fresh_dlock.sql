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
-- waits for the clock; past_delay also ends its lock-delay. Returns the
-- lease's state afterwards.
CREATE FUNCTION regress.expire(lease text, past_delay boolean DEFAULT false)
RETURNS text LANGUAGE sql AS $$
    WITH moved AS (
        UPDATE dlock.lease_store
           SET expires_at = clock_timestamp()
                            - CASE WHEN past_delay THEN lock_delay ELSE '0' END,
               acquired_at = least(acquired_at, clock_timestamp()
                            - CASE WHEN past_delay THEN lock_delay ELSE '0' END)
         WHERE name = lease
     RETURNING released_at, expires_at, lock_delay)
    SELECT dlock.lease_state(released_at, expires_at, lock_delay, clock_timestamp())
      FROM moved
$$;

-- The same for one holder of a shared lease or a semaphore, by token.
CREATE FUNCTION regress.expire_holder(lease text, holder_token bigint,
                                      past_delay boolean DEFAULT false)
RETURNS text LANGUAGE sql AS $$
    WITH moved AS (
        UPDATE dlock.lease_holders
           SET expires_at = clock_timestamp()
                            - CASE WHEN past_delay THEN lock_delay ELSE '0' END,
               acquired_at = least(acquired_at, clock_timestamp()
                            - CASE WHEN past_delay THEN lock_delay ELSE '0' END)
         WHERE name = lease AND token = holder_token
     RETURNING released_at, expires_at, lock_delay)
    SELECT dlock.lease_state(released_at, expires_at, lock_delay, clock_timestamp())
      FROM moved
$$;
RESET client_min_messages;
