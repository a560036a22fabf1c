-- pgbench (-M prepared): the settlement transaction as it was before issue
-- 18, for the "before" column of `make bench`: the same statements the app
-- ran one round trip each (the request id looked up per learner, as the
-- app did), ending with the share's one counter row that every first
-- access of the share updated (a bench table here: the column is gone).
\set n random(1, :pairs)
SELECT code_id AS code, account_id AS acct, share_id AS share, resource_id AS resource
  FROM bench_pairs WHERE layout = 'one' AND n = :n \gset
BEGIN;
SELECT code_id, resource_id, bound_now, expires_at FROM access_records
  WHERE tenant_id = :tenant AND principal_id = :acct AND request_id = md5(random()::text);
SELECT status, valid_from, valid_until, per_learner_limit FROM shares WHERE tenant_id = :tenant AND id = :share;
SELECT 1 FROM resources WHERE tenant_id = :tenant AND share_id = :share AND id = :resource AND deleted_at IS NULL FOR SHARE;
SELECT a.disabled_at IS NULL, a.email_verified_at IS NOT NULL OR NOT t.require_verified_email,
       EXISTS (SELECT 1 FROM suspended_learners s WHERE s.tenant_id = t.id AND s.account_id = a.id)
  FROM accounts a, tenants t WHERE a.id = :acct AND t.id = :tenant;
SELECT id, revoked_at IS NOT NULL FROM auth_codes
  WHERE tenant_id = :tenant AND share_id = :share AND bound_principal = :acct AND bound_principal IS NOT NULL FOR UPDATE;
UPDATE auth_codes SET bound_principal = :acct, first_used_at = now()
  WHERE tenant_id = :tenant AND share_id = :share AND id = :code AND bound_principal IS NULL AND revoked_at IS NULL RETURNING id;
SELECT expires_at FROM access_records WHERE tenant_id = :tenant AND share_id = :share AND principal_id = :acct
  AND resource_id = :resource AND expires_at > now() + interval '7 hours' ORDER BY expires_at DESC LIMIT 1;
UPDATE auth_codes SET access_count = access_count + 1 WHERE tenant_id = :tenant AND id = :code;
INSERT INTO access_records (tenant_id, id, share_id, code_id, principal_id, resource_id, request_id, bound_now, expires_at)
  VALUES (:tenant, gen_random_uuid(), :share, :code, :acct, :resource, gen_random_uuid()::text, true, now() + interval '6 hours');
INSERT INTO outbox (tenant_id, id, event_type, payload) VALUES (:tenant, gen_random_uuid(), 'code.bound', '{}');
INSERT INTO mail_outbox (id, tenant_id, account_id, template, to_address, lang, params)
  SELECT gen_random_uuid(), :tenant, a.id, 'code_bound', a.email, a.lang,
         jsonb_build_object('course', s.title, 'course_slug', s.slug, 'tenant', t.name) || '{}'::jsonb
  FROM accounts a JOIN shares s ON s.tenant_id = :tenant AND s.id = :share JOIN tenants t ON t.id = :tenant
  WHERE a.id = :acct;
INSERT INTO outbox (tenant_id, id, event_type, payload) VALUES (:tenant, gen_random_uuid(), 'access.recorded', '{}');
UPDATE bench_share_counter SET quota_used = quota_used + 1 WHERE quota_used < 2000000000;
COMMIT;
