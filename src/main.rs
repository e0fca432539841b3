//! KubeHops in the browser: renders what `kubehops-core` computed.

mod app;
mod canvas;
mod controls;
mod editor;
mod embed;
mod nodes;
mod panels;
mod player;
mod present;

fn main() {
    leptos::mount::mount_to_body(app::App);
}
