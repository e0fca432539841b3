//! Controllers outside the API server that act on Services: whatever
//! answers a `type: LoadBalancer` Service by filling `status.loadBalancer`.

pub mod cloud;
