-- A tenant's time zone (an IANA name): the console shows its times, reads
-- its date inputs and counts its chart's days in it. Instants stay UTC.
ALTER TABLE tenants ADD COLUMN time_zone text NOT NULL DEFAULT 'UTC'
    CHECK (length(time_zone) BETWEEN 1 AND 64);
