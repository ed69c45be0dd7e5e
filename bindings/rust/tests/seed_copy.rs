// SPDX-License-Identifier: MIT OR Apache-2.0
//! The seed's test module runs through this crate from a copy
//! (src/seed_tests.rs, pulled into src/attn_mask.rs with `include!`). This
//! checks that the copy, below its header comment, is byte for byte the
//! seed's `#[cfg(test)] mod tests { ... }`, from the seed file beside the
//! clone (`<clone>/../shared/seed/attn_mask.rs`) when it is there.

use std::path::PathBuf;

const MARKER: &str = "#[cfg(test)]\nmod tests {";

#[test]
fn the_seed_tests_are_copied_unchanged() {
    let copy = include_str!("../src/seed_tests.rs");
    let start = copy
        .find(MARKER)
        .expect("src/seed_tests.rs has no `#[cfg(test)] mod tests {`");
    // Only the header comment may precede the seed's text.
    for line in copy[..start].lines() {
        assert!(
            line.is_empty() || line.starts_with("//"),
            "non-comment before the seed: {line:?}"
        );
    }

    let seed = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/seed/attn_mask.rs");
    let seed_text = match std::fs::read_to_string(&seed) {
        Ok(text) => text,
        Err(_) => {
            eprintln!("skipped: {} is not beside the clone", seed.display());
            return;
        }
    };
    let seed_start = seed_text
        .find(MARKER)
        .expect("the seed has no `#[cfg(test)] mod tests {`");
    assert!(
        copy[start..] == seed_text[seed_start..],
        "src/seed_tests.rs differs from the `mod tests` of {}: copy it again, byte for byte",
        seed.display()
    );
}
