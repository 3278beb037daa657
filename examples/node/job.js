// The nightly report under the lease "nightly-report", with node-postgres.
//
// Takes the lease, writes the report under its fencing token, renews the
// lease before the work, releases it. Connects with libpq's PG* variables.
// Exit status: 0 done, 1 failed (no report row to write: the lease was
// released), 75 busy (another worker holds the lease), 76 lost (the lease
// ended while working: nothing more was written).
'use strict';
const os = require('os');
const { Client } = require('pg');

const LEASE = 'nightly-report';
const FAILED = 1;
const BUSY = 75;
const LOST = 76;

// Every write checks in its own transaction that the lease is still ours
// (assert_held), and the row refuses an older token than its own. It answers
// how many rows it updated: 1, the report's, or 0 if that row is missing.
const WRITE = `
SELECT dlock.fenced_update('reports', $1,
         jsonb_build_object('status', $2::text, 'total', $3::numeric),
         jsonb_build_object('day', '2026-11-30')) AS updated
  FROM dlock.assert_held($4, $1)`;

// A write updated no report row: there is none for the day.
class NoReportRow extends Error {}

async function write(db, token, status, total = null) {
  const written = await db.query(WRITE, [token, status, total, LEASE]);
  if (written.rows[0].updated !== '1') throw new NoReportRow();  // a bigint arrives as a string
  console.log(`wrote ${status} with token ${token}`);
}

// True if this released the lease; false if it had already ended.
async function release(db, token, owner) {
  const released = await db.query('SELECT dlock.release($1, $2, owner => $3) AS released',
                                   [LEASE, token, owner]);
  return released.rows[0].released;
}

async function job(db) {
  const owner = `report-worker-${os.hostname()}-${process.pid}`;
  const granted = await db.query(
    "SELECT token FROM dlock.try_acquire($1, '30 s', owner => $2)", [LEASE, owner]);
  // A bigint arrives as a string: pass it back as it is.
  const token = granted.rows[0].token;
  if (token === null) {
    const held = await db.query(
      "SELECT coalesce(owner, 'nobody now') AS owner FROM dlock.get($1)", [LEASE]);
    console.log(`busy: ${LEASE} is held by ${held.rows[0].owner}`);
    return BUSY;
  }
  console.log(`granted token=${token}`);

  try {
    await write(db, token, 'running');
    // A long job renews before each step (at least every third of the ttl).
    await db.query('SELECT valid_for FROM dlock.renew($1, $2, owner => $3)', [LEASE, token, owner]);
    console.log('renewed');
    const sales = await db.query(
      "SELECT coalesce(sum(amount), 0) AS total FROM sales WHERE day = '2026-11-30'");
    await write(db, token, 'done', sales.rows[0].total);
  } catch (err) {
    if (err.code === 'LD001' || err.code === 'LD002') {  // a newer token wrote; the lease ended
      console.error(`lost: ${err.message} (${err.detail})`);
      return LOST;
    }
    if (err instanceof NoReportRow) {
      await release(db, token, owner);
      console.error('failed: no report row for 2026-11-30');
      return FAILED;
    }
    throw err;
  }

  console.log(await release(db, token, owner) ? 'released' : 'not released: the lease had already ended');
  return 0;
}

async function main() {
  const db = new Client();  // the PG* environment variables; autocommit: each call commits at once
  await db.connect();
  try {
    process.exitCode = await job(db);
  } finally {
    await db.end();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
