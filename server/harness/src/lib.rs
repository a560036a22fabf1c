//! AdmitOne's test and measurement tooling, **never deployed**: the
//! binaries `loadgen` (`make bench`), `faults` (`make faults`), `soak`
//! (`make soak`), `mutate` (the SQL and Lua half of `make mutants`) and
//! `smtp-sink` (the Playwright journeys' mail server), [`drive`], the code
//! they share to drive a running server through its public JSON API,
//! [`mutation`], the mutants `mutate` runs, [`smtp`], a real SMTP server
//! the tests send to, [`s3`], a real S3 server (moto) the storage
//! tests store in, and [`pg_ha`], a highly available PostgreSQL
//! (pg_auto_failover) the failover tests kill the primary of.
//!
//! Why a crate of its own: the production `server` package builds only
//! what is deployed, and the only SQL outside `server/engine` (tests and
//! migrations aside) is here, where it counts as test code: setting up load
//! data and reading final state to check what the server promised. Every
//! query the engine already has is asked through the engine.

pub mod drive;
pub mod mutation;
pub mod pg_ha;
pub mod s3;
pub mod smtp;
