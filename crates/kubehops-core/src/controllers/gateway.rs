//! Envoy Gateway: Gateway API objects, the Service its controller makes
//! for each Gateway, and the routing decision its Envoy proxy takes for
//! one HTTP request.
//!
//! For a Gateway `ns/name` the controller runs Envoy in
//! `envoy-gateway-system` behind a LoadBalancer Service named
//! `envoy-<ns>-<name>-<first 8 hex digits of SHA-256 of "ns/name">`
//! (Envoy Gateway's `ExpectedResourceHashedName`), with
//! externalTrafficPolicy Local (its default) and each listener port below
//! 1024 moved up by 10000 inside the container (Envoy runs unprivileged:
//! 80 becomes 10080).
//!
//! Envoy terminates the client's connection and opens its own to a
//! backend. With Envoy Gateway's default routing type (`Endpoint`) it
//! connects to one of the backend Service's endpoints, read from its
//! EndpointSlices, not to its cluster IP. A request that matches no
//! route gets Envoy's 404; a route whose backend has no ready endpoint,
//! 503.
//!
//! Route matching follows the Gateway API: a route's hostnames match the
//! request's Host exactly or by a leading `*.` wildcard (no hostnames
//! matches any), and a PathPrefix matches whole path segments (`/book`
//! matches `/book` and `/book/x`, not `/booking`). An exact hostname
//! beats a wildcard, a longer prefix a shorter one.

use crate::api::{Labels, Service, ServicePort, ServiceSpec, ServiceType, TrafficPolicy};
use crate::net::Protocol;
use serde::{Deserialize, Serialize};

/// Where Envoy Gateway runs and puts its proxies.
pub const NAMESPACE: &str = "envoy-gateway-system";
/// Container ports below this are shifted by [`PORT_SHIFT`].
const FIRST_UNPRIVILEGED: u16 = 1024;
pub const PORT_SHIFT: u16 = 10000;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listener {
    pub name: String,
    pub port: u16,
}

/// `gateway.networking.k8s.io/v1` Gateway (HTTP listeners only).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gateway {
    pub name: String,
    pub namespace: String,
    pub class: String,
    pub listeners: Vec<Listener>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackendRef {
    /// A Service in the route's namespace.
    pub name: String,
    pub port: u16,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouteRule {
    /// `matches[].path` of type PathPrefix.
    pub path_prefix: String,
    pub backend: BackendRef,
}

/// `gateway.networking.k8s.io/v1` HTTPRoute.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpRoute {
    pub name: String,
    pub namespace: String,
    /// `parentRefs[0].name`: a Gateway in the same namespace.
    pub parent: String,
    pub hostnames: Vec<String>,
    pub rules: Vec<RouteRule>,
}

/// What Envoy does with one request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Decision {
    /// Forward to this backend, by this route.
    Forward { route: String, backend: BackendRef },
    /// No route matches: Envoy answers 404 itself.
    NoRoute,
}

impl Gateway {
    /// The name of the Service (and Deployment) Envoy Gateway makes for it.
    pub fn proxy_name(&self) -> String {
        let key = format!("{}/{}", self.namespace, self.name);
        let hex: String = crate::hash::sha256(key.as_bytes()).iter().take(4).map(|b| format!("{b:02x}")).collect();
        let mut base = key.replace('/', "-");
        if base.len() > 48 {
            base.truncate(48);
            while base.ends_with('-') {
                base.pop();
            }
        }
        format!("envoy-{base}-{hex}")
    }

