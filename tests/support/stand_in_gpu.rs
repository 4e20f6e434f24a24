//! The stand-in GPU libraries (`tests/fake-gpu`: a `libcuda.so.1` and a
//! `libnccl.so.2` that keep the real libraries' contract), compiled with the
//! system C compiler into a directory the probe is pointed at with
//! `LD_LIBRARY_PATH`. One recipe for every test file that runs the probe.
// Each test file uses some of these.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// Compiles both stand-ins into `dir` (the NCCL one finds the CUDA one beside it).
pub fn build_into(dir: &Path) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake-gpu");
    let cc = |args: &[&str]| {
        let status = Command::new("cc").current_dir(dir).args(args).status().expect("a C compiler (`cc`)");
        assert!(status.success(), "cc {args:?}");
    };
    let cuda = source.join("fake_cuda.c");
    cc(&["-shared", "-fPIC", "-O1", "-Wl,-soname,libcuda.so.1", "-o", "libcuda.so.1", cuda.to_str().unwrap()]);
    let nccl = source.join("fake_nccl.c");
    cc(&[
        "-shared",
        "-fPIC",
        "-O1",
        "-Wl,-soname,libnccl.so.2",
        "-o",
        "libnccl.so.2",
        nccl.to_str().unwrap(),
        "-L.",
        "-l:libcuda.so.1",
        "-Wl,-rpath,$ORIGIN",
    ]);
}
