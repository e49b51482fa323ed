//! Child processes (Helm) bounded in time and output. This is the one place a child's output
//! enters nyl.
//!
//! - Each child runs in its own process group, so that stopping it stops whatever it started.
//! - Its stdout is read against a byte budget the caller shares between the runs of one render;
//!   past it, or past the deadline, the group is killed and the run fails. Each piece read goes
//!   to the caller's sink as it arrives, or, once the sink keeps the output in a file, is moved
//!   there by the kernel (a release's output is classified while Helm prints it).
//! - Of its stderr only the first [`STDERR_KEEP`] bytes are kept, plus a count of the rest: a
//!   chart's 50 MB `fail` message is not a 50 MB diagnostic.
//! - SIGTERM, SIGINT and SIGHUP to nyl kill the groups of the children still running before nyl
//!   ends by the signal ([`stop_children_on_signals`]): Argo CD's timeout signals nyl, and no
//!   helm may outlive it.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{mpsc, Once};
use std::time::{Duration, Instant};

use tracing::warn;

/// How much of a child's stderr is kept: more than any real error message needs.
pub const STDERR_KEEP: usize = 8 << 10;

/// A child that ran to its end (its stdout went to the sink).
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    pub stderr: Stderr,
}

/// Where a child's stdout goes; an `Err` stops the run with that message. A closure takes every
/// piece as it is read; a sink that keeps a large output in a file can ask for the rest of it to
/// be moved there by the kernel (`splice`), without passing through nyl's memory.
pub trait Sink: Send {
    /// The next piece read.
    fn push(&mut self, bytes: &[u8]) -> Result<(), String>;

    /// The file the rest of stdout goes to, once the sink wants it there.
    fn file(&self) -> Option<&File> {
        None
    }

    /// `n` more bytes moved into [`Sink::file`].
    fn moved(&mut self, _n: usize) -> Result<(), String> {
        Ok(())
    }

    /// A move or read took less than it asks for, so the pipe is empty for now: the child is
    /// not waiting on nyl to go on printing. A move takes what the pipe holds; a read goes on to
    /// a chunk or the end, so without a file this is said at the end only. Said at the end of
    /// stdout too, before [`Sink::ended`].
    fn emptied(&mut self) -> Result<(), String> {
        Ok(())
    }

    /// Stdout has ended: nothing more comes, whatever the child's exit.
    fn ended(&mut self) {}

    /// The child has started (it runs the program it was given).
    fn started(&mut self) {}
}

impl<F: FnMut(&[u8]) -> Result<(), String> + Send> Sink for F {
    fn push(&mut self, bytes: &[u8]) -> Result<(), String> {
        self(bytes)
    }
}

/// The start of a child's stderr, and how many bytes after it were dropped.
#[derive(Debug, Default)]
pub struct Stderr {
    pub head: Vec<u8>,
    pub cut: u64,
}

impl Stderr {
    /// The kept text, with the count of what was cut.
    pub fn text(&self, trim: impl Fn(&str) -> String) -> String {
        let text = trim(&String::from_utf8_lossy(&self.head));
        if self.cut == 0 {
            text
        } else {
            format!("{text} [{} more bytes of stderr cut]", self.cut)
        }
    }
}

/// Why a run did not finish.
#[derive(Debug)]
pub enum Stopped {
    /// The child could not be started or waited for.
    Io(io::Error),
    /// It was still running at its deadline.
    TimedOut,
    /// Its stdout went past the budget.
    OutputTooLarge,
    /// The sink refused its stdout.
    Refused(String),
}

