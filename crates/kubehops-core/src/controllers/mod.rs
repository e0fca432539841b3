//! Controllers outside the API server that act on Services: whatever
//! answers a `type: LoadBalancer` Service by filling `status.loadBalancer`.
//!
//! A cluster has one [`LbController`]: a cloud's controller manager with
//! its balancers ([`cloud`]), MetalLB's controller and speakers
//! ([`metallb`]), or nobody at all, in which case a LoadBalancer Service
//! stays `<pending>` for good, as it does on bare metal. [`gateway`] is
//! Envoy Gateway: the controller that turns a Gateway into a proxy behind
//! its own LoadBalancer Service, and the routes that proxy follows. A controller does not know the canvas: it reports what it did as
//! [`Event`]s between [`Party`]s, and the simulator turns those into hops.

pub mod cloud;
pub mod gateway;
pub mod metallb;

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
    /// MetalLB's speaker on node `node` (an index into the API server's nodes).
    Speaker { node: usize },
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

fn still_pending(svc: &crate::api::Service) -> Event {
    let mut e = Event::new(
        Party::ApiServer,
        Party::ApiServer,
        "still <pending>",
        format!("Time passes and Service {} is as it was: nobody has written status.loadBalancer, so EXTERNAL-IP is still <pending>. Waiting longer changes nothing.", svc.object_ref()),
    );
    e.ok = false;
    e
}

/// What fills `status.loadBalancer` in this cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum LbController {
    /// Nothing watches LoadBalancer Services: they stay `<pending>`.
    #[default]
    Nobody,
    Cloud(cloud::CloudController),
    MetalLb(metallb::MetalLb),
}

impl LbController {
    /// The API server's Services changed: answer those that need a balancer.
    pub fn services_changed(&mut self, api: &mut ApiServer, now: u64) -> Vec<Event> {
        match self {
            LbController::Nobody => Vec::new(),
            LbController::Cloud(c) => c.services_changed(api, now),
            LbController::MetalLb(m) => m.services_changed(api),
        }
    }

    /// Endpoints changed (a Pod's readiness): MetalLB's speakers re-elect.
    pub fn endpoints_changed(&mut self, api: &ApiServer) -> Vec<Event> {
        match self {
            LbController::MetalLb(m) => m.speakers_changed(api),
            _ => Vec::new(),
        }
    }

    /// With nobody to answer, the one message a LoadBalancer Service gets:
    /// none. Reported as a failed delivery at the API server, so a story
    /// can show the change that no controller picks up.
    pub fn unanswered(&self, svc: &crate::api::Service) -> Option<Event> {
        let pending = svc.spec.type_ == crate::api::ServiceType::LoadBalancer && svc.status.load_balancer_ingress.is_empty();
        if !matches!(self, LbController::Nobody) || !pending {
            return None;
        }
        let mut e = Event::new(
            Party::ApiServer,
            Party::ApiServer,
            "no controller watches",
            format!("The API server stores Service {} as type LoadBalancer, but no load-balancer controller runs in this cluster: no cloud-controller-manager, no MetalLB. Nobody watches for the change, so status.loadBalancer stays empty and EXTERNAL-IP stays <pending>, for good.", svc.object_ref()),
        );
        e.ok = false;
        Some(e)
    }

    /// Time has passed: finish what was asynchronous. With nobody to
    /// answer, time changes nothing, and each pending LoadBalancer says so.
    pub fn tick(&mut self, api: &mut ApiServer, now: u64) -> Vec<Event> {
        match self {
            LbController::Nobody => api.services().filter(|s| s.spec.type_ == crate::api::ServiceType::LoadBalancer && s.status.load_balancer_ingress.is_empty()).map(still_pending).collect(),
            LbController::MetalLb(_) => Vec::new(),
            LbController::Cloud(c) => c.tick(api, now),
        }
    }

    pub fn metallb(&self) -> Option<&metallb::MetalLb> {
        match self {
            LbController::MetalLb(m) => Some(m),
            _ => None,
        }
    }

    pub fn metallb_mut(&mut self) -> Option<&mut metallb::MetalLb> {
        match self {
            LbController::MetalLb(m) => Some(m),
            _ => None,
        }
    }

    pub fn cloud(&self) -> Option<&cloud::CloudProvider> {
        match self {
            LbController::Cloud(c) => Some(&c.provider),
            _ => None,
        }
    }

    pub fn cloud_mut(&mut self) -> Option<&mut cloud::CloudProvider> {
        match self {
            LbController::Cloud(c) => Some(&mut c.provider),
            _ => None,
        }
    }
}
