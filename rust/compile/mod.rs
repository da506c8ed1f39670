//! Machine → network constructions, one file per construction.
