//! Number formats: exact rationals (shared-denominator vectors) and IEEE binary floats.
pub mod dtype;
pub mod exact_vector;
pub mod float;
pub mod rational;
pub mod round;
pub mod scalar;
