//! A run's cells in one file (schema 5): `runs/<id>/cells.jsonl.gz`, gzip of one cell a
//! line. One file a run, not one a cell: 10,000 runs of 162 cells are 20,000 data files, not
//! 1.6 million, so a build that finds nothing changed stats them in a blink, a git host holds
//! them, and the cells compress together (the measured 48-cell `--repeat 3` run: 74 KB, where
//! a file a cell took 122 KB). The bench writes the file again after every cell: compressing
//! a run's cells takes milliseconds beside the seconds a cell is measured. A file of several
//! gzip members (joined by hand) reads as one text, as `zcat` reads it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::model::{Cell, Phase};

/// Where a cell sits in a run: one cell a key.
pub type CellKey = (Phase, u32, u32, u32);

pub fn cell_key(c: &Cell) -> CellKey {
    (c.phase, c.context, c.concurrency, c.repetition)
}

/// The cells of a run being written, a line each, in key order.
#[derive(Debug, Default)]
pub struct CellPack {
    lines: BTreeMap<CellKey, String>,
}

impl CellPack {
    /// Adds a cell, or replaces the cell of the same key, from its one-line JSON.
    pub fn insert(&mut self, key: CellKey, json_line: &str) {
        debug_assert!(!json_line.contains('\n'), "a cell of a pack is one line");
        self.lines.insert(key, json_line.to_string());
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// The file's bytes: the lines in key order, compressed together.
    pub fn bytes(&self) -> Vec<u8> {
        let mut text = String::with_capacity(self.lines.values().map(|l| l.len() + 1).sum());
        for line in self.lines.values() {
            text.push_str(line);
            text.push('\n');
        }
        crate::units::gzip(text.as_bytes())
    }
}

/// A cell's line in a pack: compact JSON (the loose files are pretty-printed).
pub fn cell_line(c: &Cell) -> String {
    serde_json::to_string(c).expect("a cell serializes")
}

/// The lines of a pack's text, numbered from 1, blank lines left out.
pub fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().map(|(i, l)| (i + 1, l)).filter(|(_, l)| !l.trim().is_empty())
}

/// What names a packed cell in a message: `path:line`.
pub fn line_path(path: &Path, line: usize) -> PathBuf {
    PathBuf::from(format!("{}:{line}", path.display()))
}

/// A JSON error in line `line` of a pack, located as `path:line:column`.
pub fn located(path: &Path, line: usize, e: &serde_json::Error) -> anyhow::Error {
    super::json::located_at(path, line, e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Status;
    use std::io::Read as _;

    fn parse_cells(path: &Path, text: &str) -> Vec<(usize, anyhow::Result<Cell>)> {
        lines(text).map(|(n, l)| (n, serde_json::from_str::<Cell>(l).map_err(|e| located(path, n, &e)))).collect()
    }

    #[test]
    fn a_pack_is_one_gzip_text_of_a_line_a_cell_in_key_order_and_a_cell_replaces_its_twin() {
        let mut pack = CellPack::default();
        let later = Cell::new(Phase::Decode, 1024, 4, Status::Valid);
        let mut first = Cell::new(Phase::Decode, 1024, 2, Status::Valid);
        pack.insert(cell_key(&later), &cell_line(&later));
        pack.insert(cell_key(&first), &cell_line(&first));
        first.status = Status::Error;
        pack.insert(cell_key(&first), &cell_line(&first));
        assert_eq!(pack.len(), 2);
        let mut text = String::new();
        flate2::read::MultiGzDecoder::new(&pack.bytes()[..]).read_to_string(&mut text).unwrap();
        let cells: Vec<Cell> = parse_cells(Path::new("p"), &text).into_iter().map(|(_, c)| c.unwrap()).collect();
        assert_eq!(
            cells.iter().map(|c| (c.concurrency, c.status)).collect::<Vec<_>>(),
            [(2, Status::Error), (4, Status::Valid)]
        );
    }

    #[test]
    fn a_broken_line_is_named_by_its_line_and_column() {
        let text = format!("{}\n\n{{\"phase\": 3}}\n", cell_line(&Cell::new(Phase::Prefill, 512, 1, Status::Valid)));
        let parsed = parse_cells(Path::new("runs/r/cells.jsonl.gz"), &text);
        assert!(parsed[0].1.is_ok());
        let e = parsed[1].1.as_ref().unwrap_err().to_string();
        assert_eq!(parsed[1].0, 3);
        assert!(e.starts_with("runs/r/cells.jsonl.gz:3:"), "{e}");
    }
}
