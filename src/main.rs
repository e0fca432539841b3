//! KubeHops in the browser: renders what `kubehops-core` computed.

mod app;
mod canvas;
mod cluster;
mod controls;
mod nodes;
mod panels;
mod player;

fn main() {
    leptos::mount::mount_to_body(app::App);
}
