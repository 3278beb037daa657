-- dlock, contended: every client tries the same lease once per
-- transaction; a winner releases it at once.
SELECT coalesce((dlock.try_acquire('hot-' || :tag::text,
                                   interval '30 seconds')).token, 0) AS tok \gset
\if :tok > 0
SELECT dlock.release('hot-' || :tag::text, :tok);
\endif
