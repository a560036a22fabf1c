-- Identity: tenants, platform-wide accounts, and tenant roles.
-- tenant_id leads every tenant-scoped key so that a distributed PostgreSQL
-- (e.g. Citus) can shard by tenant later.

CREATE TABLE tenants (
    id          uuid PRIMARY KEY,
    slug        text NOT NULL UNIQUE
                CHECK (slug ~ '^[a-z0-9]([a-z0-9-]{0,46}[a-z0-9])?$'),
    name        text NOT NULL CHECK (length(btrim(name)) BETWEEN 1 AND 120),
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- Learner accounts are platform-wide: the same person redeems codes of
-- several tenants. The principal id used for binding is accounts.id.
CREATE TABLE accounts (
    id             uuid PRIMARY KEY,
    email          text NOT NULL UNIQUE
                   CHECK (email = lower(btrim(email)) AND position('@' IN email) > 1),
    display_name   text NOT NULL CHECK (length(btrim(display_name)) BETWEEN 1 AND 80),
    password_hash  text NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    disabled_at    timestamptz
);

-- Tenant roles. Only admins need a row: every account may act as a learner.
CREATE TABLE tenant_members (
    tenant_id   uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    account_id  uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    role        text NOT NULL CHECK (role IN ('admin')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, account_id, role)
);
CREATE INDEX tenant_members_account ON tenant_members (account_id);
