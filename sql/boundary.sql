-- The C++/PostgreSQL wall (test-only build: make DLOCK_TESTING=1).
-- A C++ exception and a PostgreSQL error raised inside pg_guard() both reach
-- the client with their SQLSTATE, detail and hint; the C++ objects they
-- unwind are destroyed; the backend lives on.
CREATE EXTENSION dlock;

-- Shared by the other suites: runs a statement in a subtransaction (an
-- error leaves nothing behind) and reports its error's fields.
CREATE SCHEMA regress;
CREATE FUNCTION regress.error_of(statement text,
    OUT code text, OUT message text, OUT detail text, OUT hint text)
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE statement;
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS code = RETURNED_SQLSTATE, message = MESSAGE_TEXT,
        detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
END $$;

-- Compact form for the other suites: 'ok', or the SQLSTATE and DETAIL.
CREATE FUNCTION regress.outcome(statement text) RETURNS text
LANGUAGE sql AS $$
    SELECT coalesce(e.code || coalesce(': ' || nullif(e.detail, ''), ''), 'ok')
      FROM regress.error_of(statement) AS e
$$;

CREATE FUNCTION regress.cpp_throw(text) RETURNS void
    AS 'dlock', 'dlock_test_throw' LANGUAGE C STRICT;
CREATE FUNCTION regress.pg_error_in_guard() RETURNS void
    AS 'dlock', 'dlock_test_pg_error' LANGUAGE C STRICT;
CREATE FUNCTION regress.guarded_value(int) RETURNS int
    AS 'dlock', 'dlock_test_guarded_value' LANGUAGE C STRICT;
CREATE FUNCTION regress.destructors_run() RETURNS int
    AS 'dlock', 'dlock_test_destructors_run' LANGUAGE C STRICT;

SELECT pg_backend_pid() AS pid_before \gset
SELECT regress.destructors_run() AS destroyed_before;

-- dlock::Error keeps its SQLSTATE, detail and hint.
SELECT * FROM regress.error_of($$SELECT regress.cpp_throw('22023')$$);
SELECT * FROM regress.error_of($$SELECT regress.cpp_throw('LD002')$$);
-- std::bad_alloc and other std:: exceptions.
SELECT * FROM regress.error_of($$SELECT regress.cpp_throw('bad_alloc')$$);
SELECT * FROM regress.error_of($$SELECT regress.cpp_throw('runtime_error')$$);
-- A PostgreSQL error inside pg_guard() comes out untouched.
SELECT * FROM regress.error_of($$SELECT regress.pg_error_in_guard()$$);
-- The same errors at top level, outside any exception block.
\set VERBOSITY sqlstate
SELECT regress.cpp_throw('55P03');
SELECT regress.pg_error_in_guard();
\set VERBOSITY default

-- Every unwound frame ran its destructor: seven calls, seven objects.
SELECT regress.destructors_run() AS destroyed_after;
-- A guarded call that succeeds returns its value, and its frame's object
-- is destroyed on the way out too.
SELECT regress.guarded_value(21);
SELECT regress.destructors_run() AS destroyed_at_end;

-- Same backend, still working.
SELECT pg_backend_pid() = :pid_before AS same_backend, 1 + 1 AS still_working;
