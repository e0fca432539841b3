//! The Kubernetes API as Service networking sees it: the objects
//! ([`objects`], re-exported here), the API server that admits them
//! ([`server`]) and kubectl's table of them ([`kubectl`]).

mod objects;
pub mod kubectl;
pub mod server;

pub use objects::*;
