//! The importers fed arbitrary files: a clear refusal, or a trace the
//! analyzer accepts and whose receipt holds every invariant.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = goodput_selfcheck::check_import_input(data) {
        panic!("invariant broken: {broken}");
    }
});
