//! kubectl's table output for Services, byte for byte: the same columns,
//! the same padding (a tabwriter with minimum width 6 and padding 3), and
//! the same placeholders (`<none>`, `<pending>`).

use crate::api::{Service, ServiceType};

/// `kubectl get svc` (or `-o wide`) for these Services, at `now` seconds,
/// where each Service was created at `created[i]`.
pub fn get_services(services: &[(&Service, u64)], now: u64, wide: bool) -> String {
    if services.is_empty() {
        return "No resources found in default namespace.\n".into();
    }
    let mut header = vec!["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"];
    if wide {
        header.push("SELECTOR");
    }
    let mut rows: Vec<Vec<String>> = vec![header.into_iter().map(String::from).collect()];
    for (svc, created) in services {
        let mut row = vec![
            svc.name.clone(),
            svc.spec.type_.as_str().to_string(),
            svc.spec.cluster_ip.map_or("None".to_string(), |ip| ip.to_string()),
            external_ip(svc, wide),
            ports(svc),
            human_duration(now.saturating_sub(*created)),
        ];
        if wide {
            row.push(if svc.spec.selector.is_empty() {
                "<none>".into()
            } else {
                svc.spec.selector.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
            });
        }
        rows.push(row);
    }
    tabulate(&rows)
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
    match svc.spec.type_ {
        ServiceType::LoadBalancer => {
            let mut ips: Vec<String> = svc.status.load_balancer_ingress.iter().map(|i| i.ip.to_string()).collect();
            ips.sort();
            ips.dedup();
            let mut s = ips.join(",");
            if s.is_empty() {
                return "<pending>".into();
            }
            if !wide && s.len() > 16 {
                s.truncate(13);
                s.push_str("...");
            }
            s
        }
        _ => "<none>".into(),
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
mod tests {
    use super::*;
    use crate::api::{LoadBalancerIngress, ServicePort, ServiceSpec, IpMode};
    use crate::net::{ip, Protocol};

    fn web(t: ServiceType) -> Service {
        Service {
            name: "web".into(),
            namespace: "default".into(),
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
        lb.status.load_balancer_ingress = vec![LoadBalancerIngress { ip: ip(203, 0, 113, 7), ip_mode: IpMode::VIP }];
        let out = get_services(&[(&lb, 0)], 5, true);
        assert!(out.contains("203.0.113.7   80:31000/TCP   5s    app=web"), "{out}");
        let c = web(ServiceType::ClusterIP);
        assert!(get_services(&[(&c, 0)], 5, false).contains("<none>        80/TCP"));
    }

    #[test]
    fn long_external_addresses_are_cut_without_wide() {
        let mut lb = web(ServiceType::LoadBalancer);
        lb.status.load_balancer_ingress =
            vec![LoadBalancerIngress { ip: ip(203, 0, 113, 70), ip_mode: IpMode::VIP }, LoadBalancerIngress { ip: ip(198, 51, 100, 9), ip_mode: IpMode::VIP }];
        assert!(get_services(&[(&lb, 0)], 5, false).contains(" 198.51.100.9,... "));
        assert!(get_services(&[(&lb, 0)], 5, true).contains(" 198.51.100.9,203.0.113.70 "));
    }

    #[test]
    fn ages() {
        for (s, want) in [(0, "0s"), (119, "119s"), (120, "2m"), (330, "5m30s"), (600, "10m"), (3 * 3600 + 600, "3h10m"), (50 * 3600, "2d2h"), (800 * 86400, "2y70d")] {
            assert_eq!(human_duration(s), want, "{s}");
        }
    }
}
