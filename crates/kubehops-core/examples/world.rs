//! Prints each scenario's drawing size and its columns at each level of
//! detail, to tune the layout.
use kubehops_core::scenarios::REGISTRY;
use kubehops_core::scene::Layout;
fn main() {
    for e in REGISTRY.iter() {
        let s = kubehops_core::scenarios::build_default(e.id).unwrap();
        for d in kubehops_core::scene::layout::Detail::ALL {
            let l = Layout::for_scenario_at(&s, d);
            let cols: Vec<String> = l.columns.iter().map(|c| format!("{:?} {:.0}×{:.0}", c.zone, c.rect.w, c.rect.h)).collect();
            println!("{} ({}): {:.0}×{:.0}  {}", e.id, d.name(), l.width, l.height, cols.join(", "));
        }
        for a in s.actors.iter().filter(|a| a.parent.is_none() && a.kind != kubehops_core::sim::ActorKind::Node) {
            println!("    {:?} {:?} / {:?} / {:?}", a.kind, a.label, a.short, a.sublabel);
        }
    }
}
