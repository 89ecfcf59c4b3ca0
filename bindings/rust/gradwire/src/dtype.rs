//! Element types: `DType` and the `Element` trait implemented by every type a buffer may hold.
use gradwire_sys as sys;

/// gradwire's element types (`gw_dtype`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    F32,
    F64,
    F16,
    BF16,
    I32,
    I64,
    U8,
}

impl DType {
    pub fn to_raw(self) -> sys::gw_dtype {
        match self {
            DType::F32 => sys::GW_DTYPE_F32,
            DType::F64 => sys::GW_DTYPE_F64,
            DType::F16 => sys::GW_DTYPE_F16,
            DType::BF16 => sys::GW_DTYPE_BF16,
            DType::I32 => sys::GW_DTYPE_I32,
            DType::I64 => sys::GW_DTYPE_I64,
            DType::U8 => sys::GW_DTYPE_U8,
        }
    }
    /// The library's name ("f32", ...).
    pub fn name(self) -> String {
        // SAFETY: static storage for any value.
        unsafe { crate::error::cstr(sys::gw_dtype_name(self.to_raw())) }
    }
    /// Bytes per element, as the library says.
    pub fn size(self) -> usize {
        // SAFETY: no pointer involved.
        unsafe { sys::gw_dtype_size(self.to_raw()) as usize }
    }
}

/// IEEE 754 half precision, stored as its bits (no arithmetic; convert with `to_f32`/`from_f32`).
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct F16(pub u16);

/// bfloat16, stored as its bits.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BF16(pub u16);

impl BF16 {
    /// Rounds to nearest even; NaN stays NaN.
    pub fn from_f32(x: f32) -> BF16 {
        let b = x.to_bits();
        if x.is_nan() {
            return BF16(((b >> 16) as u16) | 0x40);
        }
        let round = 0x7fff + ((b >> 16) & 1);
        BF16((b.wrapping_add(round) >> 16) as u16)
    }
    pub fn to_f32(self) -> f32 {
        f32::from_bits((self.0 as u32) << 16)
    }
}

impl F16 {
    /// Rounds to nearest even; overflow becomes infinity, NaN stays NaN.
    pub fn from_f32(x: f32) -> F16 {
        let b = x.to_bits();
        let sign = ((b >> 16) & 0x8000) as u16;
        let exp = ((b >> 23) & 0xff) as i32;
        let man = b & 0x7f_ffff;
        if exp == 0xff {
            return F16(sign | 0x7c00 | if man != 0 { 0x200 } else { 0 });
        }
        let e = exp - 127 + 15;
        if e >= 0x1f {
            return F16(sign | 0x7c00);
        }
        if e <= 0 {
            if e < -10 {
                return F16(sign);
            }
            let m = man | 0x80_0000;
            let shift = (14 - e) as u32;
            let half = 1u32 << (shift - 1);
            let rest = m & ((1u32 << shift) - 1);
            let mut r = m >> shift;
            if rest > half || (rest == half && (r & 1) == 1) {
                r += 1;
            }
            return F16(sign | r as u16);
        }
        let mut r = ((e as u32) << 10) | (man >> 13);
        let rest = man & 0x1fff;
        if rest > 0x1000 || (rest == 0x1000 && (r & 1) == 1) {
            r += 1; // may carry into the exponent, up to infinity: correct
        }
        F16(sign | r as u16)
    }
    pub fn to_f32(self) -> f32 {
        let h = self.0 as u32;
        let sign = (h & 0x8000) << 16;
        let exp = (h >> 10) & 0x1f;
        let man = h & 0x3ff;
        let bits = if exp == 0 {
            if man == 0 {
                sign
            } else {
                // subnormal: normalize
                let mut e = 127 - 15 + 1;
                let mut m = man;
                while m & 0x400 == 0 {
                    m <<= 1;
                    e -= 1;
                }
                sign | ((e as u32) << 23) | ((m & 0x3ff) << 13)
            }
        } else if exp == 0x1f {
            sign | 0x7f80_0000 | (man << 13)
        } else {
            sign | ((exp + 127 - 15) << 23) | (man << 13)
        };
        f32::from_bits(bits)
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A type a gradwire buffer may hold. Implemented for f32, f64, i32, i64, u8, F16 and BF16 only.
pub trait Element: Copy + Default + sealed::Sealed + 'static {
    const DTYPE: DType;
}

macro_rules! element {
    ($t:ty, $d:ident) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = DType::$d;
        }
    };
}
element!(f32, F32);
element!(f64, F64);
element!(F16, F16);
element!(BF16, BF16);
element!(i32, I32);
element!(i64, I64);
element!(u8, U8);

/// A host tensor describing a slice (it does not own it).
pub(crate) fn tensor<T: Element>(data: &[T]) -> sys::gw_tensor {
    sys::gw_tensor {
        dtype: T::DTYPE.to_raw(),
        data: data.as_ptr() as *mut std::os::raw::c_void,
        count: data.len() as u64,
        ..Default::default()
    }
}

pub(crate) fn tensor_mut<T: Element>(data: &mut [T]) -> sys::gw_tensor {
    sys::gw_tensor {
        dtype: T::DTYPE.to_raw(),
        data: data.as_mut_ptr() as *mut std::os::raw::c_void,
        count: data.len() as u64,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_round_trips_every_finite_half() {
        for bits in 0u16..=0xffff {
            let h = F16(bits);
            let f = h.to_f32();
            if f.is_nan() {
                assert!(F16::from_f32(f).to_f32().is_nan());
            } else {
                assert_eq!(F16::from_f32(f), h, "bits {bits:#x} -> {f}");
            }
        }
    }

    #[test]
    fn f16_rounds_to_nearest_even_and_overflows_to_infinity() {
        assert_eq!(F16::from_f32(1.0).0, 0x3c00);
        assert_eq!(F16::from_f32(65504.0).0, 0x7bff);
        assert_eq!(F16::from_f32(70000.0).0, 0x7c00);
        // 1 + 2^-11 is halfway between 1 and the next half: ties to even (1.0)
        assert_eq!(F16::from_f32(1.0 + 1.0 / 2048.0).0, 0x3c00);
        assert_eq!(F16::from_f32(1.0 + 3.0 / 2048.0).0, 0x3c02);
    }

    #[test]
    fn bf16_round_trips_and_rounds_to_even() {
        for bits in (0u16..=0xffff).step_by(7) {
            let b = BF16(bits);
            if !b.to_f32().is_nan() {
                assert_eq!(BF16::from_f32(b.to_f32()), b);
            }
        }
        assert_eq!(BF16::from_f32(1.0).0, 0x3f80);
        assert_eq!(BF16::from_f32(f32::from_bits(0x3f80_8000)).0, 0x3f80); // tie to even
        assert_eq!(BF16::from_f32(f32::from_bits(0x3f81_8000)).0, 0x3f82);
    }

    #[test]
    fn dtype_sizes_match_the_library() {
        for (d, s) in [(DType::F32, 4), (DType::F64, 8), (DType::F16, 2), (DType::BF16, 2), (DType::I32, 4),
                       (DType::I64, 8), (DType::U8, 1)] {
            assert_eq!(d.size(), s, "{d:?}");
        }
        assert_eq!(DType::BF16.name(), "bf16");
    }
}
