//! Helpers shared by the CLI's integration tests.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::path::Path;

/// Copies a fixture tree (files and directories) over `to`, creating what is missing: a test
/// node whose counters a test changes by copying the `after` side of a pair.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), &dest).unwrap();
        }
    }
}

/// Distinct colours in a PNG (any bit depth and colour type the `png` crate expands to 8-bit
/// samples): a blank plot or page has one or two.
pub fn png_colours(path: &Path) -> usize {
    let mut decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    ));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder
        .read_info()
        .unwrap_or_else(|e| panic!("{} is not a PNG: {e}", path.display()));
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let bpp = info.color_type.samples();
    // Colour only: pixels differing in alpha alone are one colour.
    let colour = match info.color_type {
        png::ColorType::Grayscale | png::ColorType::GrayscaleAlpha => 1,
        _ => 3,
    };
    let mut seen = std::collections::HashSet::new();
    for px in buf[..info.buffer_size()].chunks(bpp) {
        seen.insert(px[..colour].to_vec());
    }
    seen.len()
}
