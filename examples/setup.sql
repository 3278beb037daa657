-- What the examples need, once per database: dlock, the report they write
-- and the sales they add up.
CREATE EXTENSION IF NOT EXISTS dlock;
CREATE TABLE reports (day date PRIMARY KEY, status text, total numeric, fence_token bigint);
CREATE TABLE sales (day date, amount numeric);
INSERT INTO reports (day, status) VALUES ('2026-11-30', 'pending');
INSERT INTO sales VALUES ('2026-11-30', 120.50), ('2026-11-30', 79.25), ('2026-12-01', 10);
