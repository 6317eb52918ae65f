//! Pure parsing shared by the guest components (no host calls, unit-tested
//! on the native target with `cargo test -p switchboard-tabular`):
//!
//! * [`csv`]: the RFC 4180 reader over `csv-core` (contacts import, CSV/TSV
//!   ingestion) and [`csv::write_record`];
//! * [`jsonscan`]: element-by-element scanning of a top-level JSON array;
//! * [`xlsx`]: the first worksheet of an XLSX/XLSM workbook (`zip` + `quick-xml`);
//! * [`base64`]: canonical standard base64 (the `base64` crate), decoded piecewise;
//! * [`infer`]: cell kinds, column type decisions and cell interpretation;
//! * [`sheet_dates`]: a workbook's date formats and serials.

pub mod base64;
pub mod csv;
pub mod infer;
pub mod jsonscan;
pub mod sheet_dates;
pub mod xlsx;
