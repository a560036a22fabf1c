-- Data for the reconciler figure of `make bench`: one share with :codes
-- codes (generate_series), one in a hundred bound to its own learner with
-- one access record and both outbox announcements, consistent with every
-- invariant. Run with: psql -v tenant=… -v share=… -v resource=… -v admin=… -v codes=…
INSERT INTO shares (tenant_id, id, slug, title, status, created_by)
  VALUES (:'tenant', :'share', 'recon-' || left(md5(:'share'), 12), 'reconcile', 'active', :'admin');
INSERT INTO resources (tenant_id, id, share_id, kind, title, content_type, size_bytes, storage_key)
  VALUES (:'tenant', :'resource', :'share', 'video', 'Lesson', 'video/mp4', 0, 'none');
INSERT INTO code_batches (tenant_id, id, share_id, label, count, created_by)
  VALUES (:'tenant', :'share', :'share', 'reconcile', 100000, :'admin');
CREATE TEMP TABLE recon_codes AS
  SELECT i, gen_random_uuid() AS code_id,
         CASE WHEN i % 100 = 0 THEN gen_random_uuid() END AS account_id,
         CASE WHEN i % 100 = 0 THEN gen_random_uuid() END AS access_id
  FROM generate_series(1, :codes) i;
INSERT INTO accounts (id, email, display_name, password_hash)
  SELECT account_id, 'recon-' || i || '-' || left(md5(:'share'), 8) || '@example.com', 'recon', 'x'
  FROM recon_codes WHERE account_id IS NOT NULL;
INSERT INTO auth_codes (tenant_id, id, share_id, batch_id, digest, key_version, hint,
                        bound_principal, first_used_at, access_count)
  SELECT :'tenant', code_id, :'share', :'share',
         decode(md5(code_id::text) || md5(i::text || code_id::text), 'hex'), 1, 'RE…CN',
         account_id, CASE WHEN account_id IS NOT NULL THEN now() END,
         CASE WHEN account_id IS NOT NULL THEN 1 ELSE 0 END
  FROM recon_codes;
INSERT INTO access_records (tenant_id, id, share_id, code_id, principal_id, resource_id, request_id, bound_now, expires_at)
  SELECT :'tenant', access_id, :'share', code_id, account_id, :'resource', access_id::text, true, now() + interval '6 hours'
  FROM recon_codes WHERE account_id IS NOT NULL;
INSERT INTO outbox (tenant_id, id, event_type, payload)
  SELECT :'tenant', gen_random_uuid(), 'code.bound', json_build_object('code_id', code_id)
  FROM recon_codes WHERE account_id IS NOT NULL;
INSERT INTO outbox (tenant_id, id, event_type, payload)
  SELECT :'tenant', gen_random_uuid(), 'access.recorded', json_build_object('access_id', access_id)
  FROM recon_codes WHERE account_id IS NOT NULL;
-- The share has no quota: no slots to count its accesses (its records are
-- the count).
ANALYZE;
