use std::io;

/// Everything that can go wrong on a control connection; `peer` names the other end.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The socket failed for a reason other than a timeout or a closed connection.
    #[error("connection to {peer} failed")]
    Io {
        /// The other end (`host:port` or a rank's name).
        peer: String,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The peer sent nothing, or not the whole message, before the deadline.
    #[error("{peer} did not answer within {secs:.1} s")]
    Timeout {
        /// The other end.
        peer: String,
        /// The deadline that passed, in seconds.
        secs: f64,
    },
    /// The peer closed or reset the connection.
    #[error("{peer} closed the connection")]
    Closed {
        /// The other end.
        peer: String,
    },
    /// A frame's length prefix is above the channel's bound; nothing of it was allocated.
    #[error("{peer} sent a frame of {len} bytes; the limit is {max}")]
    FrameTooLarge {
        /// The other end.
        peer: String,
        /// The length the prefix announced.
        len: u64,
        /// The bound in force.
        max: u32,
    },
    /// The peer's answer to the challenge does not match: it holds another token.
    #[error("{peer} failed authentication: the token differs (set the same --token or FABRIK_TOKEN on both ends)")]
    AuthFailed {
        /// The other end.
        peer: String,
    },
    /// The peer speaks another protocol or version, or sent a message out of turn.
    #[error("{peer} is not a fabrik peer of this protocol version ({detail})")]
    Protocol {
        /// The other end.
        peer: String,
        /// What was expected and what came.
        detail: String,
    },
    /// A frame arrived whole but is not the JSON message expected.
    #[error("{peer} sent a malformed message")]
    Malformed {
        /// The other end.
        peer: String,
        /// The decoder's error.
        #[source]
        source: serde_json::Error,
    },
    /// The shared token cannot be used.
    #[error("the token is empty or not printable ASCII")]
    BadToken,
    /// The operating system gave no random bytes for a challenge or a session id.
    #[error("no randomness from the operating system: {0}")]
    Random(String),
}

impl WireError {
    /// Maps an I/O error on a socket with timeouts set to the error a user should read.
    pub(crate) fn from_io(peer: &str, err: io::Error, timeout_secs: f64) -> Self {
        match err.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => WireError::Timeout {
                peer: peer.to_string(),
                secs: timeout_secs,
            },
            io::ErrorKind::UnexpectedEof
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe => WireError::Closed {
                peer: peer.to_string(),
            },
            _ => WireError::Io {
                peer: peer.to_string(),
                source: err,
            },
        }
    }
}

/// The error's message followed by each of its causes (`a: b: c`), for carrying an error into a
/// message string without losing the operating system's reason, which `to_string` drops.
pub fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_follow_the_message() {
        let e = WireError::Io {
            peer: "10.77.0.5:41559".into(),
            source: io::Error::from_raw_os_error(113),
        };
        let text = with_causes(&e);
        assert!(
            text.starts_with("connection to 10.77.0.5:41559 failed: "),
            "{text}"
        );
        assert!(
            text.contains(&io::Error::from_raw_os_error(113).to_string()),
            "{text}"
        );
        let plain = WireError::Closed { peer: "x".into() };
        assert_eq!(with_causes(&plain), "x closed the connection");
    }
}
