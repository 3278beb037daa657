-- dlock, waiting: every client waits in acquire() for the same lease and
-- releases it at once; the queue hands it to the next waiter.
SELECT (dlock.acquire('hot-' || :tag::text, interval '30 seconds',
                      interval '10 seconds')).token AS tok \gset
SELECT dlock.release('hot-' || :tag::text, :tok);
