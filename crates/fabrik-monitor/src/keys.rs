//! `q` to quit `fabrik top`, as in top(1): the terminal on stdin read key by key while `top`
//! waits between samples.

use std::io::{IsTerminal, Read};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::termios::{tcgetattr, tcsetattr, LocalFlags, SetArg, SpecialCharacterIndices};

/// The terminal on stdin without line buffering or echo, so a single `q` is read at once;
/// put back as it was when dropped.
pub struct Keys {
    saved: nix::sys::termios::Termios,
}

impl Keys {
    /// Takes the terminal on stdin; `None` when stdin is not a terminal or cannot be set.
    pub fn open() -> Option<Keys> {
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            return None;
        }
        let saved = tcgetattr(&stdin).ok()?;
        let mut raw = saved.clone();
        raw.local_flags
            .remove(LocalFlags::ICANON | LocalFlags::ECHO);
        raw.control_chars[SpecialCharacterIndices::VMIN as usize] = 0;
        raw.control_chars[SpecialCharacterIndices::VTIME as usize] = 0;
        tcsetattr(&stdin, SetArg::TCSANOW, &raw).ok()?;
        Some(Keys { saved })
    }

    /// Waits up to `wait` for keys; true when one of them is `q`.
    pub fn quit_within(&self, wait: Duration) -> bool {
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            let stdin = std::io::stdin();
            let ms = i32::try_from(left.as_millis().max(1)).unwrap_or(i32::MAX);
            let timeout = PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX);
            let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, timeout) {
                Ok(n) if n > 0 => {
                    let mut buf = [0u8; 64];
                    match stdin.lock().read(&mut buf) {
                        Ok(0) | Err(_) => {
                            // stdin closed: no more keys; sleep out the interval.
                            std::thread::sleep(left);
                            return false;
                        }
                        Ok(k) => {
                            if buf[..k].iter().any(|b| matches!(b, b'q' | b'Q')) {
                                return true;
                            }
                        }
                    }
                }
                Ok(_) => return false,
                Err(nix::errno::Errno::EINTR) => {}
                Err(_) => {
                    std::thread::sleep(left);
                    return false;
                }
            }
        }
    }
}

/// Spends `left` waiting for `q` when `keys` is held, else sleeping; true when `q` came.
pub fn wait(keys: Option<&Keys>, left: Duration) -> bool {
    match keys {
        Some(k) => k.quit_within(left),
        None => {
            std::thread::sleep(left);
            false
        }
    }
}

impl Drop for Keys {
    fn drop(&mut self) {
        let _ = tcsetattr(std::io::stdin(), SetArg::TCSANOW, &self.saved);
    }
}