/// Runs `cmd` with `stdin` as its input until it ends, `timeout` passes or its stdout takes more
/// than `budget` has left (what it read is taken from `budget`); its stdout goes to `sink`.
pub fn run(
    cmd: &mut Command,
    stdin: Vec<u8>,
    timeout: Duration,
    budget: &AtomicU64,
    sink: &mut dyn Sink,
) -> Result<Finished, Stopped> {
    let deadline = Instant::now() + timeout;
    let (mut child, group) = Group::spawn(
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0),
    )
    .map_err(Stopped::Io)?;
    sink.started();
    let (input, output, errors) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    std::thread::scope(|scope| {
        // Each pipe on its own thread: a child that stops reading stdin while it fills stdout
        // or stderr must not deadlock the run.
        if let Some(mut input) = input {
            scope.spawn(move || {
                let _ = input.write_all(&stdin);
            });
        }
        let errors = scope.spawn(move || errors.map(read_head).unwrap_or_default());
        let (sender, receiver) = mpsc::channel();
        scope.spawn(move || {
            let _ = sender.send(output.map_or(Ok(()), |o| read_budgeted(o, budget, sink)));
        });
        let ended = match receiver.recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            Ok(Ok(())) => match exit_by(&mut child, deadline) {
                Ok(Some(status)) => Ok(status),
                Ok(None) => Err(Stopped::TimedOut),
                Err(e) => Err(Stopped::Io(e)),
            },
            Ok(Err(stopped)) => Err(stopped),
            Err(_) => Err(Stopped::TimedOut),
        };
        if ended.is_err() {
            // Not reaped yet, so the group's id cannot have been reused.
            group.kill();
        }
        let waited = child.wait();
        drop(group);
        let status = ended?;
        waited.map_err(Stopped::Io)?;
        Ok(Finished {
            status,
            stderr: errors.join().unwrap_or_default(),
        })
    })
}

/// The child's exit status once it has exited, `None` if it is still running at `deadline`.
/// Called after its stdout closed, when the exit is a matter of microseconds to milliseconds
/// and the render goes on only once it is seen: woken by the exit itself (a pidfd that becomes
/// readable), or where the kernel has none (before Linux 5.3), by short sleeps from 50 µs,
/// doubling, which cost up to their length and the timer's slack after the exit.
fn exit_by(child: &mut Child, deadline: Instant) -> io::Result<Option<ExitStatus>> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1; the child is
    // not reaped yet, so its pid is still its own.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, child.id(), 0) };
    let pidfd = libc::c_int::try_from(pidfd)
        .ok()
        .filter(|fd| *fd >= 0)
        // SAFETY: a descriptor just returned to this thread, owned by nothing else.
        .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) });
    let mut pause = Duration::from_micros(50);
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(None);
        }
        if !pidfd.as_ref().is_some_and(|fd| readable_by(fd, left)) {
            std::thread::sleep(pause.min(left));
            pause = (pause * 2).min(Duration::from_millis(5));
        }
    }
}

/// Waits until `fd` is readable or `left` has passed; `false` if the wait failed.
fn readable_by(fd: &OwnedFd, left: Duration) -> bool {
    let mut ready = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = libc::c_int::try_from(left.as_millis() + 1).unwrap_or(libc::c_int::MAX);
    // SAFETY: one pollfd that lives across the call.
    unsafe { libc::poll(&raw mut ready, 1, ms) >= 0 }
}

/// The most of stdout read at once, taken from the budget before the sink sees it.
const STDOUT_CHUNK: usize = 256 << 10;

/// The pipe's size asked for: the unprivileged maximum.
const PIPE: libc::c_int = 1 << 20;

/// Reads stdout to its end into `sink`, taking every piece from `budget` before passing it on.
fn read_budgeted(
    mut out: ChildStdout,
    budget: &AtomicU64,
    sink: &mut dyn Sink,
) -> Result<(), Stopped> {
    // A pipe of 1 MiB instead of 64 KiB: Helm blocks on a full pipe until nyl is scheduled to
    // read it, which on a loaded machine costs more than the reading. Only a hint: without it
    // the output is the same.
    // SAFETY: fcntl on a descriptor this function owns; it touches no memory.
    unsafe {
        libc::fcntl(out.as_raw_fd(), libc::F_SETPIPE_SZ, PIPE);
    }
    // One buffer, reused: what is held is what the sink keeps, not the whole output. It grows
    // to what is read (a small release's output is a few kilobytes), never zeroed first.
    let mut chunk = Vec::new();
    loop {
        let (n, moved) = match sink.file() {
            Some(file) => {
                let n = move_into(&mut out, file, &mut chunk).map_err(|e| {
                    Stopped::Refused(format!("cannot move Helm's output into a file: {e}"))
                })?;
                (n, true)
            }
            None => (
                read_chunk(&mut out, &mut chunk).map_err(Stopped::Io)?,
                false,
            ),
        };
        if n == 0 {
            sink.emptied().map_err(Stopped::Refused)?;
            sink.ended();
            return Ok(());
        }
        budget
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                left.checked_sub(n as u64)
            })
            .map_err(|_| Stopped::OutputTooLarge)?;
        if moved {
            sink.moved(n)
        } else {
            sink.push(&chunk)
        }
        .map_err(Stopped::Refused)?;
        if n < STDOUT_CHUNK {
            sink.emptied().map_err(Stopped::Refused)?;
        }
    }
}

