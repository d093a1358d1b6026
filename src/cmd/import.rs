use anyhow::Result;

use crate::cli::ImportArgs;
use speed_matrix::format::facts::ManifestFacts;
use speed_matrix::import::import_paths;
use speed_matrix::import::sources::Format;
use speed_matrix::units::terminal_safe;

pub fn run(a: &ImportArgs) -> Result<()> {
    let facts = ManifestFacts { tool_version: a.tool_version.clone(), ..a.facts.to_manifest_facts()? };
    let format = a.format.as_deref().map(Format::parse).transpose()?;
    let (runs, broken) = import_paths(&a.paths, format, &a.data, a.run_id.as_deref(), a.force, &facts, a.skip_broken)?;
    for b in &broken {
        eprintln!("skipped {}: {}", terminal_safe(&b.path.display().to_string()), terminal_safe(&b.why));
    }
    for s in &runs {
        say!(
            "Imported {} into {} ({} cells, {} Over capacity reconstructed, {} with warnings)",
            terminal_safe(&s.found),
            s.run_dir.display(),
            s.cells,
            s.reconstructed_over_capacity,
            s.warned
        );
        if !s.not_told.is_empty() {
            say!("  not in the files: {}", terminal_safe(&s.not_told.join(", ")));
        }
    }
    say!("Publish with: site build");
    Ok(())
}
