//! Text set into the page's HTML and SVG: escaped, so a value from a result file stays data.

/// `s` with `&`, `<`, `>` and `"` escaped for HTML text and attribute values.
pub(super) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
