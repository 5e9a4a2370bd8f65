//! The `haloport` command's library half: the result files it writes and reads
//! ([`results`]) and the reports, plots and comparisons drawn from them ([`report`]). The
//! command itself (`src/main.rs`) runs the thesis benchmark (`haloport-thesis`), the stencil
//! application (`haloport-stencil`) and the library's tools (`plan`, `info`) on any backend
//! built in.

pub mod report;
pub mod results;
