//! Kubernetes' own expansion of container `command`, `args` and `env` values.
//!
//! The kubelet expands `$(NAME)` in those fields to the value of a variable of the container
//! (k8s.io/kubernetes third_party/forked/golang/expansion: `$$` is an escaped `$`, `$(NAME)` a
//! reference, any other `$` is kept). A value meant as literal text must therefore have every
//! `$` doubled; the YAML around it is [`crate::yaml`]'s job.

use std::borrow::Cow;

/// `s` written so that the kubelet's expansion gives back exactly `s`.
pub fn literal(s: &str) -> Cow<'_, str> {
    if s.contains('$') {
        Cow::Owned(s.replace('$', "$$"))
    } else {
        Cow::Borrowed(s)
    }
}

/// `prefix` as literal text followed by a reference to the container variable `var`
/// (`--node_rank=$(NODE_RANK)`); `var` must be a variable name (see [`crate::sh::var_name`]).
pub fn reference(prefix: &str, var: &str) -> String {
    format!("{}$({var})", literal(prefix))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The kubelet's expansion (expand.go), for the tests: `$$` → `$`, `$(NAME)` → mapping,
    /// `$(` without `)` and `$x` kept.
    fn expand(input: &str, mapping: impl Fn(&str) -> Option<String>) -> String {
        let b = input.as_bytes();
        let mut out = String::new();
        let mut checkpoint = 0;
        let mut cursor = 0;
        while cursor < b.len() {
            if b[cursor] == b'$' && cursor + 1 < b.len() {
                out.push_str(&input[checkpoint..cursor]);
                let rest = &input[cursor + 1..];
                let advance = match rest.as_bytes()[0] {
                    b'$' => {
                        out.push('$');
                        1
                    }
                    b'(' => match rest.find(')') {
                        Some(end) => {
                            let name = &rest[1..end];
                            out.push_str(&mapping(name).unwrap_or_else(|| format!("$({name})")));
                            end + 1
                        }
                        None => {
                            out.push_str("$(");
                            1
                        }
                    },
                    _ => {
                        let c = rest.chars().next().unwrap_or_default();
                        out.push('$');
                        out.push(c);
                        c.len_utf8()
                    }
                };
                cursor += advance;
                checkpoint = cursor + 1;
            }
            cursor += 1;
        }
        if checkpoint <= b.len() {
            out.push_str(&input[checkpoint.min(b.len())..]);
        }
        out
    }

    #[test]
    fn the_model_of_the_kubelet_expands_as_documented() {
        let m = |n: &str| (n == "RANK").then(|| "3".to_string());
        assert_eq!(expand("$(RANK)", m), "3");
        assert_eq!(expand("$$(RANK)", m), "$(RANK)");
        assert_eq!(expand("a$b", m), "a$b");
        assert_eq!(expand("$(NOPE)", m), "$(NOPE)");
        assert_eq!(expand("x$", m), "x$");
    }

    proptest::proptest! {
        #[test]
        fn literals_expand_to_themselves(s in "[$()a-zA-Z_ ]{0,16}|\\PC{0,8}") {
            let m = |_: &str| Some("EXPANDED".to_string());
            proptest::prop_assert_eq!(expand(&literal(&s), m), s.clone());
            let r = reference(&s, "RANK");
            proptest::prop_assert_eq!(expand(&r, m), format!("{s}EXPANDED"));
        }
    }
}
