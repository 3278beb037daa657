-- The C++/PostgreSQL wall (test-only build: make DLOCK_TESTING=1).
-- A C++ exception and a PostgreSQL error raised inside pg_guard() both reach
-- the client with their SQLSTATE, detail and hint; the C++ objects they
-- unwind are destroyed; the backend lives on.
\set ECHO none
\i sql/setup/fresh_dlock.sql
\set ECHO all
SET client_min_messages = warning;

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
