// SPDX-License-Identifier: MIT OR Apache-2.0
//! The element types of score rows: f32, [`Bf16`] and [`F16`].

use crate::ffi;

/// bfloat16 bits (bit-compatible with `half::bf16`).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Bf16(pub u16);

/// IEEE binary16 bits (bit-compatible with `half::f16`).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct F16(pub u16);

impl Bf16 {
    /// Rounds to nearest even (NaN stays NaN).
    pub fn from_f32(x: f32) -> Self {
        let bits = x.to_bits();
        if x.is_nan() {
            return Bf16((bits >> 16) as u16 | 0x40);
        }
        let rounding = 0x7fff + ((bits >> 16) & 1);
        Bf16((bits.wrapping_add(rounding) >> 16) as u16)
    }
    /// The value, exactly.
    pub fn to_f32(self) -> f32 {
        f32::from_bits((self.0 as u32) << 16)
    }
}

impl F16 {
    /// The value, exactly.
    pub fn to_f32(self) -> f32 {
        let sign = if self.0 & 0x8000 != 0 { -1.0f32 } else { 1.0 };
        let exponent = ((self.0 >> 10) & 31) as i32;
        let mantissa = (self.0 & 1023) as f32;
        sign * match exponent {
            0 => mantissa * 2f32.powi(-24),
            31 if mantissa == 0.0 => f32::INFINITY,
            31 => f32::NAN,
            e => (mantissa + 1024.0) * 2f32.powi(e - 25),
        }
    }
}

/// An element type the kernels read and write (computing in f32).
pub trait ScoreElement: Copy + private::Sealed {
    #[doc(hidden)]
    const TYPE: ffi::rlx_score_type;
}
impl ScoreElement for f32 {
    const TYPE: ffi::rlx_score_type = ffi::RLX_SCORE_F32;
}
impl ScoreElement for Bf16 {
    const TYPE: ffi::rlx_score_type = ffi::RLX_SCORE_BF16;
}
impl ScoreElement for F16 {
    const TYPE: ffi::rlx_score_type = ffi::RLX_SCORE_F16;
}
mod private {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for super::Bf16 {}
    impl Sealed for super::F16 {}
}
