-- Shares, codes and the settlement records. The invariants of DESIGN.md live
-- in these constraints; the application only ever asks PostgreSQL to keep
-- them. tenant_id leads every key and index (a distributed PostgreSQL can
-- shard by tenant).

CREATE TABLE shares (
    tenant_id          uuid NOT NULL REFERENCES tenants (id),
    id                 uuid NOT NULL UNIQUE,
    slug               text NOT NULL UNIQUE
                       CHECK (slug ~ '^[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$'),
    title              text NOT NULL CHECK (length(btrim(title)) BETWEEN 1 AND 200),
    description        text NOT NULL DEFAULT '' CHECK (length(description) <= 10000),
    status             text NOT NULL DEFAULT 'draft'
                       CHECK (status IN ('draft', 'active', 'paused', 'archived')),
    valid_from         timestamptz,
    valid_until        timestamptz,
    -- How many accesses one learner may make (NULL: unlimited).
    per_learner_limit  integer CHECK (per_learner_limit > 0),
    -- How many accesses all learners together may make (NULL: unlimited).
    quota              integer CHECK (quota > 0),
    quota_used         integer NOT NULL DEFAULT 0
                       CHECK (quota_used >= 0 AND (quota IS NULL OR quota_used <= quota)),
    created_by         uuid NOT NULL REFERENCES accounts (id),
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    CHECK (valid_from IS NULL OR valid_until IS NULL OR valid_from < valid_until)
);

CREATE TABLE resources (
    tenant_id     uuid NOT NULL,
    id            uuid NOT NULL,
    share_id      uuid NOT NULL,
    kind          text NOT NULL CHECK (kind IN ('file', 'video', 'page')),
    title         text NOT NULL CHECK (length(btrim(title)) BETWEEN 1 AND 200),
    content_type  text NOT NULL,
    size_bytes    bigint NOT NULL CHECK (size_bytes >= 0),
    storage_key   text NOT NULL,
    position      integer NOT NULL DEFAULT 0,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, share_id) REFERENCES shares (tenant_id, id)
);
CREATE INDEX resources_by_share ON resources (tenant_id, share_id, position);

CREATE TABLE code_batches (
    tenant_id   uuid NOT NULL,
    id          uuid NOT NULL,
    share_id    uuid NOT NULL,
    label       text NOT NULL DEFAULT '' CHECK (length(label) <= 120),
    count       integer NOT NULL CHECK (count BETWEEN 1 AND 100000),
    created_by  uuid NOT NULL REFERENCES accounts (id),
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, share_id) REFERENCES shares (tenant_id, id)
);

-- One row per access code. The plain code is never stored: only its
-- HMAC-SHA256 digest under the key version that made it, and a masked hint.
CREATE TABLE auth_codes (
    tenant_id        uuid NOT NULL,
    id               uuid NOT NULL,
    share_id         uuid NOT NULL,
    batch_id         uuid NOT NULL,
    digest           bytea NOT NULL CHECK (length(digest) = 32),
    key_version      smallint NOT NULL,
    hint             text NOT NULL,
    bound_principal  uuid REFERENCES accounts (id),
    first_used_at    timestamptz,
    -- Accesses this learner made through this binding (per-learner limit).
    access_count     integer NOT NULL DEFAULT 0 CHECK (access_count >= 0),
    revoked_at       timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, share_id) REFERENCES shares (tenant_id, id),
    FOREIGN KEY (tenant_id, batch_id) REFERENCES code_batches (tenant_id, id),
    CHECK ((bound_principal IS NULL) = (first_used_at IS NULL))
);
-- Invariant: a digest names one code.
CREATE UNIQUE INDEX auth_codes_digest ON auth_codes (digest);
CREATE INDEX auth_codes_by_share ON auth_codes (tenant_id, share_id, id);
CREATE INDEX auth_codes_by_batch ON auth_codes (tenant_id, batch_id);
-- Invariant: in one share, an account holds at most one code.
CREATE UNIQUE INDEX auth_codes_one_per_learner
    ON auth_codes (tenant_id, share_id, bound_principal)
    WHERE bound_principal IS NOT NULL;

-- Invariant: a bound code never changes hands, except through the audited
-- unbind path, which sets admitone.unbind = 'on' for its transaction only.
CREATE FUNCTION auth_codes_keep_binding() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.bound_principal IS NOT NULL
       AND NEW.bound_principal IS DISTINCT FROM OLD.bound_principal
       AND coalesce(current_setting('admitone.unbind', true), '') <> 'on' THEN
        RAISE EXCEPTION 'code % is bound; only the audited unbind may change it', OLD.id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER auth_codes_keep_binding
    BEFORE UPDATE OF bound_principal ON auth_codes
    FOR EACH ROW EXECUTE FUNCTION auth_codes_keep_binding();

-- One row per counted access (see README "What one access is"). request_id
-- makes a retried attempt find its first result instead of counting again.
CREATE TABLE access_records (
    tenant_id     uuid NOT NULL,
    id            uuid NOT NULL,
    share_id      uuid NOT NULL,
    code_id       uuid NOT NULL,
    principal_id  uuid NOT NULL REFERENCES accounts (id),
    resource_id   uuid NOT NULL,
    request_id    text NOT NULL CHECK (length(request_id) BETWEEN 1 AND 200),
    bound_now     boolean NOT NULL,
    granted_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, share_id) REFERENCES shares (tenant_id, id),
    FOREIGN KEY (tenant_id, code_id) REFERENCES auth_codes (tenant_id, id),
    FOREIGN KEY (tenant_id, resource_id) REFERENCES resources (tenant_id, id)
);
CREATE UNIQUE INDEX access_records_request ON access_records (tenant_id, request_id);
CREATE INDEX access_records_live
    ON access_records (tenant_id, share_id, principal_id, resource_id, expires_at DESC);

-- Stored results of idempotent admin requests (Idempotency-Key).
CREATE TABLE idempotency_records (
    tenant_id     uuid NOT NULL,
    key           text NOT NULL CHECK (length(key) BETWEEN 1 AND 200),
    principal_id  uuid NOT NULL,
    operation     text NOT NULL,
    response      jsonb NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, key)
);

-- Events that leave the database, written in the same transaction as what
-- they report and relayed after commit.
CREATE TABLE outbox (
    tenant_id     uuid NOT NULL,
    id            uuid NOT NULL,
    event_type    text NOT NULL,
    payload       jsonb NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    available_at  timestamptz NOT NULL DEFAULT now(),
    attempts      integer NOT NULL DEFAULT 0,
    delivered_at  timestamptz,
    last_error    text,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX outbox_pending ON outbox (available_at) WHERE delivered_at IS NULL;

-- Who did what to what, for every admin action.
CREATE TABLE audit_log (
    tenant_id    uuid NOT NULL,
    id           uuid NOT NULL,
    actor_id     uuid REFERENCES accounts (id),
    action       text NOT NULL,
    target_type  text NOT NULL,
    target_id    uuid,
    reason       text,
    details      jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX audit_log_recent ON audit_log (tenant_id, created_at DESC);
