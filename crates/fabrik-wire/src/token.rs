use crate::WireError;

/// A shared secret both ends of a control connection must know.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// Accepts any non-empty printable-ASCII string (users type it or pass it in env).
    pub fn new(text: &str) -> Result<Self, WireError> {
        let text = text.trim();
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(WireError::BadToken);
        }
        Ok(Token(text.to_string()))
    }

    /// 128 random bits as 32 hex digits, for a server that was given no token.
    pub fn random() -> Result<Self, WireError> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|e| WireError::Random(e.to_string()))?;
        Ok(Token(hex(&bytes)))
    }

    /// The token's text, as both ends must hold it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Token {
    // Never print the secret in logs or error chains.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(…)")
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn random_tokens_are_distinct_hex() {
        let (Ok(a), Ok(b)) = (Token::random(), Token::random()) else {
            panic!("no randomness")
        };
        assert_eq!(a.as_str().len(), 32);
        assert!(a.as_str().bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn empty_or_unprintable_tokens_are_refused() {
        for bad in ["", "  ", "a b", "tab\there", "é"] {
            assert!(
                matches!(Token::new(bad), Err(WireError::BadToken)),
                "{bad:?}"
            );
        }
        // Surrounding whitespace is not part of the secret.
        assert_eq!(Token::new(" s3cret\n").unwrap().as_str(), "s3cret");
        assert_eq!(format!("{:?}", Token::new("s3cret").ok()), "Some(Token(…))");
    }
}