    /// The labels on the proxy's Pods, which its Service selects.
    pub fn proxy_labels(&self) -> Labels {
        [
            ("app.kubernetes.io/component", "proxy"),
            ("app.kubernetes.io/managed-by", "envoy-gateway"),
            ("app.kubernetes.io/name", "envoy"),
            ("gateway.envoyproxy.io/owning-gateway-name", self.name.as_str()),
            ("gateway.envoyproxy.io/owning-gateway-namespace", self.namespace.as_str()),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    /// The LoadBalancer Service in front of the proxy.
    pub fn proxy_service(&self) -> Service {
        let ports = self.listeners.iter().map(|l| ServicePort { name: Some(format!("http-{}", l.port)), protocol: Protocol::Tcp, port: l.port, target_port: container_port(l.port), node_port: None }).collect();
        Service {
            name: self.proxy_name(),
            namespace: NAMESPACE.into(),
            annotations: Default::default(),
            spec: ServiceSpec { type_: ServiceType::LoadBalancer, selector: self.proxy_labels(), ports, external_traffic_policy: TrafficPolicy::Local, ..Default::default() },
            status: Default::default(),
            created: None,
        }
    }

    pub fn yaml(&self) -> Vec<String> {
        let mut y = vec!["apiVersion: gateway.networking.k8s.io/v1".into(), "kind: Gateway".into(), "metadata:".into(), format!("  name: {}", self.name), format!("  namespace: {}", self.namespace), "spec:".into(), format!("  gatewayClassName: {}", self.class), "  listeners:".into()];
        for l in &self.listeners {
            y.extend([format!("  - name: {}", l.name), "    protocol: HTTP".into(), format!("    port: {}", l.port)]);
        }
        y
    }
}

/// The port Envoy listens on inside its container for a listener port.
pub fn container_port(listener: u16) -> u16 {
    if listener < FIRST_UNPRIVILEGED {
        listener + PORT_SHIFT
    } else {
        listener
    }
}

impl HttpRoute {
    pub fn yaml(&self) -> Vec<String> {
        let mut y = vec!["apiVersion: gateway.networking.k8s.io/v1".into(), "kind: HTTPRoute".into(), "metadata:".into(), format!("  name: {}", self.name), format!("  namespace: {}", self.namespace), "spec:".into(), "  parentRefs:".into(), format!("  - name: {}", self.parent)];
        if !self.hostnames.is_empty() {
            y.push("  hostnames:".into());
            y.extend(self.hostnames.iter().map(|h| format!("  - \"{h}\"")));
        }
        y.push("  rules:".into());
        for r in &self.rules {
            y.extend([
                "  - matches:".to_string(),
                "    - path:".into(),
                "        type: PathPrefix".into(),
                format!("        value: {}", r.path_prefix),
                "    backendRefs:".into(),
                format!("    - name: {}", r.backend.name),
                format!("      port: {}", r.backend.port),
            ]);
        }
        y
    }

    /// How well the route's hostnames match `host`: 0 none, 1 any host
    /// (no hostnames), 2 + suffix length for a wildcard, above that exact.
    fn host_score(&self, host: &str) -> usize {
        if self.hostnames.is_empty() {
            return 1;
        }
        let host = host.to_ascii_lowercase();
        let score = |h: &String| {
            let h = h.to_ascii_lowercase();
            match h.strip_prefix('*') {
                // `*.example.com` matches `a.example.com`, not `example.com`.
                Some(suffix) if host.ends_with(suffix) && host.len() > suffix.len() => 2 + suffix.len(),
                Some(_) => 0,
                None if h == host => usize::MAX,
                None => 0,
            }
        };
        self.hostnames.iter().map(score).max().unwrap_or(0)
    }
}

/// Whether PathPrefix `prefix` matches `path`, segment by segment.
pub fn prefix_matches(prefix: &str, path: &str) -> bool {
    let p = prefix.trim_end_matches('/');
    if p.is_empty() {
        return path.starts_with('/');
    }
    path == p || path.strip_prefix(p).is_some_and(|rest| rest.starts_with('/'))
}

/// Envoy Gateway with what it has been given.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvoyGateway {
    pub gateways: Vec<Gateway>,
    pub routes: Vec<HttpRoute>,
}

impl EnvoyGateway {
    /// The Gateway whose proxy Pods carry these labels.
    pub fn gateway_of(&self, pod_labels: &Labels) -> Option<&Gateway> {
        self.gateways.iter().find(|g| g.proxy_labels().iter().all(|(k, v)| pod_labels.get(k) == Some(v)))
    }

