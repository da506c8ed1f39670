//! Number formats: exact rationals (shared-denominator vectors), IEEE binary floats and
//! custom float formats `FloatFormat(mantissa_bits, exponent_bits)`.
pub mod correctly_rounded;
pub mod custom_float;
pub mod custom_format;
pub mod dtype;
pub mod exact_vector;
pub mod f32_sums;
pub mod float;
pub mod fused;
pub mod rational;
pub mod round;
pub mod scalar;
