//! The least that any program running `helm template` for its output pays over a plain `helm
//! template`, for bench/run's (f): it runs the helm given with the values file on its stdin (as
//! nyl hands Helm its values), reads Helm's stdout through a pipe into memory, optionally stores
//! the bytes in a new file in a new directory (what a cold render must at least add), and prints
//! them. Nothing else: no project, no classifying, no namespaces. Standard library only, built
//! by bench/run with `rustc -O`.
//!
//! Usage: floor VALUES_FILE ENTRY_DIR|- HELM ARG...
//!
//! Helm's stdout is a pipe, never a file Helm writes itself: Helm exits 0 with its output cut
//! when a write to its stdout fails, so a reader that must not pass on a cut output cannot let
//! Helm write anything it has not seen arrive (docs/performance.md, 2026-12-03).

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::process::{exit, Command, Stdio};

unsafe extern "C" {
    fn fcntl(fd: i32, cmd: i32, ...) -> i32;
}

/// Linux's F_SETPIPE_SZ; nyl asks for the same 1 MiB pipe.
const F_SETPIPE_SZ: i32 = 1031;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        eprintln!("usage: floor VALUES_FILE ENTRY_DIR|- HELM ARG...");
        exit(2);
    }
    let values = std::fs::read(&args[0]).unwrap_or_else(|e| fail("reading the values", e));
    let mut child = Command::new(&args[2])
        .args(&args[3..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| fail("starting helm", e));
    let mut out = child.stdout.take().expect("piped");
    // SAFETY: fcntl on a descriptor this process owns; an error only leaves the pipe smaller.
    unsafe { fcntl(out.as_raw_fd(), F_SETPIPE_SZ, 1 << 20) };
    let mut input = child.stdin.take().expect("piped");
    // On a thread of its own, as in nyl: a helm that prints before it reads must not deadlock.
    let writer = std::thread::spawn(move || input.write_all(&values));
    let mut bytes = Vec::new();
    out.read_to_end(&mut bytes)
        .unwrap_or_else(|e| fail("reading helm's output", e));
    let _ = writer.join();
    let status = child.wait().unwrap_or_else(|e| fail("waiting for helm", e));
    if !status.success() {
        eprintln!("helm failed: {status}");
        exit(1);
    }
    if args[1] != "-" {
        let dir = std::path::Path::new(&args[1]);
        std::fs::create_dir_all(dir).unwrap_or_else(|e| fail("making the entry's directory", e));
        let part = dir.join("entry.part");
        std::fs::write(&part, &bytes).unwrap_or_else(|e| fail("writing the entry", e));
        std::fs::rename(&part, dir.join("entry")).unwrap_or_else(|e| fail("placing the entry", e));
    }
    std::io::stdout()
        .lock()
        .write_all(&bytes)
        .unwrap_or_else(|e| fail("printing", e));
}

fn fail(what: &str, e: std::io::Error) -> ! {
    eprintln!("floor: {what}: {e}");
    exit(1)
}
