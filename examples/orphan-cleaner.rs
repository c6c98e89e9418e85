//! A controller that deletes ConfigMaps labelled `widget=NAME` whose Widget is gone —
//! and, buggy, takes "not in my cache" for gone (`stalemate::demo::widgets`). Its bug needs
//! a workload that creates a Widget and its ConfigMap while the controller runs:
//!
//! ```sh
//! stalemate explore --setup examples/widgets/setup.yaml \
//!     --workload 'kubectl create -f examples/widgets/w2.yaml' \
//!     -- target/debug/orphan-cleaner [--fixed]
//! ```

use stalemate::demo::widgets::{Kind, example_main};

#[tokio::main]
async fn main() -> std::process::ExitCode {
    example_main("orphan-cleaner", |fixed| Kind::OrphanCleaner { fixed }).await
}
