-- A delivery's attempt number is its lease's token: a relay records an
-- attempt only while the row's number is still the one it leased
-- (`webhooks::relay::record`). Putting a dead letter back in line used to
-- set the number back to 0, so a relay that had stalled past an early
-- lease could find its number current again and record over the new
-- lease. The number now only ever grows; the retry budget a redelivery
-- starts afresh is counted from here instead.
--
-- The new column's constant default is written without a table rewrite.
-- The CHECK is NOT VALID: it holds for every row written from now on, and
-- every existing row has 0 there, which no attempt count is below; so no
-- scan of the (never pruned) table under this migration's exclusive lock.
ALTER TABLE webhook_deliveries
    ADD COLUMN attempts_before_redelivery integer NOT NULL DEFAULT 0,
    ADD CONSTRAINT webhook_deliveries_redelivery_within_attempts
        CHECK (attempts_before_redelivery BETWEEN 0 AND attempts) NOT VALID;
