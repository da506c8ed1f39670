//! Network → machine: automata extraction.
