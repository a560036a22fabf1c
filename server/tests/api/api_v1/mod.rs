//! The JSON API `/api/v1` as an integration uses it: the console's journey
//! done with an API token alone, what it hands over once, `Idempotency-Key`,
//! problem documents and the OpenAPI document.

mod handover;
mod idempotency;
mod journey;
pub(crate) mod mailings;
mod openapi;
mod orders;
mod problems;
mod recipients;
mod refunds;
mod retry_storms;
pub(crate) mod shops;
