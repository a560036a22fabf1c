-- Webhooks: tenants name HTTP(S) endpoints (public addresses only, checked
-- by the relay) that receive the outbox's events,
-- signed with a per-endpoint secret. The relay fans each outbox event out
-- into one delivery per matching endpoint (marking the event relayed), then
-- delivers with retries; a delivery that keeps failing is dead-lettered and
-- waits for an admin's "redeliver". Rows are claimed with
-- FOR UPDATE SKIP LOCKED plus a lease, so any number of instances relay.
CREATE TABLE webhook_endpoints (
    tenant_id    uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id           uuid NOT NULL,
    url          text NOT NULL CHECK (url ~ '^https?://' AND length(url) <= 2000),
    -- The HMAC-SHA256 key. Kept in full: signing needs it. Shown to the
    -- admin once, when the endpoint is created.
    secret       text NOT NULL,
    events       text[] NOT NULL CHECK (
        cardinality(events) >= 1
        AND events <@ ARRAY['code.bound', 'code.unbound', 'code.revoked', 'access.recorded', 'batch.issued']
    ),
    created_by   uuid NOT NULL REFERENCES accounts (id),
    created_at   timestamptz NOT NULL DEFAULT now(),
    disabled_at  timestamptz,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE webhook_deliveries (
    tenant_id        uuid NOT NULL,
    endpoint_id      uuid NOT NULL,
    event_id         uuid NOT NULL,
    attempts         integer NOT NULL DEFAULT 0,
    -- Due time; a claimed delivery is pushed into the future by its lease.
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    delivered_at     timestamptz,
    dead_at          timestamptz,
    last_status      integer,
    last_error       text,
    PRIMARY KEY (tenant_id, endpoint_id, event_id),
    FOREIGN KEY (tenant_id, endpoint_id) REFERENCES webhook_endpoints (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, event_id) REFERENCES outbox (tenant_id, id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at)
    WHERE delivered_at IS NULL AND dead_at IS NULL;
CREATE INDEX webhook_deliveries_dead ON webhook_deliveries (tenant_id, dead_at)
    WHERE dead_at IS NOT NULL AND delivered_at IS NULL;
