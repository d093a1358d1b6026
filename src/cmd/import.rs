use anyhow::Result;

use crate::cli::ImportArgs;
use speed_matrix::import::import;

pub fn run(a: &ImportArgs) -> Result<()> {
    let facts = a.facts.to_manifest_facts()?;
    let s = import(&a.file, &a.data, a.run_id.as_deref(), a.force, &facts)?;
    println!(
        "Imported {} cells into {} ({} Over capacity reconstructed, {} with warnings). Publish with: site build",
        s.cells,
        s.run_dir.display(),
        s.reconstructed_over_capacity,
        s.warned
    );
    Ok(())
}
