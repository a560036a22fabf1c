//! `sqlx::migrate!` embeds each migration it finds when the crate builds;
//! a migration added later is found only if the crate builds again.
fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
}
