//! PNG copies of the report's plots: each SVG rasterised by resvg, text set in a font the caller
//! loaded (the CLI loads the system's; this crate reads no file).
//!
//! The plots stay drawn once, as SVG by plotters; rasterising that SVG (rather than drawing
//! again on plotters' bitmap backend) keeps the PNG identical to the page's figure, and leaves
//! the SVG path free of any font file: plotters' own text engines for bitmaps need either
//! fontconfig (`ttf`) or a font registered before any text is measured (`ab_glyph`, which would
//! then also govern SVG layout and fail it when no font is installed).

pub use resvg::usvg::fontdb;
use resvg::{tiny_skia, usvg};

use super::ReportError;

/// Families tried, in order, for the plots' `sans-serif` text (Debian: fonts-dejavu-core,
/// fonts-liberation, fonts-noto-core).
const SANS: [&str; 4] = ["DejaVu Sans", "Liberation Sans", "Noto Sans", "FreeSans"];

/// Turns plot SVGs into PNG bytes with the fonts it was given.
pub struct PngRenderer {
    opts: usvg::Options<'static>,
    family: Option<String>,
}

impl PngRenderer {
    /// Sets the plots' text in the fonts of `db`, which the caller filled (with the system's
    /// fonts, say: `fontdb`'s `load_system_fonts` reads the usual font directories itself, no
    /// fontconfig library needed). An empty database draws the plots without text.
    pub fn with_fonts(mut db: fontdb::Database) -> Self {
        let families: Vec<String> = db
            .faces()
            .filter_map(|f| f.families.first().map(|(name, _)| name.clone()))
            .collect();
        let family = SANS
            .iter()
            .find(|want| families.iter().any(|f| f == *want))
            .map(|s| s.to_string())
            .or_else(|| families.first().cloned());
        if let Some(f) = &family {
            db.set_sans_serif_family(f.clone());
        }
        let mut opts = usvg::Options::default();
        if let Some(f) = &family {
            opts.font_family = f.clone();
        }
        *opts.fontdb_mut() = db;
        Self { opts, family }
    }

    /// The family the plots' text is set in; `None` when no font was found, in which case the
    /// PNGs are drawn without any text.
    pub fn font_family(&self) -> Option<&str> {
        self.family.as_deref()
    }

    /// The PNG of one plot, at the SVG's own size in pixels.
    pub fn png(&self, svg: &str) -> Result<Vec<u8>, ReportError> {
        let err = |e: &dyn std::fmt::Display| ReportError::Raster(e.to_string());
        let tree = usvg::Tree::from_str(svg, &self.opts).map_err(|e| err(&e))?;
        let size = tree.size().to_int_size();
        let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height())
            .ok_or_else(|| err(&format!("empty size {}x{}", size.width(), size.height())))?;
        resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
        pixmap.encode_png().map_err(|e| err(&e))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use fabrik_model::{CollectiveReport, ResultSource};

    /// Width, height and RGBA pixels, decoded by the `png` crate (not by what encoded them).
    fn decode(bytes: &[u8]) -> (u32, u32, Vec<u8>) {
        let mut dec = png::Decoder::new(bytes);
        dec.set_transformations(png::Transformations::EXPAND);
        let mut reader = dec.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!(info.color_type, png::ColorType::Rgba);
        buf.truncate(info.buffer_size());
        (info.width, info.height, buf)
    }

    /// The fonts `fabrik report --png` uses: the system's.
    fn system_fonts() -> PngRenderer {
        let mut db = fontdb::Database::new();
        db.load_system_fonts();
        PngRenderer::with_fonts(db)
    }

    fn run() -> CollectiveReport {
        crate::testkit::collective("all_reduce", ResultSource::Fabrik)
    }

    #[test]
    fn busbw_plot_becomes_a_png_of_its_size_with_lines_and_text() {
        let r = run();
        let svg = crate::report::busbw_plot("all_reduce", &[("run.json".into(), &r)]).unwrap();
        let renderer = system_fonts();
        let (w, h, px) = decode(&renderer.png(&svg).unwrap());
        assert_eq!((w, h), (900, 480));
        let pixels: Vec<&[u8]> = px.chunks(4).collect();
        let white = pixels.iter().filter(|p| p[..3] == [255, 255, 255]).count();
        // The first palette colour (31,119,180) draws the run's curve.
        let blue = pixels
            .iter()
            .filter(|p| p[0] < 80 && p[2] > 150 && p[1] > 90 && p[1] < 150)
            .count();
        assert!(white > pixels.len() / 2, "background is white");
        assert!(blue > 200, "the curve is drawn: {blue} blue pixels");
        if renderer.font_family().is_some() {
            let dark = pixels
                .iter()
                .filter(|p| p[..3].iter().all(|&c| c < 90))
                .count();
            assert!(dark > 500, "text and axes: {dark} dark pixels");
        }
    }

    #[test]
    fn without_fonts_the_plot_is_still_drawn_and_says_so() {
        let r = run();
        let svg = crate::report::busbw_plot("all_reduce", &[("run.json".into(), &r)]).unwrap();
        let renderer = PngRenderer::with_fonts(fontdb::Database::new());
        assert_eq!(renderer.font_family(), None);
        let (w, h, px) = decode(&renderer.png(&svg).unwrap());
        assert_eq!((w, h), (900, 480));
        assert!(px.chunks(4).any(|p| p[..3] != [255, 255, 255]));
    }

    #[test]
    fn bad_svg_is_an_error_not_a_panic() {
        let renderer = PngRenderer::with_fonts(fontdb::Database::new());
        for bad in ["<svg", "not svg at all"] {
            match renderer.png(bad) {
                Err(ReportError::Raster(why)) => assert!(!why.is_empty(), "{bad}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
    }
}
