-- One tenant's endpoint must not hold up everyone's deliveries. An
-- endpoint that answers nothing costs the relay a whole timeout per
-- attempt: after `webhooks::relay::PAUSE_AFTER_TIMEOUTS` timeouts in a row
-- it is paused (`paused_until`, `webhooks.pause_ms`, doubling), and the
-- relay leases none of its deliveries meanwhile. An answer, or a new URL,
-- ends the count.
ALTER TABLE webhook_endpoints
    ADD COLUMN consecutive_timeouts integer NOT NULL DEFAULT 0
        CHECK (consecutive_timeouts >= 0),
    ADD COLUMN paused_until timestamptz;
