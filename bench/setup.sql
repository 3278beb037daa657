-- Objects for bench/run.sh: dlock itself, and the lease table people write
-- by hand when they have no lease service.
CREATE EXTENSION dlock;
CREATE EXTENSION pg_stat_statements;

CREATE SCHEMA bench;
CREATE SEQUENCE bench.token_seq;
CREATE TABLE bench.lease (
    name       text PRIMARY KEY,
    token      bigint NOT NULL,
    owner      text NOT NULL,
    expires_at timestamptz NOT NULL
);
