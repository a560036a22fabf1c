-- Refunds out (docs/design/orders.md#refunds): what a shop's refund or
-- chargeback does to the order's codes, chosen per share, and the
-- refund recorded on the order once.
--
-- A share's **refund policy** (`refund_policies`; no row: `revoke`, no
-- grace) is either `revoke` (the order's unused codes at once, its bound
-- ones when `bound_grace_hours` have passed, 0: at once) or `flag` (no
-- code is revoked; the order is marked refunded for the creator to act).
-- A **refund** is written on the order row, once: a shop's retry, or a
-- chargeback after a refund, finds it there and changes nothing. The
-- grace's end (`revoke_bound_at`) is a moment the server's refund sweeper
-- acts on (`engine::refunds::revoke_due`); `bound_revoked_at` says it did.
--
-- Rolling deploys: the release before this one reads none of the new
-- table and columns, and writes none of them.
--
-- Locks: `orders` is held (reads and writes wait) from its ALTER to the
-- commit: the new columns' own checks are checked against every row (all
-- NULL), and the partial index reads the table once. `orders` began this
-- month and is small; on a large one, build the index CONCURRENTLY in a
-- migration of its own, as 20261215000002 does.
SET LOCAL lock_timeout = '2s';

CREATE TABLE refund_policies (
    tenant_id          uuid NOT NULL,
    share_id           uuid NOT NULL,
    action             text NOT NULL CHECK (action IN ('revoke', 'flag')),
    -- How long a learner who bound a refunded order's code keeps it
    -- (hours, at most 90 days); only with `revoke`.
    bound_grace_hours  integer NOT NULL DEFAULT 0
                       CHECK (bound_grace_hours BETWEEN 0 AND 2160),
    updated_by         uuid NOT NULL REFERENCES accounts (id),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, share_id),
    FOREIGN KEY (tenant_id, share_id) REFERENCES shares (tenant_id, id) ON DELETE CASCADE,
    CHECK (action = 'revoke' OR bound_grace_hours = 0)
);

ALTER TABLE orders
    ADD COLUMN refund_kind text CHECK (refund_kind IN ('refund', 'chargeback')),
    -- The policy as it was applied (a later change of the share's policy
    -- does not reach back).
    ADD COLUMN refund_action text CHECK (refund_action IN ('revoke', 'flag')),
    ADD COLUMN refund_reason text CHECK (length(refund_reason) BETWEEN 1 AND 500),
    ADD COLUMN refunded_by uuid REFERENCES accounts (id),
    ADD COLUMN refunded_at timestamptz,
    -- When the order's bound codes are revoked (the grace's end); NULL
    -- once done, or when nothing waits.
    ADD COLUMN revoke_bound_at timestamptz,
    -- When the sweeper tries again after a failed grace end (NULL: at
    -- the grace's end).
    ADD COLUMN revoke_retry_at timestamptz,
    ADD COLUMN bound_revoked_at timestamptz,
    ADD CONSTRAINT orders_refund_whole
        CHECK (num_nulls(refund_kind, refund_action, refunded_at) IN (0, 3)) NOT VALID,
    ADD CONSTRAINT orders_grace_only_when_revoking
        CHECK ((revoke_bound_at IS NULL AND bound_revoked_at IS NULL) OR refund_action = 'revoke') NOT VALID;

-- The sweeper's queue: refunded orders whose bound codes wait for the
-- grace's end.
CREATE INDEX orders_refund_due ON orders (revoke_bound_at) WHERE revoke_bound_at IS NOT NULL;
