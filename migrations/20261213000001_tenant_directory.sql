-- Tenant-led keys, ready for sharding by tenant (docs/design/tenancy.md).
--
-- A few things arrive before anybody knows their tenant: a share's public
-- link (/s/{slug}), a bearer token, an invitation or a transfer link (each
-- a secret whose digest we keep), a logo's URL. Until now each was found
-- through a global unique index on the tenant's own table. A database
-- sharded by tenant can keep a unique index only when it leads with the
-- shard key, so those look-ups move to a small global directory, the
-- schema `directory`: key -> tenant, one narrow table per kind of key,
-- each key unique across the platform by its primary key. The tenant's
-- tables get the same keys led by `tenant_id`, and every look-up goes
-- directory first, then the tenant's rows.
--
-- Triggers keep the directory in step with the tables, in the same
-- transaction as the write, whichever code (or release, or psql session)
-- writes: a second tenant's share with a taken link fails on
-- `share_links_pkey` as it failed on `shares_slug_key` before.
--
-- This is the expand half. The global indexes stay for now, because the
-- release before this one still names them (`ON CONFLICT (slug)`,
-- `ON CONFLICT (digest)`) and still reads by id or digest alone while a
-- rolling deploy runs both; a later release's migration drops them
-- (migrations/README.md: add before you remove).
--
-- The new unique indexes are built under this migration's lock: on a
-- large `auth_codes` that is about 2 s per million codes, during
-- which code entry waits (docs/operations/deploying.md).

CREATE SCHEMA directory;

-- A share's public link -> its tenant.
CREATE TABLE directory.share_links (
    slug      text PRIMARY KEY,
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE
);
CREATE INDEX share_links_tenant ON directory.share_links (tenant_id);

-- The digest of a secret that arrives alone (a bearer token, an
-- invitation link, a transfer confirmation link) -> its tenant.
CREATE TABLE directory.secrets (
    digest    bytea PRIMARY KEY,
    kind      text NOT NULL CHECK (kind IN ('api_token', 'invitation', 'transfer')),
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE
);
CREATE INDEX secrets_tenant ON directory.secrets (tenant_id);

-- A logo's id, as public pages and mails link to it -> its tenant.
CREATE TABLE directory.logos (
    id        uuid PRIMARY KEY,
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE
);
CREATE INDEX logos_tenant ON directory.logos (tenant_id);

-- The keys of the tenant's tables, led by the tenant.
CREATE UNIQUE INDEX shares_tenant_slug ON shares (tenant_id, slug);
CREATE UNIQUE INDEX auth_codes_tenant_digest ON auth_codes (tenant_id, digest);
CREATE UNIQUE INDEX api_tokens_tenant_digest ON api_tokens (tenant_id, digest);
CREATE UNIQUE INDEX tenant_invitations_tenant_digest ON tenant_invitations (tenant_id, digest);
CREATE UNIQUE INDEX transfer_requests_tenant_digest ON transfer_requests (tenant_id, digest);
-- (`tenant_logos` is keyed by `tenant_id` alone: one logo per tenant.)

-- shares.slug -> directory.share_links.
CREATE FUNCTION directory.keep_share_link() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        DELETE FROM directory.share_links
        WHERE slug = OLD.slug AND tenant_id = OLD.tenant_id;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO directory.share_links (slug, tenant_id) VALUES (NEW.slug, NEW.tenant_id);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER shares_directory
    AFTER INSERT OR DELETE ON shares
    FOR EACH ROW EXECUTE FUNCTION directory.keep_share_link();
CREATE TRIGGER shares_directory_moved
    AFTER UPDATE OF slug, tenant_id ON shares
    FOR EACH ROW WHEN (OLD.slug IS DISTINCT FROM NEW.slug OR OLD.tenant_id IS DISTINCT FROM NEW.tenant_id)
    EXECUTE FUNCTION directory.keep_share_link();

-- `digest` -> directory.secrets, for each table named in a trigger below
-- (its first argument is the kind).
CREATE FUNCTION directory.keep_secret() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        DELETE FROM directory.secrets
        WHERE digest = OLD.digest AND tenant_id = OLD.tenant_id AND kind = TG_ARGV[0];
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO directory.secrets (digest, kind, tenant_id)
        VALUES (NEW.digest, TG_ARGV[0], NEW.tenant_id);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER api_tokens_directory
    AFTER INSERT OR DELETE ON api_tokens
    FOR EACH ROW EXECUTE FUNCTION directory.keep_secret('api_token');
CREATE TRIGGER api_tokens_directory_moved
    AFTER UPDATE OF digest, tenant_id ON api_tokens
    FOR EACH ROW WHEN (OLD.digest IS DISTINCT FROM NEW.digest OR OLD.tenant_id IS DISTINCT FROM NEW.tenant_id)
    EXECUTE FUNCTION directory.keep_secret('api_token');
CREATE TRIGGER tenant_invitations_directory
    AFTER INSERT OR DELETE ON tenant_invitations
    FOR EACH ROW EXECUTE FUNCTION directory.keep_secret('invitation');
CREATE TRIGGER tenant_invitations_directory_moved
    AFTER UPDATE OF digest, tenant_id ON tenant_invitations
    FOR EACH ROW WHEN (OLD.digest IS DISTINCT FROM NEW.digest OR OLD.tenant_id IS DISTINCT FROM NEW.tenant_id)
    EXECUTE FUNCTION directory.keep_secret('invitation');
CREATE TRIGGER transfer_requests_directory
    AFTER INSERT OR DELETE ON transfer_requests
    FOR EACH ROW EXECUTE FUNCTION directory.keep_secret('transfer');
CREATE TRIGGER transfer_requests_directory_moved
    AFTER UPDATE OF digest, tenant_id ON transfer_requests
    FOR EACH ROW WHEN (OLD.digest IS DISTINCT FROM NEW.digest OR OLD.tenant_id IS DISTINCT FROM NEW.tenant_id)
    EXECUTE FUNCTION directory.keep_secret('transfer');

-- tenant_logos.id -> directory.logos.
CREATE FUNCTION directory.keep_logo() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        DELETE FROM directory.logos WHERE id = OLD.id AND tenant_id = OLD.tenant_id;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO directory.logos (id, tenant_id) VALUES (NEW.id, NEW.tenant_id);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER tenant_logos_directory
    AFTER INSERT OR DELETE ON tenant_logos
    FOR EACH ROW EXECUTE FUNCTION directory.keep_logo();
CREATE TRIGGER tenant_logos_directory_moved
    AFTER UPDATE OF id, tenant_id ON tenant_logos
    FOR EACH ROW WHEN (OLD.id IS DISTINCT FROM NEW.id OR OLD.tenant_id IS DISTINCT FROM NEW.tenant_id)
    EXECUTE FUNCTION directory.keep_logo();

-- What is there already (unique today by the global indexes, so no
-- conflicts).
INSERT INTO directory.share_links (slug, tenant_id) SELECT slug, tenant_id FROM shares;
INSERT INTO directory.secrets (digest, kind, tenant_id)
    SELECT digest, 'api_token', tenant_id FROM api_tokens
    UNION ALL SELECT digest, 'invitation', tenant_id FROM tenant_invitations
    UNION ALL SELECT digest, 'transfer', tenant_id FROM transfer_requests;
INSERT INTO directory.logos (id, tenant_id) SELECT id, tenant_id FROM tenant_logos;
