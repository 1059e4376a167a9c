//! `fabrik report RESULTS.json... -o report.html`: one self-contained HTML page from collective
//! runs (fabrik's and parsed nccl-tests runs), pair matrices, doctor reports and inventories.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use fabrik_render::report::{classify, render_with, PageMeta, PngRenderer};

use crate::output::write_atomically;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Result files: the JSON of `doctor`, `cluster doctor`, `cluster matrix`, `bench p2p`,
    /// `bench collective`, `logs`, `inventory`, `parse nccl-tests` and `parse perftest`.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// The HTML page to write.
    #[arg(short, long, default_value = "report.html")]
    pub output: PathBuf,
    /// Also write each plot as an SVG file into this directory.
    #[arg(long, value_name = "DIR")]
    pub svg: Option<PathBuf>,
    /// Also write each plot as a PNG file into this directory (text in a system font such as
    /// DejaVu Sans from fonts-dejavu-core; without one the PNGs have no text).
    #[arg(long, value_name = "DIR")]
    pub png: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut inputs = Vec::new();
    for path in &args.inputs {
        let text = fabrik_probe::input::read_text(
            path,
            "result file",
            fabrik_probe::input::cap::REPORT_INPUT,
        )?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string());
        inputs.extend(classify(&name, &text)?);
    }
    let meta = PageMeta {
        generated: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
    };
    let page = render_with(&inputs, &meta)?;
    write_atomically(&args.output, page.html.as_bytes())?;
    if let Some(dir) = &args.svg {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        for (name, svg) in &page.plots {
            write_atomically(&dir.join(format!("{name}.svg")), svg.as_bytes())?;
        }
    }
    if let Some(dir) = &args.png {
        // The system's fonts (fontdb reads the usual font directories itself, no fontconfig
        // library needed, so it works headless); the renderer itself reads no file.
        let mut fonts = fontdb::Database::new();
        fonts.load_system_fonts();
        let renderer = PngRenderer::with_fonts(fonts);
        if renderer.font_family().is_none() {
            eprintln!(
                "fabrik: warning: no font found in the system's font directories (on Debian: apt-get install fonts-dejavu-core); the PNG plots are drawn without text"
            );
        }
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        for (name, svg) in &page.plots {
            let png = renderer
                .png(svg)
                .with_context(|| format!("rendering plot {name} as PNG"))?;
            write_atomically(&dir.join(format!("{name}.png")), &png)?;
        }
    }
    eprintln!(
        "fabrik: wrote {} ({} plots from {} inputs)",
        args.output.display(),
        page.plots.len(),
        inputs.len()
    );
    Ok(ExitCode::SUCCESS)
}
