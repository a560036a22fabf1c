//! Where every Redis script is made from its source: one door, so that
//! the mutation runner (`make mutants`, the `mutate` binary of
//! `server/harness`) can swap one script's text for a mutant's without a
//! rebuild per mutant.
//!
//! Only a build with the `mutation` feature reads the swap (the runner's
//! test builds; never a deployed one, which has no such feature). There
//! `ADMITONE_LUA_MUTANT=<name>=<file>` makes the script called `<name>`
//! (its path under `server/engine/src`, such as `reservation/reserve.lua`)
//! run that file's text instead.

use redis::Script;

// The swap is for the runner's debug test builds; a release build with it
// is a mistake.
#[cfg(all(feature = "mutation", not(debug_assertions)))]
compile_error!("the `mutation` feature is for the mutation runner's test builds, never a release");

/// The script `name` (its path under `server/engine/src`), from `source`
/// (that file, `include_str!`-ed).
pub fn script(name: &'static str, source: &'static str) -> Script {
    #[cfg(feature = "mutation")]
    if let Some(text) = mutant(name) {
        return Script::new(&text);
    }
    let _ = name;
    Script::new(source)
}

#[cfg(feature = "mutation")]
fn mutant(name: &str) -> Option<String> {
    let swap = std::env::var("ADMITONE_LUA_MUTANT").ok()?;
    let (target, file) = swap.split_once('=')?;
    (target == name).then(|| {
        std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("reading the Lua mutant {file}: {e}"))
    })
}
