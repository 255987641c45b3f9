//! A run's output: the first and the last half of the cap kept (the end is
//! where a traceback is), the rest counted, stored as text.

use tokio::io::AsyncReadExt;

use std::os::fd::OwnedFd;

/// Bytes a run printed as text that can be stored anywhere: invalid UTF-8
/// and NUL characters (which PostgreSQL refuses) become U+FFFD.
pub(super) fn stored_text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).replace('\0', "\u{FFFD}")
}

/// What a run wrote so far: its first and last bytes (up to the cap
/// together) and the total. The end is where a traceback usually is.
#[derive(Default)]
pub(super) struct Captured {
    pub(super) head: Vec<u8>,
    pub(super) tail: std::collections::VecDeque<u8>,
    pub(super) total: u64,
}

impl Captured {
    /// The kept output; a cut in the middle is marked in the text.
    pub(super) fn text(&self) -> Vec<u8> {
        let kept = self.head.len() + self.tail.len();
        let mut out = self.head.clone();
        if self.total > kept as u64 {
            out.extend_from_slice(format!("\n[… {} bytes cut …]\n", self.total - kept as u64).as_bytes());
        }
        out.extend(self.tail.iter());
        out
    }
}

/// Reads everything into `into`, keeping the first and last `cap / 2` bytes
/// and counting the rest.
pub(super) async fn read_capped(fd: OwnedFd, cap: usize, into: std::sync::Arc<std::sync::Mutex<Captured>>) {
    let Ok(mut rx) = tokio::net::unix::pipe::Receiver::from_owned_fd(fd) else { return };
    let (head_cap, tail_cap) = (cap / 2, cap - cap / 2);
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match rx.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let mut c = into.lock().unwrap_or_else(|p| p.into_inner());
                c.total += n as u64;
                let to_head = n.min(head_cap.saturating_sub(c.head.len()));
                c.head.extend_from_slice(&buf[..to_head]);
                c.tail.extend(&buf[to_head..n]);
                let excess = c.tail.len().saturating_sub(tail_cap);
                c.tail.drain(..excess);
            }
        }
    }
}
