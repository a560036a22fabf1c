-- Data for settle.sql: one share with a resource, :pairs codes and accounts.
-- Run with: psql -v tenant=… -v share=… -v resource=… -v admin=… -v pairs=…
INSERT INTO shares (tenant_id, id, slug, title, status, created_by)
  VALUES (:'tenant', :'share', 'pgbench-' || left(md5(:'share'), 12), 'pgbench', 'active', :'admin');
INSERT INTO resources (tenant_id, id, share_id, kind, title, content_type, size_bytes, storage_key)
  VALUES (:'tenant', :'resource', :'share', 'video', 'Lesson', 'video/mp4', 0, 'none');
INSERT INTO code_batches (tenant_id, id, share_id, label, count, created_by)
  VALUES (:'tenant', :'share', :'share', 'pgbench', :pairs, :'admin');
CREATE TABLE bench_pairs (n integer PRIMARY KEY, code_id uuid NOT NULL, account_id uuid NOT NULL);
INSERT INTO bench_pairs SELECT i, gen_random_uuid(), gen_random_uuid() FROM generate_series(1, :pairs) i;
INSERT INTO accounts (id, email, display_name, password_hash, email_verified_at)
  SELECT account_id, 'pgbench-' || n || '@example.com', 'pgbench', 'x', now() FROM bench_pairs;
INSERT INTO auth_codes (tenant_id, id, share_id, batch_id, digest, key_version, hint)
  SELECT :'tenant', code_id, :'share', :'share',
         decode(md5(code_id::text) || md5(n::text || code_id::text), 'hex'), 1, 'PG…NC'
  FROM bench_pairs;
ANALYZE;
