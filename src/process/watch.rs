//! Word of a file's growth while a child writes it: dnotify on its directory, a signal to the
//! one thread that follows it, read from a `signalfd`.
//!
//! Why dnotify: inotify and fanotify tell the same, but each instance is a group of its own that
//! the kernel tears down on `close`, and that waits for an SRCU grace period (up to some 15 ms
//! measured in a render); dnotify's watches belong to one group that is never torn down. Looking
//! at the file's length on a timer instead costs a wake-up each time, and each took Helm's
//! rendering more than it gave (docs/performance.md, 2026-12-03 and 2026-12-04).
//!
//! The signal goes to the following thread only (`F_SETOWN_EX`, `F_OWNER_TID`), blocked there
//! and read from its `signalfd`, so no handler runs and no other thread sees it; `SIGIO` as well,
//! which the kernel sends in its place when the real-time signal queue is full and whose default
//! action would end nyl. Both are drained before they are unblocked again.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

// From <fcntl.h>, which the libc crate does not give for this target.
const F_SETSIG: libc::c_int = 10;
const F_SETOWN_EX: libc::c_int = 15;
const F_OWNER_TID: libc::c_int = 0;
const DN_MODIFY: libc::c_int = 0x2;
const DN_MULTISHOT: libc::c_int = i32::MIN; // 0x8000_0000

#[repr(C)]
struct OwnerEx {
    kind: libc::c_int,
    pid: libc::pid_t,
}

/// A watch on a directory: its [`Watch::fd`] is readable after any file in it was written to.
/// Made, used and dropped on one thread.
pub struct Watch {
    /// The signals, read here instead of delivered.
    signals: OwnedFd,
    /// The watched directory; closing it ends the watch.
    dir: Option<File>,
    /// The thread's signal mask before.
    mask: libc::sigset_t,
    /// Not `Send`: the signals go to the thread that made it, whose mask its drop restores.
    _thread: std::marker::PhantomData<*const ()>,
}

impl Watch {
    /// Watches `dir` for writes, for the calling thread; `None` where the kernel or the file
    /// system has no dnotify (the caller then learns of the output at the child's exit).
    pub fn new(dir: &Path) -> Option<Watch> {
        let set = signal_set();
        let mut mask = empty_set();
        // SAFETY: pthread_sigmask and signalfd read and write only the sets passed.
        let signals = unsafe {
            libc::pthread_sigmask(libc::SIG_BLOCK, &raw const set, &raw mut mask);
            libc::signalfd(-1, &raw const set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK)
        };
        if signals < 0 {
            restore(&mask);
            return None;
        }
        // From here on, dropping the watch restores the mask.
        let mut watch = Watch {
            // SAFETY: a descriptor signalfd just made, owned from here on.
            signals: unsafe { OwnedFd::from_raw_fd(signals) },
            dir: None,
            mask,
            _thread: std::marker::PhantomData,
        };
        let dir = File::open(dir).ok()?;
        let owner = OwnerEx {
            kind: F_OWNER_TID,
            // SAFETY: gettid has no preconditions.
            pid: unsafe { libc::gettid() },
        };
        let fd = dir.as_raw_fd();
        // SAFETY: fcntl on a descriptor owned here; F_SETOWN_EX reads the struct passed.
        let watching = unsafe {
            libc::fcntl(fd, F_SETSIG, rt_signal()) == 0
                && libc::fcntl(fd, F_SETOWN_EX, &raw const owner) == 0
                && libc::fcntl(fd, libc::F_NOTIFY, DN_MODIFY | DN_MULTISHOT) == 0
        };
        watch.dir = Some(dir);
        watching.then_some(watch)
    }

    /// Readable when a write was signalled.
    pub fn fd(&self) -> libc::c_int {
        self.signals.as_raw_fd()
    }

    /// Takes the signals that have come.
    pub fn drain(&self) {
        let mut infos = [0u8; 16 * std::mem::size_of::<libc::signalfd_siginfo>()];
        // SAFETY: reads into a local buffer of the given length; the descriptor is non-blocking.
        while unsafe { libc::read(self.fd(), infos.as_mut_ptr().cast(), infos.len()) } > 0 {}
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        // Closing the directory ends the watch; what it signalled before is taken, and only then
        // are the signals unblocked (one still pending would be delivered, and end nyl).
        drop(self.dir.take());
        self.drain();
        restore(&self.mask);
    }
}

/// Sets the calling thread's signal mask to `mask`.
fn restore(mask: &libc::sigset_t) {
    // SAFETY: pthread_sigmask reads the initialised set it is given.
    unsafe {
        libc::pthread_sigmask(libc::SIG_SETMASK, mask, std::ptr::null_mut());
    }
}

/// The real-time signal a watch is told by. glibc keeps the first ones for itself and
/// `SIGRTMIN()` is past them; nyl uses no other.
fn rt_signal() -> libc::c_int {
    libc::SIGRTMIN() + 1
}

fn empty_set() -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the set it is given.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut set);
        set
    }
}

fn signal_set() -> libc::sigset_t {
    let mut set = empty_set();
    // SAFETY: adds valid signal numbers to an initialised set.
    unsafe {
        libc::sigaddset(&raw mut set, rt_signal());
        libc::sigaddset(&raw mut set, libc::SIGIO);
    }
    set
}

/// Whether this kernel can follow a child by a pidfd (Linux 5.3), asked once.
pub fn pidfds() -> bool {
    static ANSWER: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ANSWER.get_or_init(|| pidfd(std::process::id()).is_ok())
}

/// A descriptor that is readable once process `pid` has ended.
pub fn pidfd(pid: u32) -> io::Result<OwnedFd> {
    let pid = libc::pid_t::try_from(pid).map_err(io::Error::other)?;
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let fd = libc::c_int::try_from(fd).map_err(io::Error::other)?;
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor, owned from here on.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}
