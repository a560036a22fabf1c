-- Tenant API tokens: for scripts and shop integrations calling /api/v1 as
-- an admin of one tenant. Only a SHA-256 digest of the token is stored (the
-- token is 256 random bits, shown once); a token acts as the admin who
-- created it, and stops working when that admin loses the role.
CREATE TABLE api_tokens (
    tenant_id     uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id            uuid NOT NULL,
    name          text NOT NULL CHECK (length(btrim(name)) BETWEEN 1 AND 80),
    scopes        text[] NOT NULL CHECK (cardinality(scopes) >= 1 AND scopes <@ ARRAY['read', 'write']),
    digest        bytea NOT NULL UNIQUE,
    created_by    uuid NOT NULL REFERENCES accounts (id),
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_used_at  timestamptz,
    revoked_at    timestamptz,
    PRIMARY KEY (tenant_id, id)
);
