use std::time::Duration;

use anyhow::Result;

use crate::cli::ServeArgs;
use speed_matrix::serve::{serve, ServeOptions};

pub fn run(a: &ServeArgs) -> Result<()> {
    serve(ServeOptions {
        config: a.site.config_writing(&a.out)?,
        bind: a.bind,
        port: a.port,
        open: a.open,
        live_reload: !a.no_live_reload,
        poll: Duration::from_millis(500),
    })
}
