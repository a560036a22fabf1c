//! Every Redis key AdmitOne writes is spelled here and nowhere else.
//!
//! Keys that one script touches together share a `{…}` hash tag so that
//! Redis Cluster stores them in one slot; the prefix lets deployments and
//! tests share a server without seeing each other's keys.

use std::sync::Arc;

/// Builds the keys of one deployment (or one test).
#[derive(Debug, Clone)]
pub struct Keys {
    prefix: Arc<str>,
}

impl Keys {
    pub fn new(prefix: &str) -> Self {
        Self {
            prefix: Arc::from(prefix),
        }
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }
}
