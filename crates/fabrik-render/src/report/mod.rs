//! `fabrik report`: one self-contained HTML page from fabrik's JSON result files, its plots as
//! SVG, and PNG copies of the plots.
//!
//! [`classify`] recognises each input by its shape, [`render_with`] lays out the page and draws
//! the plots ([`busbw_plot`], [`heatmap`]), and [`PngRenderer`] rasterises a plot.

mod escape;
mod evidence;
mod html;
mod input;
mod png;
mod svg;

pub use html::{collective_incomplete, render, render_with, PageMeta, Rendered};
pub use input::{classify, LogDoc, Named, ReportInput};
pub use png::{fontdb, PngRenderer};
pub use svg::{busbw_plot, heatmap};

/// Why a report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// An input file is not a fabrik result, or not a well-formed one; the message names it.
    #[error("{0}")]
    Input(String),
    /// plotters refused to draw a plot.
    #[error("drawing a plot: {0}")]
    Plot(String),
    /// resvg could not rasterise a plot.
    #[error("rasterising a plot: {0}")]
    Raster(String),
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
