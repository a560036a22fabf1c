-- The dashboard counts a tenant's recent access records by day, and the
-- reconciler matches access records to their outbox announcements.
CREATE INDEX access_records_recent ON access_records (tenant_id, granted_at);
CREATE INDEX outbox_access_announcements ON outbox (tenant_id, (payload->>'access_id'))
    WHERE event_type = 'access.recorded';
