-- A tenant's storage quota: the bytes of live resources (not removed) it
-- may hold. NULL: the configured `storage.tenant_quota_bytes`. An
-- operator sets a tenant's own (docs/operations/configuration.md); the upload
-- that would pass it is refused (engine/src/resources.rs, `add_resource`,
-- which counts under a per-tenant lock so that parallel uploads never
-- overfill it).
ALTER TABLE tenants
    ADD COLUMN storage_quota_bytes bigint
        CONSTRAINT tenants_storage_quota_not_negative CHECK (storage_quota_bytes >= 0);
