-- dlock multi-lease, uncontended: take this client's own three leases at
-- once, then release the three in one statement. A missed grant leaves the
-- tokens NULL, and release() raises 22004 on a NULL token.
SELECT (array_agg(token ORDER BY name))[1] AS tok1,
       (array_agg(token ORDER BY name))[2] AS tok2,
       (array_agg(token ORDER BY name))[3] AS tok3
  FROM dlock.try_acquire_all(ARRAY['multi-' || :tag::text || '-' || :client_id::text || '-a',
                                   'multi-' || :tag::text || '-' || :client_id::text || '-b',
                                   'multi-' || :tag::text || '-' || :client_id::text || '-c'],
                             interval '30 seconds') \gset
SELECT dlock.release('multi-' || :tag::text || '-' || :client_id::text || '-a', :tok1)
   AND dlock.release('multi-' || :tag::text || '-' || :client_id::text || '-b', :tok2)
   AND dlock.release('multi-' || :tag::text || '-' || :client_id::text || '-c', :tok3);
