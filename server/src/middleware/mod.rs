//! The request layers `startup::router` wraps around every route, outermost
//! first as they meet a request: [`panic`] (a panic anywhere becomes an
//! answer with a reference), [`headers`] (security headers, `no-store`),
//! [`server_fn_errors`] (every error answer on a server function's path is
//! the pages' `AppError`, whoever made it), [`deadline`] (a request past its
//! time budget answers 503), [`hosts`] (only the server's own names are
//! answered), [`csrf`] (state-changing requests come from this site) and [`outage`] (a session store that cannot answer is a 503,
//! not a 500). Each answers on its own only with the one problem document
//! (`crate::problem`).

pub mod csrf;
pub mod deadline;
pub mod headers;
pub mod hosts;
pub mod outage;
pub mod owner;
pub mod panic;
pub mod server_fn_errors;
