-- The contract half of 20261213000001_tenant_directory.sql: the global
-- unique keys of the tenants' tables go (docs/design/tenancy.md).
--
-- Since that migration every look-up that arrives without a tenant (a
-- share link, a bearer token, an invitation or a transfer link, a logo)
-- goes through the `directory` schema, whose primary keys keep each of
-- them unique across the platform, and everything else is read by
-- (tenant_id, …). The release before this one (the directory's) names
-- none of the keys dropped here: its only `ON CONFLICT` on these tables
-- has no target, and a share link another tenant holds fails on
-- `share_links_pkey` in the directory's trigger, which both releases
-- answer "taken". So both run side by side during a rolling deploy.
--
-- What changes: an import of a code in our format that another tenant
-- holds is no longer refused as `already_exists` (a typed code is only
-- ever looked up in its share's tenant, so the two never meet).
--
-- Dropping an index takes its table's lock for an instant; nothing is
-- rebuilt. But the lock must first be granted: behind a long reader (a
-- dump, a report) the migration would wait holding the locks it already
-- has, and code entry with it. So it gives up after 2 s instead, and
-- `server migrate` can simply be run again at a quieter moment.
SET LOCAL lock_timeout = '2s';

ALTER TABLE shares DROP CONSTRAINT shares_slug_key;
ALTER TABLE shares DROP CONSTRAINT shares_id_key;
DROP INDEX auth_codes_digest;
DROP INDEX auth_codes_id;
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_digest_key;
ALTER TABLE tenant_invitations DROP CONSTRAINT tenant_invitations_digest_key;
DROP INDEX transfer_requests_digest;
ALTER TABLE tenant_logos DROP CONSTRAINT tenant_logos_id_key;
