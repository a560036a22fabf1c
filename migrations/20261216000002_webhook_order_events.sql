-- Endpoints may subscribe to the order events: `order.placed` (named by
-- the API since 20261215000001, but refused by this check, so asking for
-- it was a 500) and `order.refunded` (20261216000001). The check lists
-- what `engine::webhooks::EVENTS` lists; the test
-- `every_event_the_api_names_can_be_subscribed_to` keeps them one list.
--
-- Rolling deploys: the release before this one names `order.placed` too,
-- and may subscribe to it once this check allows it (what it always
-- meant to); it names no `order.refunded`. Locks: `webhook_endpoints`
-- (at most ten rows a tenant) is held, reads included (the webhook
-- relay's), while the new constraint is checked against its rows.
SET LOCAL lock_timeout = '2s';

ALTER TABLE webhook_endpoints DROP CONSTRAINT webhook_endpoints_events_check,
    ADD CONSTRAINT webhook_endpoints_events_check CHECK (
        cardinality(events) >= 1
        AND events <@ ARRAY['code.bound', 'code.unbound', 'code.revoked', 'code.replaced',
                            'code.transferred', 'code.leak_suspected', 'access.recorded',
                            'batch.issued', 'order.placed', 'order.refunded']
    );
