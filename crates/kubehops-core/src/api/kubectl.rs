//! kubectl's table output for Services, byte for byte: the same columns,
//! the same padding (a tabwriter with minimum width 6 and padding 3), and
//! the same placeholders (`<none>`, `<pending>`, `<unknown>`).
//!
//! The cells follow kubectl's Service printer: CLUSTER-IP is the first
//! cluster IP (`None` for a headless Service, `<none>` without one);
//! EXTERNAL-IP is the external name for ExternalName, `spec.externalIPs`
//! for ClusterIP and NodePort, and the balancer's ingress addresses (sorted,
//! cut to 16 characters unless wide) followed by `spec.externalIPs` for
//! LoadBalancer.

use crate::api::{Service, ServiceType};

/// `kubectl get svc` (or `-o wide`) for these Services, at `now` seconds,
/// where each Service was created at `created[i]`.
pub fn get_services(services: &[(&Service, u64)], now: u64, wide: bool) -> String {
    if services.is_empty() {
        return "No resources found in default namespace.\n".into();
    }
    tabulate(&service_table(services, now, wide))
}

/// The rows of `kubectl get svc`, header first, as cells.
pub fn service_table(services: &[(&Service, u64)], now: u64, wide: bool) -> Vec<Vec<String>> {
    let mut header = vec!["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"];
    if wide {
        header.push("SELECTOR");
    }
    let mut rows: Vec<Vec<String>> = vec![header.into_iter().map(String::from).collect()];
    for (svc, created) in services {
        rows.push(service_row(svc, human_duration(now.saturating_sub(*created)), wide));
    }
    rows
}

/// Which namespaces `kubectl get` lists: `-n NAMESPACE` or `-A`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Namespaces<'a> {
    Only(&'a str),
    All,
}

/// What `kubectl get` writes: the table goes to stdout; when nothing
/// matched, kubectl writes its notice to stderr and nothing to stdout.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GetOutput {
    pub stdout: String,
    pub stderr: String,
}