/// Reads the next [`STDOUT_CHUNK`] bytes of the pipe into `buf` (fewer at the end), retrying
/// interrupted reads; returns how many.
fn read_chunk(pipe: &mut ChildStdout, buf: &mut Vec<u8>) -> io::Result<usize> {
    buf.clear();
    pipe.take(STDOUT_CHUNK as u64).read_to_end(buf)
}

/// Moves what the pipe holds, up to [`STDOUT_CHUNK`] bytes, into `file` at its position:
/// `splice`, so that the kernel copies it and nothing passes through nyl's memory, or through
/// `buf` where the file cannot take a splice (a file system without it, a file opened to
/// append). Returns how much was moved, 0 at the end.
fn move_into(pipe: &mut ChildStdout, file: &File, buf: &mut Vec<u8>) -> io::Result<usize> {
    loop {
        // SAFETY: splice between two descriptors this process has open, each at its own
        // position (no offsets given); it touches no memory of nyl's.
        let n = unsafe {
            libc::splice(
                pipe.as_raw_fd(),
                std::ptr::null_mut(),
                file.as_raw_fd(),
                std::ptr::null_mut(),
                STDOUT_CHUNK,
                0,
            )
        };
        if let Ok(n) = usize::try_from(n) {
            return Ok(n);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => {}
            // Nothing was moved: the same bytes, by a read and a write.
            Some(libc::EINVAL | libc::ENOSYS | libc::EPERM) => {
                let n = read_chunk(pipe, buf)?;
                (&*file).write_all(buf)?;
                return Ok(n);
            }
            _ => return Err(e),
        }
    }
}

/// A sink that keeps everything, for small outputs (`helm version`, `helm pull`).
pub fn keep_all(kept: &mut Vec<u8>) -> impl FnMut(&[u8]) -> Result<(), String> + Send + '_ {
    |bytes| {
        kept.extend_from_slice(bytes);
        Ok(())
    }
}

/// Reads stderr to its end, keeping its start and counting the rest.
fn read_head(mut errors: ChildStderr) -> Stderr {
    let mut stderr = Stderr::default();
    let mut chunk = vec![0; 16 << 10];
    loop {
        let n = match errors.read(&mut chunk) {
            Ok(0) => return stderr,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return stderr,
        };
        let keep = n.min(STDERR_KEEP - stderr.head.len());
        stderr.head.extend_from_slice(&chunk[..keep]);
        stderr.cut += (n - keep) as u64;
    }
}

/// The process groups of the children running now, for the signal handler (which may only
/// touch atomics). A slot holds a group id, or 0.
static GROUPS: [AtomicI32; 256] = [const { AtomicI32::new(0) }; 256];

/// Spawns between `fork` and their registration in [`GROUPS`]: a signal arriving then would
/// find nothing to kill, and nyl would end with the new child still running. The handler leaves
/// such a signal to the last spawner ([`SIGNALLED`]) instead.
static SPAWNING: AtomicI32 = AtomicI32::new(0);

/// The signal that arrived while a spawn was under way, or 0.
static SIGNALLED: AtomicI32 = AtomicI32::new(0);

/// A running child's process group, listed in [`GROUPS`] while the child is not reaped.
struct Group {
    id: i32,
    slot: Option<&'static AtomicI32>,
}

impl Group {
    /// Spawns `cmd` and lists its group in [`GROUPS`] before any signal can be acted on.
    fn spawn(cmd: &mut Command) -> io::Result<(Child, Group)> {
        SPAWNING.fetch_add(1, Ordering::SeqCst);
        let spawned = cmd.spawn().map(|child| {
            let group = Group::register(&child);
            (child, group)
        });
        SPAWNING.fetch_sub(1, Ordering::SeqCst);
        let signal = SIGNALLED.load(Ordering::SeqCst);
        if signal != 0 {
            stop_all_and_end_by(signal);
        }
        spawned
    }

