//! A Widget controller that remembers which generation of each Widget it reconciled — by
//! name — and forgets a Widget on its DELETED event. A Widget deleted and created again
//! whose DELETED event it never sees is "already done" to it, and never gets a status
//! (`stalemate::demo::widgets`). Only a user's delete and recreate can show it: explore
//! finds it with its generated actions, and not without them.
//!
//! ```sh
//! stalemate explore --setup examples/widgets/setup.yaml -- target/debug/generation-memo [--fixed]
//! ```

use stalemate::demo::widgets::{Kind, example_main};

#[tokio::main]
async fn main() -> std::process::ExitCode {
    example_main("generation-memo", |fixed| Kind::GenerationMemo { fixed }).await
}
