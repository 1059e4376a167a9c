//! `fabrik parse <tool>`: what was read from a pasted command output, as the tool's
//! [`FactTable`]. The findings follow, rendered by [`crate::findings::text`].

use std::fmt::Write as _;

use fabrik_model::FactTable;

/// The table as aligned text columns, then its notes.
pub fn table(t: &FactTable) -> String {
    let mut widths: Vec<usize> = t.columns.iter().map(|c| c.chars().count()).collect();
    for row in &t.rows {
        for (i, c) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(c.chars().count());
            }
        }
    }
    let line = |cells: &[String]| -> String {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            let w = widths.get(i).copied().unwrap_or(0);
            if i + 1 == cells.len() {
                s.push_str(c);
            } else {
                let _ = write!(s, "{c:<w$}  ");
            }
        }
        s.trim_end().to_string()
    };
    let mut out = String::new();
    if !t.columns.is_empty() {
        let _ = writeln!(out, "{}", line(&t.columns));
    }
    for row in &t.rows {
        let _ = writeln!(out, "{}", line(row));
    }
    for n in &t.notes {
        let _ = writeln!(out, "{n}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up_and_notes_follow() {
        let mut t = FactTable::new(["port", "state"]);
        t.row(["mlx5_0:1", "Active"]);
        t.row(["mlx5_10:1", ""]);
        t.note("ibstat error: gone");
        assert_eq!(
            table(&t),
            "port       state\nmlx5_0:1   Active\nmlx5_10:1  -\nibstat error: gone\n"
        );
    }
}