    /// Envoy's decision for a request to `gw` with this Host and path.
    pub fn decide(&self, gw: &Gateway, host: &str, path: &str) -> Decision {
        let host = host.split(':').next().unwrap_or(host);
        let mut best: Option<(usize, usize, &HttpRoute, &RouteRule)> = None;
        for r in self.routes.iter().filter(|r| r.namespace == gw.namespace && r.parent == gw.name) {
            let hs = r.host_score(host);
            if hs == 0 {
                continue;
            }
            for rule in r.rules.iter().filter(|x| prefix_matches(&x.path_prefix, path)) {
                let key = (hs, rule.path_prefix.trim_end_matches('/').len());
                if best.is_none_or(|(a, b, _, _)| key > (a, b)) {
                    best = Some((key.0, key.1, r, rule));
                }
            }
        }
        match best {
            Some((_, _, r, rule)) => Decision::Forward { route: r.name.clone(), backend: rule.backend.clone() },
            None => Decision::NoRoute,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gw() -> Gateway {
        Gateway { name: "eg".into(), namespace: "default".into(), class: "eg".into(), listeners: vec![Listener { name: "http".into(), port: 80 }] }
    }

    fn route(name: &str, hosts: &[&str], rules: &[(&str, &str)]) -> HttpRoute {
        HttpRoute {
            name: name.into(),
            namespace: "default".into(),
            parent: "eg".into(),
            hostnames: hosts.iter().map(|h| h.to_string()).collect(),
            rules: rules.iter().map(|(p, b)| RouteRule { path_prefix: p.to_string(), backend: BackendRef { name: b.to_string(), port: 80 } }).collect(),
        }
    }

    #[test]
    fn the_proxy_service_is_named_as_envoy_gateway_names_it() {
        // Envoy Gateway's own docs show this name for Gateway default/eg.
        assert_eq!(gw().proxy_name(), "envoy-default-eg-e41e7b31");
        let s = gw().proxy_service();
        assert_eq!((s.namespace.as_str(), s.spec.type_, s.spec.external_traffic_policy), (NAMESPACE, ServiceType::LoadBalancer, TrafficPolicy::Local));
        assert_eq!((s.spec.ports[0].port, s.spec.ports[0].target_port), (80, 10080));
        assert_eq!(container_port(8080), 8080);
        let long = Gateway { name: "a-very-long-gateway-name-for-the-booking-service".into(), namespace: "apollo-airlines-apps".into(), ..gw() };
        let n = long.proxy_name();
        assert!(n.len() <= "envoy-".len() + 48 + 9 && !n.contains("--"), "{n}");
    }

    #[test]
    fn routes_match_host_then_longest_prefix() {
        let eg = EnvoyGateway {
            gateways: vec![gw()],
            routes: vec![route("booking", &["booking.apollo11.local"], &[("/", "booking"), ("/admin", "admin")]), route("wild", &["*.apollo11.local"], &[("/", "fallback")])],
        };
        let to = |host: &str, path: &str| match eg.decide(&gw(), host, path) {
            Decision::Forward { backend, .. } => backend.name,
            Decision::NoRoute => "404".into(),
        };
        assert_eq!(to("booking.apollo11.local", "/flights"), "booking");
        assert_eq!(to("Booking.Apollo11.local:80", "/admin/x"), "admin", "case and port do not matter; the longer prefix wins");
        assert_eq!(to("booking.apollo11.local", "/administrator"), "booking", "a prefix matches whole segments");
        assert_eq!(to("crew.apollo11.local", "/"), "fallback", "a wildcard covers other names");
        assert_eq!(to("apollo11.local", "/"), "404", "a wildcard needs a label in front");
        assert_eq!(to("unknown.example", "/"), "404");
        assert!(prefix_matches("/", "/anything") && prefix_matches("/book/", "/book") && !prefix_matches("/book", "/booking"));
    }
}
