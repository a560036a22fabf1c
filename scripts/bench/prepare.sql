-- Data for settle.sql and settle_before.sql: 100 shares with a quota (their
-- slots made by share_quota_rebalance, as the app does), one resource each,
-- and two sets of :pairs (code, account) pairs in bench_pairs: layout 'one',
-- every code in the first share; 'many', codes spread over the 100 shares.
-- Run with: psql -v tenant=… -v admin=… -v pairs=…
BEGIN;
CREATE TABLE bench_shares AS
  SELECT i, gen_random_uuid() AS share_id, gen_random_uuid() AS resource_id FROM generate_series(0, 99) i;
INSERT INTO shares (tenant_id, id, slug, title, status, quota, created_by)
  SELECT :'tenant', share_id, 'pgbench-' || left(md5(share_id::text), 12), 'pgbench', 'active', 1000000000, :'admin'
  FROM bench_shares;
SELECT share_quota_rebalance(:'tenant', share_id, 1000000000) FROM bench_shares;
COMMIT;
INSERT INTO resources (tenant_id, id, share_id, kind, title, content_type, size_bytes, storage_key)
  SELECT :'tenant', resource_id, share_id, 'video', 'Lesson', 'video/mp4', 0, 'none' FROM bench_shares;
INSERT INTO code_batches (tenant_id, id, share_id, label, count, created_by)
  SELECT :'tenant', share_id, share_id, 'pgbench', 100000, :'admin' FROM bench_shares;
CREATE TABLE bench_pairs (layout text NOT NULL, n integer NOT NULL, code_id uuid NOT NULL,
                          account_id uuid NOT NULL, share_id uuid NOT NULL, resource_id uuid NOT NULL,
                          PRIMARY KEY (layout, n));
INSERT INTO bench_pairs
  SELECT 'one', n, gen_random_uuid(), gen_random_uuid(), s.share_id, s.resource_id
  FROM generate_series(1, :pairs) n, bench_shares s WHERE s.i = 0;
INSERT INTO bench_pairs
  SELECT 'many', n, gen_random_uuid(), gen_random_uuid(), s.share_id, s.resource_id
  FROM generate_series(1, :pairs) n JOIN bench_shares s ON s.i = n % 100;
INSERT INTO accounts (id, email, display_name, password_hash, email_verified_at)
  SELECT account_id, 'pgbench-' || layout || '-' || n || '@example.com', 'pgbench', 'x', now() FROM bench_pairs;
INSERT INTO auth_codes (tenant_id, id, share_id, batch_id, digest, key_version, hint)
  SELECT :'tenant', code_id, share_id, share_id,
         decode(md5(code_id::text) || md5(layout || n::text || code_id::text), 'hex'), 1, 'PG…NC'
  FROM bench_pairs;
-- The one counter row of the "before" form.
CREATE TABLE bench_share_counter (quota_used integer NOT NULL);
INSERT INTO bench_share_counter VALUES (0);
ANALYZE;
