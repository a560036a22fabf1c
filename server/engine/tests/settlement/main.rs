//! The settlement at the engine's own door, against real PostgreSQL (a
//! database per test) and Redis (a key prefix per test).
//!
//! The server's concurrency suite drives the same code through HTTP with
//! hundreds of parallel requests; this suite reaches every branch of
//! phase 1, the reservation around the transaction and the transaction
//! itself one at a time, each with its exact final state checked in SQL.
//! Races that matter are made deterministic here: the test holds the lock
//! a concurrent attempt would hold, in its own transaction. It builds and
//! runs in seconds, which is what lets `make mutants` run it per mutant.

mod access_period;
mod account;
mod addressed;
mod directory;
mod expiry;
mod fixture;
mod grants;
mod quota;
mod reservation;
mod share_state;
mod tenancy;
mod transaction;
mod validation;
