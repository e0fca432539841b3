//! KubeHops in the browser: renders what `kubehops-core` computed.

mod app;
mod canvas;
mod cluster;
mod controls;
mod editor;
mod embed;
mod export;
mod nodes;
mod panels;
mod player;
mod present;
mod read;

fn main() {
    leptos::mount::mount_to_body(app::App);
}