    fn register(child: &Child) -> Group {
        // `process_group(0)` made the child the leader of a group with its own id.
        let id = i32::try_from(child.id()).unwrap_or(0);
        let slot = GROUPS.iter().find(|s| {
            s.compare_exchange(0, id, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
        });
        if slot.is_none() {
            warn!(
                "more than {} helm processes at once: a signal to nyl would not stop this one",
                GROUPS.len()
            );
        }
        Group { id, slot }
    }

    fn kill(&self) {
        if self.id > 0 {
            // SAFETY: kill(2) has no memory effects; a negative id names the process group.
            unsafe {
                libc::kill(-self.id, libc::SIGKILL);
            }
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(slot) = self.slot {
            slot.store(0, Ordering::SeqCst);
        }
    }
}

/// Ignores SIGXFSZ: a file past the operator's `RLIMIT_FSIZE` (a cache entry, a render-tree
/// output) then fails its write with `EFBIG` and the run with a message, where the signal would
/// end nyl halfway without one. Children inherit that, as Helm, a Go program, ignores it anyway.
pub fn fail_writes_past_the_file_size_limit() {
    // SAFETY: setting a signal to be ignored touches no memory and runs no handler.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// Installs the handler for SIGTERM, SIGINT and SIGHUP: it kills every running child's group,
/// then nyl ends by the signal as it would have without the handler.
pub fn stop_children_on_signals() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            // SAFETY: the action is fully initialised; the handler only loads atomics and calls
            // kill(2) and raise(3), which are async-signal-safe.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
                // The handler runs once; the signal it raises again then takes its default
                // action.
                action.sa_flags = libc::SA_RESETHAND;
                libc::sigemptyset(&raw mut action.sa_mask);
                libc::sigaction(signal, &raw const action, std::ptr::null_mut());
            }
        }
    });
}

extern "C" fn on_signal(signal: libc::c_int) {
    // Recorded before SPAWNING is read, and a spawner reads it after leaving SPAWNING: whichever
    // comes second acts, so a child spawned meanwhile is always killed.
    SIGNALLED.store(signal, Ordering::SeqCst);
    if SPAWNING.load(Ordering::SeqCst) == 0 {
        stop_all_and_end_by(signal);
    }
}

/// Kills every listed group, then ends nyl by `signal` with its default action. Only
/// async-signal-safe calls: it runs in the signal handler.
fn stop_all_and_end_by(signal: libc::c_int) {
    for slot in &GROUPS {
        let id = slot.load(Ordering::SeqCst);
        if id > 0 {
            // SAFETY: async-signal-safe; see `stop_children_on_signals`.
            unsafe {
                libc::kill(-id, libc::SIGKILL);
            }
        }
    }
    // SAFETY: as above. SA_RESETHAND restored the default action; in the handler the signal is
    // blocked, so it is delivered as the handler returns, elsewhere at once.
    unsafe {
        libc::raise(signal);
    }
}

/// The threads a run may use: its `-j` (or `NYL_JOBS`), else the cores available to it.
pub fn workers(jobs: Option<usize>) -> usize {
    jobs.unwrap_or_else(cores)
}

/// How many of `items` things run at once: one, or for more, the run's [`workers`] (the cores
/// are asked only then).
pub fn at_once(jobs: Option<usize>, items: usize) -> usize {
    if items > 1 {
        workers(jobs).min(items)
    } else {
        1
    }
}

/// The cores this process may run on (its CPU affinity and cgroup quota), as Go counts them
/// for its default `GOMAXPROCS`; asked once per run (the answer costs some twenty system calls).
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, std::num::NonZero::get))
}

