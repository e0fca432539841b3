//! Controllers outside the API server that act on Services: whatever
//! answers a `type: LoadBalancer` Service by filling `status.loadBalancer`.
//!
//! A cluster has one [`LbController`]: a cloud's controller manager with
//! its balancers ([`cloud`]), or nobody at all, in which case a
//! LoadBalancer Service stays `<pending>` for good, as it does on bare
//! metal. A controller does not know the canvas: it reports what it did as
//! [`Event`]s between [`Party`]s, and the simulator turns those into hops.

pub mod cloud;

use crate::api::server::ApiServer;
use crate::api::ObjectRef;
use serde::{Deserialize, Serialize};

/// The ends of a controller's messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Party {
    ApiServer,
    /// The controller itself.
    Controller,
    /// The load balancer it manages.
    Balancer,
}

/// One message a controller sent or received.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    pub from: Party,
    pub to: Party,
    /// False when the request failed (no free address, for one).
    pub ok: bool,
    pub caption: String,
    pub detail: String,
    /// Set when the event wrote a Service's status: kube-proxy must catch up.
    pub status_of: Option<ObjectRef>,
}

impl Event {
    pub fn new(from: Party, to: Party, caption: impl Into<String>, detail: impl Into<String>) -> Event {
        Event { from, to, ok: true, caption: caption.into(), detail: detail.into(), status_of: None }
    }
}

/// What fills `status.loadBalancer` in this cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum LbController {
    /// Nothing watches LoadBalancer Services: they stay `<pending>`.
    #[default]
    Nobody,
    Cloud(cloud::CloudController),
}

impl LbController {
    /// The API server's Services changed: answer those that need a balancer.
    pub fn services_changed(&mut self, api: &ApiServer, now: u64) -> Vec<Event> {
        match self {
            LbController::Nobody => Vec::new(),
            LbController::Cloud(c) => c.services_changed(api, now),
        }
    }

    /// Time has passed: finish what was asynchronous.
    pub fn tick(&mut self, api: &mut ApiServer, now: u64) -> Vec<Event> {
        match self {
            LbController::Nobody => Vec::new(),
            LbController::Cloud(c) => c.tick(api, now),
        }
    }

    pub fn cloud(&self) -> Option<&cloud::CloudProvider> {
        match self {
            LbController::Cloud(c) => Some(&c.provider),
            LbController::Nobody => None,
        }
    }

    pub fn cloud_mut(&mut self) -> Option<&mut cloud::CloudProvider> {
        match self {
            LbController::Cloud(c) => Some(&mut c.provider),
            LbController::Nobody => None,
        }
    }
}
