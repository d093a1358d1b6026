use anyhow::Result;

use crate::sim::{server, SimArgs};

pub fn run(args: &SimArgs) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(server::serve(args.clone()))
}
