-- Shops' signed webhooks (docs/design/shops.md): a tenant connects a shop
-- (Stripe, Lemon Squeezy, Shopify, Gumroad), says which of its products
-- is which share, and the shop's own webhooks then place and refund
-- orders (`engine::shops`, through `engine::orders` and
-- `engine::refunds`, whose unique key on `(tenant, source, order_ref)`
-- is what keeps a sale from being issued twice).
--
-- Rolling deploys: four new tables; the release before this one reads
-- none of them and has no route that writes them. Connect no shop until
-- every instance runs this release (an older one answers a shop's
-- delivery 404, and the shop retries it later).
--
-- Locks: new tables only; the foreign keys take `tenants`, `accounts`,
-- `shares` and `orders` for an instant (no row to check). The same 2 s
-- `lock_timeout` as the migrations before it: if it times out, run
-- `server migrate` again.
SET LOCAL lock_timeout = '2s';

CREATE TABLE shop_integrations (
    tenant_id        uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    -- Random (v4); the webhook's URL names it with its tenant:
    -- `/hooks/shops/{tenant_id}/{id}` (every key leads with the tenant,
    -- docs/design/tenancy.md).
    id               uuid NOT NULL,
    provider         text NOT NULL
                     CHECK (provider IN ('stripe', 'lemonsqueezy', 'shopify', 'gumroad')),
    name             text NOT NULL CHECK (length(name) BETWEEN 1 AND 80),
    -- The `source` of the orders this shop places (`stripe-1a2b3c4d`):
    -- its own, so that its refunds reach its orders only (not another
    -- shop's of the same kind, nor an order placed through the API).
    order_source     text NOT NULL CHECK (order_source ~ '^[a-z]+-[0-9a-f]{8}$'),
    -- The shop's signing secret (Stripe's `whsec_…`, Lemon Squeezy's
    -- signing secret, Shopify's app secret), or the one AdmitOne drew for
    -- Gumroad's URL. Kept in full: verifying needs it. Never answered.
    secret           text NOT NULL CHECK (length(secret) BETWEEN 16 AND 512),
    -- The secret before the last rotation, still accepted until
    -- `previous_until` (a shop's deliveries already signed with it).
    previous_secret  text CHECK (length(previous_secret) BETWEEN 16 AND 512),
    previous_until   timestamptz,
    created_by       uuid NOT NULL REFERENCES accounts (id),
    created_at       timestamptz NOT NULL DEFAULT now(),
    disabled_at      timestamptz,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, order_source),
    CHECK ((previous_secret IS NULL) = (previous_until IS NULL))
);

-- Which product of the shop is which share: one product, one share.
CREATE TABLE shop_products (
    tenant_id       uuid NOT NULL,
    integration_id  uuid NOT NULL,
    -- The shop's product id (Stripe: the Checkout Session's
    -- `metadata.admitone_product`, else its payment link; Lemon Squeezy
    -- and Shopify: the product id; Gumroad: `product_id`).
    product_ref     text NOT NULL CHECK (length(product_ref) BETWEEN 1 AND 200),
    share_id        uuid NOT NULL,
    created_by      uuid NOT NULL REFERENCES accounts (id),
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, integration_id, product_ref),
    FOREIGN KEY (tenant_id, integration_id)
        REFERENCES shop_integrations (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, share_id) REFERENCES shares (tenant_id, id)
);

-- A refund that came before its sale was placed (the sale's product not
-- connected yet, or a fault while placing it): the sale, once placed,
-- is refunded at once. Written by the refund, read by the sale, each
-- after its own write, so that whichever commits second sees the other.
CREATE TABLE shop_early_refunds (
    tenant_id       uuid NOT NULL,
    integration_id  uuid NOT NULL,
    order_ref       text NOT NULL CHECK (length(order_ref) BETWEEN 1 AND 200),
    kind            text NOT NULL CHECK (kind IN ('refund', 'chargeback')),
    received_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, integration_id, order_ref),
    FOREIGN KEY (tenant_id, integration_id)
        REFERENCES shop_integrations (tenant_id, id) ON DELETE CASCADE
);

-- Every delivery a shop made, stored before it is acted on: the console's
-- "Shop events" (received, acted on, ignored, refused and why).
CREATE TABLE shop_events (
    tenant_id       uuid NOT NULL,
    id              uuid NOT NULL,
    integration_id  uuid NOT NULL,
    received_at     timestamptz NOT NULL DEFAULT now(),
    -- The shop's event type (`checkout.session.completed`, `orders/paid`,
    -- …) and id, when the delivery said (and was verified).
    kind            text CHECK (length(kind) <= 100),
    event_ref       text CHECK (length(event_ref) <= 200),
    -- The body as it came (at most 256 KiB); empty for a delivery whose
    -- signature failed (anyone can post to the URL: what they sent is
    -- not kept).
    body            bytea NOT NULL,
    -- `received` until acted on: a delivery left `received` failed
    -- midway (the shop retries it; acting is idempotent).
    outcome         text NOT NULL DEFAULT 'received'
                    CHECK (outcome IN ('received', 'acted', 'ignored', 'refused')),
    -- Why it was ignored or refused (English, for the console).
    reason          text CHECK (length(reason) <= 500),
    -- The orders it placed or refunded.
    order_ids       uuid[] NOT NULL DEFAULT '{}',
    decided_at      timestamptz,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, integration_id)
        REFERENCES shop_integrations (tenant_id, id) ON DELETE CASCADE,
    CHECK ((outcome = 'received') = (decided_at IS NULL))
);

CREATE INDEX shop_events_recent ON shop_events (tenant_id, integration_id, received_at DESC);