/// The CPUs each of `at_once` helms that run side by side is told it may use (`GOMAXPROCS`):
/// the cores shared among them, at least one each; `None` for a helm that runs alone. Go sizes
/// its runtime to every core, and helms side by side then spend CPU on garbage-collection
/// workers that take the cores the others render on: on 2 cores, 24 releases two at a time took
/// 7% less CPU and 12% less time told one each (docs/performance.md).
pub fn go_threads(at_once: usize) -> Option<usize> {
    (at_once > 1).then(|| (cores() / at_once).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut cmd = Command::new("/bin/sh");
        cmd.args(["-c", script]);
        cmd
    }

    /// [`run`] of a shell script with nothing on its stdin, within `secs` seconds.
    fn run_sh(
        script: &str,
        secs: u64,
        budget: &AtomicU64,
        sink: &mut dyn Sink,
    ) -> Result<Finished, Stopped> {
        run(
            &mut sh(script),
            Vec::new(),
            Duration::from_secs(secs),
            budget,
            sink,
        )
    }

    /// A sink that wants all of stdout in its file; it notes how much was moved each time the
    /// pipe was found empty.
    struct IntoFile {
        file: File,
        moved: usize,
        emptied: Vec<usize>,
    }

    impl IntoFile {
        /// A sink into a new file at `path` (one left there before is removed).
        fn new(path: &std::path::Path, append: bool) -> IntoFile {
            let _ = std::fs::remove_file(path);
            let file = File::options()
                .create_new(true)
                .write(true)
                .append(append)
                .open(path)
                .unwrap();
            IntoFile {
                file,
                moved: 0,
                emptied: Vec::new(),
            }
        }
    }

    impl Sink for IntoFile {
        fn push(&mut self, _: &[u8]) -> Result<(), String> {
            Err("a piece was read, not moved".into())
        }
        fn file(&self) -> Option<&File> {
            Some(&self.file)
        }
        fn moved(&mut self, n: usize) -> Result<(), String> {
            self.moved += n;
            Ok(())
        }
        fn emptied(&mut self) -> Result<(), String> {
            self.emptied.push(self.moved);
            Ok(())
        }
    }

    #[test]
    fn the_sink_is_told_each_time_a_splice_finds_the_pipe_empty() {
        let path = std::env::temp_dir().join(format!("nyl-emptied-{}", std::process::id()));
        let mut sink = IntoFile::new(&path, false);
        let budget = AtomicU64::new(u64::MAX);
        // A pause between two pieces: each is taken as it comes, the pipe empty after it.
        let script = "printf abc; sleep 0.5; printf de";
        let done = run_sh(script, 10, &budget, &mut sink).unwrap();
        assert!(done.status.success());
        assert_eq!(sink.emptied, [3, 5, 5], "after each piece, and at the end");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn stdout_is_moved_into_a_file_by_splice_or_else_through_a_buffer() {
        let path = std::env::temp_dir().join(format!("nyl-moved-{}", std::process::id()));
        let printed = "0123456789abcdef\n".repeat(200_000);
        // A file opened to append takes no splice (EINVAL): the bytes go through a buffer.
        for append in [false, true] {
            let mut sink = IntoFile::new(&path, append);
            let budget = AtomicU64::new(u64::MAX);
            let done = run_sh(
                "yes 0123456789abcdef | head -n 200000",
                30,
                &budget,
                &mut sink,
            )
            .unwrap();
            assert!(done.status.success());
            assert_eq!(sink.moved, printed.len(), "append: {append}");
            assert_eq!(u64::MAX - budget.into_inner(), printed.len() as u64);
            assert!(
                std::fs::read_to_string(&path).unwrap() == printed,
                "append: {append}"
            );
        }
        std::fs::remove_file(&path).unwrap();
    }

    /// A sink that keeps what it is given and, once told that stdout ended, makes `flag`; it
    /// notes how much it held each time the pipe was found empty.
    struct Flagging {
        out: Vec<u8>,
        flag: std::path::PathBuf,
        ended: usize,
        emptied: Vec<usize>,
    }

    impl Sink for Flagging {
        fn push(&mut self, bytes: &[u8]) -> Result<(), String> {
            self.out.extend_from_slice(bytes);
            Ok(())
        }
        fn emptied(&mut self) -> Result<(), String> {
            assert_eq!(self.ended, 0, "emptied after the end");
            self.emptied.push(self.out.len());
            Ok(())
        }
        fn ended(&mut self) {
            self.ended += 1;
            File::create(&self.flag).unwrap();
        }
    }

    #[test]
    fn the_sink_is_told_when_stdout_ends_before_the_child_exits() {
        // The child closes stdout and exits only once the sink has been told: were it told at
        // the exit, the run would time out.
        let flag = std::env::temp_dir().join(format!("nyl-ended-{}", std::process::id()));
        let _ = std::fs::remove_file(&flag);
        let mut sink = Flagging {
            out: Vec::new(),
            flag: flag.clone(),
            ended: 0,
            emptied: Vec::new(),
        };
        let script = format!(
            "printf abc; exec >&-; while [ ! -e {} ]; do sleep 0.01; done",
            flag.display()
        );
        let budget = AtomicU64::new(u64::MAX);
        let done = run_sh(&script, 10, &budget, &mut sink).unwrap();
        assert!(done.status.success());
        assert_eq!((sink.out.as_slice(), sink.ended), (&b"abc"[..], 1));
        // A read takes up to a chunk or the end: the pipe is found empty at the end only.
        assert_eq!(sink.emptied, [3, 3]);
        std::fs::remove_file(&flag).unwrap();
    }

    #[test]
    fn output_within_the_budget_is_read_and_taken_from_it() {
        let budget = AtomicU64::new(100);
        let mut out = Vec::new();
        let done = run(
            &mut sh("cat; echo err >&2"),
            b"hello".to_vec(),
            Duration::from_secs(30),
            &budget,
            &mut keep_all(&mut out),
        )
        .unwrap();
        assert!(done.status.success());
        assert_eq!(out, b"hello");
        assert_eq!(
            (done.stderr.head.as_slice(), done.stderr.cut),
            (&b"err\n"[..], 0)
        );
        assert_eq!(budget.load(Ordering::Relaxed), 95);
    }

    #[test]
    fn output_past_the_budget_stops_the_child() {
        let budget = AtomicU64::new(1 << 20);
        let stopped = run_sh("exec yes", 60, &budget, &mut keep_all(&mut Vec::new()));
        assert!(
            matches!(stopped, Err(Stopped::OutputTooLarge)),
            "{stopped:?}"
        );
    }

    #[test]
    fn a_sink_that_refuses_stops_the_child() {
        let budget = AtomicU64::new(u64::MAX);
        let mut refuse = |_: &[u8]| Err("not UTF-8".to_string());
        let stopped = run_sh("exec yes", 60, &budget, &mut refuse);
        assert!(
            matches!(&stopped, Err(Stopped::Refused(why)) if why == "not UTF-8"),
            "{stopped:?}"
        );
    }

    #[test]
    fn stderr_keeps_its_start_and_counts_the_rest() {
        let budget = AtomicU64::new(0);
        let done = run_sh(
            "head -c 1000000 /dev/zero | tr '\\0' x >&2; exit 3",
            60,
            &budget,
            &mut keep_all(&mut Vec::new()),
        )
        .unwrap();
        assert_eq!(done.status.code(), Some(3));
        assert_eq!(done.stderr.head.len(), STDERR_KEEP);
        assert_eq!(done.stderr.cut, 1_000_000 - STDERR_KEEP as u64);
        assert!(done.stderr.text(str::to_string).ends_with(&format!(
            "[{} more bytes of stderr cut]",
            1_000_000 - STDERR_KEEP
        )));
    }

    #[test]
    fn a_child_past_its_deadline_is_stopped_with_its_group() {
        let budget = AtomicU64::new(0);
        let pid_file = std::env::temp_dir().join(format!("nyl-process-{}", std::process::id()));
        let script = format!("sleep 600 & echo $! > {}; wait", pid_file.display());
        let stopped = run_sh(&script, 1, &budget, &mut keep_all(&mut Vec::new()));
        assert!(matches!(stopped, Err(Stopped::TimedOut)), "{stopped:?}");
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        std::fs::remove_file(&pid_file).ok();
        assert!(
            gone(pid.trim()),
            "the grandchild {pid} outlived its group's kill"
        );
    }

    /// Whether a process has ended (absent, or a zombie waiting for its reaper).
    fn gone(pid: &str) -> bool {
        (0..200).any(|_| {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat"));
            let ended = state.map_or(true, |s| {
                s.rsplit_once(')')
                    .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
            });
            if !ended {
                std::thread::sleep(Duration::from_millis(50));
            }
            ended
        })
    }
}
