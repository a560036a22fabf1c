//! The harness every integration test uses: the test server and its
//! settings (`app`), mail (`mail`), processes a test starts on its own
//! (`processes`), and fixtures for courses, API tokens, the console, the
//! learner's pages and transfer requests. `server/tests/metrics` includes
//! this module too.

pub mod app;
pub mod console;
pub mod course;
pub mod learner;
pub mod mail;
pub mod processes;
pub mod tokens;
pub mod transfers;
