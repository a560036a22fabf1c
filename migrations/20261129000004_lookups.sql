-- Look-ups the API makes by code id (authorising `/codes/{id}/…`) and by
-- code (ending a code's live grants at revoke/unbind) get their own indexes.
CREATE UNIQUE INDEX auth_codes_id ON auth_codes (id);
CREATE INDEX access_records_by_code ON access_records (tenant_id, code_id, expires_at);

-- A request id is the caller's: two learners may pick the same one without
-- seeing (or blocking) each other's results.
DROP INDEX access_records_request;
CREATE UNIQUE INDEX access_records_request ON access_records (tenant_id, principal_id, request_id);