/// `kubectl get svc [-n NS | -A] [-o wide]` over these Services at `now`
/// (seconds since the Unix epoch). Ages come from each Service's
/// `created`; without one the age is `<unknown>`. Rows are in the order the
/// API server lists them: by namespace, then by name. With `-A` a NAMESPACE
/// column comes first.
pub fn get_svc(services: &[Service], namespaces: Namespaces<'_>, now: i64, wide: bool) -> GetOutput {
    let mut chosen: Vec<&Service> = services
        .iter()
        .filter(|s| match namespaces {
            Namespaces::Only(ns) => s.namespace == ns,
            Namespaces::All => true,
        })
        .collect();
    if chosen.is_empty() {
        let stderr = match namespaces {
            Namespaces::Only(ns) => format!("No resources found in {ns} namespace.\n"),
            Namespaces::All => "No resources found\n".to_string(),
        };
        return GetOutput { stdout: String::new(), stderr };
    }
    crate::sort::by(&mut chosen, |a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    let all = namespaces == Namespaces::All;
    let mut header = Vec::new();
    if all {
        header.push("NAMESPACE");
    }
    header.extend(["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]);
    if wide {
        header.push("SELECTOR");
    }
    let mut rows: Vec<Vec<String>> = vec![header.into_iter().map(String::from).collect()];
    for svc in chosen {
        let mut row = service_row(svc, age(svc.created, now), wide);
        if all {
            row.insert(0, svc.namespace.clone());
        }
        rows.push(row);
    }
    GetOutput { stdout: tabulate(&rows), stderr: String::new() }
}

/// The AGE cell: `<unknown>` without a creation time, `<invalid>` for a
/// time more than a second in the future (clock skew up to that is shown
/// as `0s`), else the short duration.
pub fn age(created: Option<i64>, now: i64) -> String {
    let Some(created) = created else { return "<unknown>".into() };
    let secs = now.saturating_sub(created);
    if secs < -1 {
        "<invalid>".into()
    } else {
        human_duration(secs.max(0) as u64)
    }
}

/// One row of the Service table, without the NAMESPACE column.
fn service_row(svc: &Service, age: String, wide: bool) -> Vec<String> {
    let cluster_ip = match svc.spec.cluster_ip {
        _ if svc.spec.headless => "None".to_string(),
        Some(ip) => ip.to_string(),
        None => "<none>".to_string(),
    };
    let mut row = vec![svc.name.clone(), svc.spec.type_.as_str().to_string(), cluster_ip, external_ip(svc, wide), ports(svc), age];
    if wide {
        row.push(if svc.spec.selector.is_empty() {
            "<none>".into()
        } else {
            svc.spec.selector.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
        });
    }
    row
}

/// Aligns cells as Go's tabwriter does for kubectl: each column is as wide
/// as its widest cell plus 3, at least 6; the last column is not padded.
pub fn tabulate(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(|r| r.len()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| rows.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0))
        .map(|w| (w + 3).max(6))
        .collect();
    let mut out = String::new();
    for r in rows {
        for (c, cell) in r.iter().enumerate() {
            out.push_str(cell);
            if c + 1 < r.len() {
                out.extend(std::iter::repeat_n(' ', widths[c] - cell.chars().count()));
            }
        }
        out.push('\n');
    }
    out
}

fn external_ip(svc: &Service, wide: bool) -> String {
    let external: Vec<String> = svc.spec.external_ips.iter().map(|ip| ip.to_string()).collect();
    match svc.spec.type_ {
        ServiceType::ClusterIP | ServiceType::NodePort => {
            if external.is_empty() {
                "<none>".into()
            } else {
                external.join(",")
            }
        }
        ServiceType::LoadBalancer => {
            // The ingress addresses as a sorted set, cut before the
            // external IPs are appended.
            // kubectl lists each entry's IP, or its hostname when it has none.
            let mut ips: Vec<String> =
                svc.status.load_balancer_ingress.iter().filter_map(|i| i.ip.map(|a| a.to_string()).or_else(|| i.hostname.clone())).collect();
            crate::sort::natural(&mut ips);
            ips.dedup();
            let mut s = ips.join(",");
            if !wide && s.len() > 16 {
                s.truncate(13);
                s.push_str("...");
            }
            if !external.is_empty() {
                let mut all: Vec<String> = if s.is_empty() { Vec::new() } else { s.split(',').map(String::from).collect() };
                all.extend(external);
                return all.join(",");
            }
            if s.is_empty() {
                "<pending>".into()
            } else {
                s
            }
        }
        ServiceType::ExternalName => svc.spec.external_name.clone().unwrap_or_default(),
    }
}

fn ports(svc: &Service) -> String {
    if svc.spec.ports.is_empty() {
        return "<none>".into();
    }
    svc.spec
        .ports
        .iter()
        .map(|p| match p.node_port {
            Some(np) if svc.spec.type_.has_node_ports() => format!("{}:{}/{}", p.port, np, p.protocol),
            _ => format!("{}/{}", p.port, p.protocol),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The warning the API server sends with every read of v1 Endpoints
/// (Kubernetes 1.33 and later); kubectl prints it on stderr.
pub const ENDPOINTS_DEPRECATED: &str = "Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice";

/// The rows of `kubectl get endpoints`, header first: one per Service that
/// has an Endpoints object (one with a selector), with its AGE.
///
/// The ENDPOINTS cell is kubectl's `formatEndpoints`: the ready addresses
/// of the slice (sorted by address, as the Endpoints controller sorts
/// them) with each port, port by port; at most three, then `+ N more...`.
/// A Service whose Pods are all not ready has a subset with no ready
/// address, which prints as an empty cell; one with no Pods at all has no
/// subset: `<none>`.
pub fn endpoints_table(services: &[(&Service, Option<&crate::api::EndpointSlice>, String)]) -> Vec<Vec<String>> {
    let mut rows = vec![vec!["NAME".to_string(), "ENDPOINTS".into(), "AGE".into()]];
    for (svc, slice, age) in services {
        rows.push(vec![svc.name.clone(), endpoints_cell(*slice), age.clone()]);
    }
    rows
}

fn endpoints_cell(slice: Option<&crate::api::EndpointSlice>) -> String {
    let Some(slice) = slice.filter(|s| !s.endpoints.is_empty()) else { return "<none>".into() };
    let mut ready: Vec<std::net::Ipv4Addr> = slice.endpoints.iter().filter(|e| e.ready).map(|e| e.ip).collect();
    crate::sort::natural(&mut ready);
    const MAX: usize = 3;
    let (mut list, mut count) = (Vec::new(), 0);
    for port in &slice.ports {
        count += ready.len();
        list.extend(ready.iter().take(MAX.saturating_sub(list.len())).map(|ip| format!("{ip}:{}", port.port)));
    }
    let shown = list.join(",");
    if count > MAX {
        format!("{shown} + {} more...", count - MAX)
    } else {
        shown
    }
}

/// Kubernetes' short age format (`45s`, `3m20s`, `17m`, `5h10m`, `3d4h`).
pub fn human_duration(secs: u64) -> String {
    let (m, h) = (secs / 60, secs / 3600);
    if secs < 120 {
        format!("{secs}s")
    } else if m < 10 {
        match secs % 60 {
            0 => format!("{m}m"),
            s => format!("{m}m{s}s"),
        }
    } else if m < 180 {
        format!("{m}m")
    } else if h < 8 {
        match m % 60 {
            0 => format!("{h}h"),
            mm => format!("{h}h{mm}m"),
        }
    } else if h < 48 {
        format!("{h}h")
    } else if h < 24 * 8 {
        match h % 24 {
            0 => format!("{}d", h / 24),
            hh => format!("{}d{}h", h / 24, hh),
        }
    } else if h < 24 * 365 * 2 {
        format!("{}d", h / 24)
    } else if h < 24 * 365 * 8 {
        match (h / 24) % 365 {
            0 => format!("{}y", h / 24 / 365),
            d => format!("{}y{}d", h / 24 / 365, d),
        }
    } else {
        format!("{}y", h / 24 / 365)
    }
}

#[cfg(test)]
mod endpoints_tests {
    use super::*;
    use crate::api::{Endpoint, EndpointPort, EndpointSlice, ServiceSpec};
    use crate::net::{ip, Protocol};

    fn slice(ready: &[(u8, bool)], ports: &[u16]) -> EndpointSlice {
        EndpointSlice {
            name: "booking-abcde".into(),
            namespace: "apollo-airlines-apps".into(),
            service_name: "booking".into(),
            endpoints: ready.iter().map(|(d, r)| Endpoint { ip: ip(10, 244, 1, *d), node_name: "w".into(), ready: *r, serving: *r, terminating: false, target_ref: String::new(), hostname: None }).collect(),
            ports: ports.iter().map(|p| EndpointPort { name: None, protocol: Protocol::Tcp, port: *p }).collect(),
        }
    }

    #[test]
    fn endpoints_print_as_kubectl_prints_them() {
        let svc = Service { name: "booking".into(), namespace: "apollo-airlines-apps".into(), annotations: Default::default(), spec: ServiceSpec::default(), status: Default::default(), created: None };
        let cell = |s: Option<&EndpointSlice>| endpoints_table(&[(&svc, s, "5m".into())])[1][1].clone();
        assert_eq!(cell(Some(&slice(&[(6, true), (5, true)], &[8082]))), "10.244.1.5:8082,10.244.1.6:8082");
        assert_eq!(cell(Some(&slice(&[(5, true), (6, true), (7, true), (8, true), (9, false)], &[8082]))), "10.244.1.5:8082,10.244.1.6:8082,10.244.1.7:8082 + 1 more...");
        // Two ports count every address twice.
        assert_eq!(cell(Some(&slice(&[(5, true), (6, true)], &[80, 443]))), "10.244.1.5:80,10.244.1.6:80,10.244.1.5:443 + 1 more...");
        assert_eq!(cell(Some(&slice(&[(5, false)], &[8082]))), "", "only not-ready addresses: an empty cell");
        assert_eq!(cell(Some(&slice(&[], &[8082]))), "<none>");
        assert_eq!(cell(None), "<none>");
        let t = tabulate(&endpoints_table(&[(&svc, Some(&slice(&[(5, true)], &[8082])), "5m".into())]));
        assert_eq!(t, "NAME      ENDPOINTS         AGE\nbooking   10.244.1.5:8082   5m\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{LoadBalancerIngress, ServicePort, ServiceSpec, IpMode};
    use crate::net::{ip, Protocol};

    fn web(t: ServiceType) -> Service {
        Service {
            name: "web".into(),
            namespace: "default".into(),
            annotations: Default::default(),
            spec: ServiceSpec {
                type_: t,
                selector: [("app".into(), "web".into())].into(),
                ports: vec![ServicePort { name: None, protocol: Protocol::Tcp, port: 80, target_port: 8080, node_port: Some(31000) }],
                cluster_ip: Some(ip(10, 96, 17, 80)),
                ..Default::default()
            },
            status: Default::default(),
            created: Some(0),
        }
    }

    #[test]
    fn columns_and_placeholders_as_kubectl_prints_them() {
        let s = web(ServiceType::NodePort);
        assert_eq!(
            get_services(&[(&s, 0)], 330, false),
            "NAME   TYPE       CLUSTER-IP    EXTERNAL-IP   PORT(S)        AGE\nweb    NodePort   10.96.17.80   <none>        80:31000/TCP   5m30s\n"
        );
        let mut lb = web(ServiceType::LoadBalancer);
        assert!(get_services(&[(&lb, 0)], 5, false).contains("<pending>     80:31000/TCP"));
        lb.status.load_balancer_ingress = vec![LoadBalancerIngress::with_ip(ip(203, 0, 113, 7), Some(IpMode::VIP))];
        let out = get_services(&[(&lb, 0)], 5, true);
        assert!(out.contains("203.0.113.7   80:31000/TCP   5s    app=web"), "{out}");
        let c = web(ServiceType::ClusterIP);
        assert!(get_services(&[(&c, 0)], 5, false).contains("<none>        80/TCP"));
    }

    #[test]
    fn long_external_addresses_are_cut_without_wide() {
        let mut lb = web(ServiceType::LoadBalancer);
        lb.status.load_balancer_ingress =
            vec![LoadBalancerIngress::with_ip(ip(203, 0, 113, 70), Some(IpMode::VIP)), LoadBalancerIngress::with_ip(ip(198, 51, 100, 9), Some(IpMode::VIP))];
        assert!(get_services(&[(&lb, 0)], 5, false).contains(" 198.51.100.9,... "));
        assert!(get_services(&[(&lb, 0)], 5, true).contains(" 198.51.100.9,203.0.113.70 "));
    }

    fn in_ns(mut s: Service, ns: &str, name: &str) -> Service {
        s.namespace = ns.into();
        s.name = name.into();
        s
    }

    #[test]
    fn namespaces_sorting_and_empty_notices() {
        let a = in_ns(web(ServiceType::ClusterIP), "prod", "api");
        let b = in_ns(web(ServiceType::ClusterIP), "default", "zeta");
        let c = in_ns(web(ServiceType::ClusterIP), "default", "alpha");
        let all = [a, b, c];
        let out = get_svc(&all, Namespaces::All, 90, false);
        assert_eq!(out.stderr, "");
        let names: Vec<&str> = out.stdout.lines().map(|l| l.split_whitespace().take(2).last().unwrap_or("")).collect();
        assert_eq!(names, ["NAME", "alpha", "zeta", "api"]);
        assert!(out.stdout.starts_with("NAMESPACE   NAME    TYPE "), "{}", out.stdout);
        let one = get_svc(&all, Namespaces::Only("default"), 90, false);
        assert!(one.stdout.starts_with("NAME    TYPE "), "{}", one.stdout);
        assert_eq!(one.stdout.lines().count(), 3);
        assert_eq!(get_svc(&all, Namespaces::Only("kube-system"), 0, false), GetOutput { stdout: String::new(), stderr: "No resources found in kube-system namespace.\n".into() });
        assert_eq!(get_svc(&[], Namespaces::All, 0, false).stderr, "No resources found\n");
    }

    #[test]
    fn headless_external_name_and_external_ips() {
        let mut h = web(ServiceType::ClusterIP);
        h.spec.cluster_ip = None;
        h.spec.headless = true;
        h.spec.ports[0].node_port = None;
        let mut x = in_ns(web(ServiceType::ExternalName), "default", "docs");
        x.spec.cluster_ip = None;
        x.spec.ports.clear();
        x.spec.selector.clear();
        x.spec.external_name = Some("docs.example.com".into());
        let mut e = in_ns(web(ServiceType::NodePort), "default", "edge");
        e.spec.external_ips = vec![ip(192, 0, 2, 10), ip(192, 0, 2, 11)];
        let mut lb = in_ns(web(ServiceType::LoadBalancer), "default", "lb");
        lb.spec.external_ips = vec![ip(192, 0, 2, 10)];
        lb.status.load_balancer_ingress =
            vec![LoadBalancerIngress::with_ip(ip(203, 0, 113, 70), Some(IpMode::VIP)), LoadBalancerIngress::with_ip(ip(198, 51, 100, 9), Some(IpMode::VIP))];
        let mut pending = in_ns(web(ServiceType::LoadBalancer), "default", "pending");
        pending.spec.external_ips = vec![ip(192, 0, 2, 12)];
        let out = get_svc(&[h, x, e, lb, pending], Namespaces::Only("default"), 30, true).stdout;
        let rows: Vec<Vec<&str>> = out.lines().map(|l| l.split_whitespace().collect()).collect();
        assert_eq!(rows[1], ["docs", "ExternalName", "<none>", "docs.example.com", "<none>", "30s", "<none>"]);
        assert_eq!(rows[2], ["edge", "NodePort", "10.96.17.80", "192.0.2.10,192.0.2.11", "80:31000/TCP", "30s", "app=web"]);
        assert_eq!(rows[3][3], "198.51.100.9,203.0.113.70,192.0.2.10");
        assert_eq!(rows[4][3], "192.0.2.12", "external IPs replace <pending>");
        assert_eq!(rows[5], ["web", "ClusterIP", "None", "<none>", "80/TCP", "30s", "app=web"]);
        let narrow = get_svc(&[in_ns(web(ServiceType::LoadBalancer), "default", "lb")], Namespaces::Only("default"), 0, false);
        assert!(narrow.stdout.contains("<pending>"));
    }

    #[test]
    fn unknown_and_future_ages() {
        assert_eq!(age(None, 100), "<unknown>");
        assert_eq!(age(Some(101), 100), "0s");
        assert_eq!(age(Some(102), 100), "<invalid>");
        assert_eq!(age(Some(0), 3600), "60m");
        let mut s = web(ServiceType::ClusterIP);
        s.created = None;
        assert!(get_svc(&[s], Namespaces::All, 5, false).stdout.contains(" <unknown>\n"));
    }

    #[test]
    fn a_balancer_known_by_name_shows_its_hostname() {
        let mut lb = web(ServiceType::LoadBalancer);
        lb.status.load_balancer_ingress =
            vec![LoadBalancerIngress { ip: None, hostname: Some("a1b2c3-123456789.eu-west-1.elb.amazonaws.com".into()), ip_mode: None }];
        assert!(get_services(&[(&lb, 0)], 5, false).contains(" a1b2c3-123456... "));
        assert!(get_services(&[(&lb, 0)], 5, true).contains(" a1b2c3-123456789.eu-west-1.elb.amazonaws.com "));
    }

    /// Each step of apimachinery's `duration.HumanDuration` (which kubectl's
    /// printers call), on both sides of its edge.
    #[test]
    fn ages_at_each_edge_of_kubectls_rounding() {
        let (m, h, d) = (60, 3600, 86400);
        for (s, want) in [
            (59, "59s"),
            (119, "119s"),
            (120, "2m"),
            (9 * m + 59, "9m59s"),
            (10 * m + 59, "10m"),
            (h + 59 * m, "119m"),
            (3 * h - 1, "179m"),
            (3 * h, "3h"),
            (8 * h - 1, "7h59m"),
            (8 * h + 59 * m, "8h"),
            (47 * h, "47h"),
            (48 * h - 1, "47h"),
            (48 * h, "2d"),
            (8 * d - 1, "7d23h"),
            (8 * d, "8d"),
            (8 * d + 23 * h, "8d"),
            (730 * d - 1, "729d"),
            (730 * d, "2y"),
            (8 * 365 * d - 1, "7y364d"),
            (8 * 365 * d, "8y"),
        ] {
            assert_eq!(human_duration(s), want, "{s}s");
        }
    }

    #[test]
    fn ages() {
        for (s, want) in [(0, "0s"), (119, "119s"), (120, "2m"), (330, "5m30s"), (600, "10m"), (3 * 3600 + 600, "3h10m"), (50 * 3600, "2d2h"), (800 * 86400, "2y70d")] {
            assert_eq!(human_duration(s), want, "{s}");
        }
    }
}
