//! `haloport report` and `haloport compare`: reading result files, no MPI.

use std::path::{Path, PathBuf};

use anyhow::Context;
use haloport_cli::report::{compare as cmp, load, write_report};

use crate::cli::{CompareArgs, ReportArgs};

fn default_out(input: &Path) -> PathBuf {
    if input.is_dir() {
        input.to_path_buf()
    } else {
        input
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
    }
}

pub fn report(args: &ReportArgs) -> anyhow::Result<()> {
    let out = args.out.clone().unwrap_or_else(|| default_out(&args.input));
    let written = write_report(&args.input, &out)?;
    if let Some(partial) = &written.partial {
        println!("{}", partial.summary());
        for line in &partial.missing {
            println!("  missing: {line}");
        }
    }
    println!("report: {}", written.report.display());
    for f in &written.files {
        println!("  {}", f.display());
    }
    Ok(())
}

pub fn compare(args: &CompareArgs) -> anyhow::Result<()> {
    let files = args
        .inputs
        .iter()
        .map(|p| load(p))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let rows = cmp::rows(&files, args.force)?;
    let table = cmp::markdown(&files, &rows);
    print!("{table}");
    if let Some(out) = &args.out {
        std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
        std::fs::write(out.join("compare.md"), &table)
            .with_context(|| format!("writing {}", out.join("compare.md").display()))?;
        cmp::plot(&files, &rows, &out.join("compare.svg"))?;
        println!(
            "written: {} and {}",
            out.join("compare.md").display(),
            out.join("compare.svg").display()
        );
    }
    Ok(())
}
