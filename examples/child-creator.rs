//! A Widget controller that gives each Widget one child ConfigMap — and, buggy, creates
//! another whenever its cache has not seen the first (`stalemate::demo::widgets`).
//!
//! ```sh
//! stalemate explore --setup examples/widgets/setup.yaml -- target/debug/child-creator [--fixed]
//! ```

use stalemate::demo::widgets::{Kind, example_main};

#[tokio::main]
async fn main() -> std::process::ExitCode {
    example_main("child-creator", |fixed| Kind::ChildCreator { fixed }).await
}
