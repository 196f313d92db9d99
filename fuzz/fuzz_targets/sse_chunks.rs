//! The recorder's SSE parser fed arbitrary bytes split at arbitrary points:
//! the events (and how each is classified) must not depend on the split.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = goodput_selfcheck::check_sse_input(data) {
        panic!("invariant broken: {broken}");
    }
});
