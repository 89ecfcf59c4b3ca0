//! The codec itself, in safe Rust: ternary quantization with stochastic rounding (TernGrad-style).
//!
//! Each value x of a buffer becomes one of {-s, 0, +s}, s = max |x| of the buffer. With stochastic
//! rounding it is sign(x)·s with probability |x|/s and 0 otherwise, so the decoded value is unbiased:
//! E[decode(encode(x))] = x. Without it (`stochastic = false`), |x| ≥ s/2 rounds to sign(x)·s.
//!
//! Body (little-endian): f32 s (finite, ≥ 0), then 2 bits per element, element i in byte i/4 at bit
//! 2·(i mod 4): 0 → 0, 1 → +s, 2 → −s; 3 is invalid, and the unused bits of the last byte are 0.
//! Length: exactly 4 + ceil(n/4) bytes. Anything else is rejected by `decode` as corrupt.
//!
//! The random numbers come from a counter-based hash of (seed, step, rank, element index), so every
//! encoding is reproducible from the codec context alone.

/// Why encoding or decoding failed; `status` is a gw_status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fail {
    pub status: i32,
    pub message: String,
}

fn fail(status: i32, message: impl Into<String>) -> Fail {
    Fail { status, message: message.into() }
}

pub const HEADER: usize = 4;

/// Body bytes for `n` elements.
pub fn body_size(n: u64) -> u64 {
    HEADER as u64 + (n + 3) / 4
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// What varies per call: the shared seed and step, and this rank (ranks draw independent noise).
#[derive(Debug, Clone, Copy, Default)]
pub struct Stream {
    pub seed: u64,
    pub step: u64,
    pub rank: u32,
}

impl Stream {
    fn base(&self) -> u64 {
        splitmix64(self.seed ^ splitmix64(self.step ^ splitmix64(0x7465_726e_0000_0000 | self.rank as u64)))
    }
}

/// A uniform number in [0, 1) for element i.
fn uniform(base: u64, i: u64) -> f32 {
    (splitmix64(base ^ i.wrapping_mul(0xd1b5_4a32_d192_ed03)) >> 40) as f32 * (1.0 / 16_777_216.0)
}

/// Encodes `x` into `body`; returns the body's length.
pub fn encode(x: &[f32], stochastic: bool, stream: Stream, body: &mut [u8]) -> Result<usize, Fail> {
    let need = body_size(x.len() as u64) as usize;
    if body.len() < need {
        return Err(fail(
            super::abi::GW_ERR_BUFFER_TOO_SMALL,
            format!("ternary: the body needs {need} bytes, the capacity is {}", body.len()),
        ));
    }
    let mut scale = 0f32;
    for (i, v) in x.iter().enumerate() {
        if !v.is_finite() {
            return Err(fail(
                super::abi::GW_ERR_INVALID_ARGUMENT,
                format!("ternary: element {i} is {v}; the input must be finite (check the gradients for overflow)"),
            ));
        }
        scale = scale.max(v.abs());
    }
    body[..HEADER].copy_from_slice(&scale.to_le_bytes());
    let codes = &mut body[HEADER..need];
    for b in codes.iter_mut() {
        *b = 0;
    }
    if scale > 0.0 {
        let base = stream.base();
        for (i, &v) in x.iter().enumerate() {
            let p = v.abs() / scale;
            let keep = if stochastic { uniform(base, i as u64) < p } else { p >= 0.5 };
            if keep {
                let code: u8 = if v > 0.0 { 1 } else { 2 };
                codes[i / 4] |= code << (2 * (i % 4));
            }
        }
    }
    Ok(need)
}

/// Decodes `body` into `out` (adds to it with `accumulate`). Checks every length and code first, so a
/// corrupt body changes nothing.
pub fn decode(body: &[u8], out: &mut [f32], accumulate: bool) -> Result<(), Fail> {
    let n = out.len() as u64;
    let need = body_size(n);
    if body.len() as u64 != need {
        return Err(fail(
            super::abi::GW_ERR_CORRUPT,
            format!("ternary: the body has {} bytes, {n} elements need {need}", body.len()),
        ));
    }
    let mut s = [0u8; HEADER];
    s.copy_from_slice(&body[..HEADER]);
    let scale = f32::from_le_bytes(s);
    if !scale.is_finite() || scale < 0.0 {
        return Err(fail(super::abi::GW_ERR_CORRUPT, format!("ternary: the scale {scale} is not a finite value >= 0")));
    }
    let codes = &body[HEADER..];
    for (j, &b) in codes.iter().enumerate() {
        for k in 0..4 {
            let i = j as u64 * 4 + k;
            let c = (b >> (2 * k)) & 3;
            if i >= n && c != 0 {
                return Err(fail(super::abi::GW_ERR_CORRUPT, "ternary: padding bits after the last element are not 0"));
            }
            if c == 3 {
                return Err(fail(super::abi::GW_ERR_CORRUPT, format!("ternary: element {i} has the invalid code 3")));
            }
        }
    }
    for (i, o) in out.iter_mut().enumerate() {
        let v = match (codes[i / 4] >> (2 * (i % 4))) & 3 {
            1 => scale,
            2 => -scale,
            _ => 0.0,
        };
        *o = if accumulate { *o + v } else { v };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_rounding_is_within_half_the_scale() {
        let x: Vec<f32> = (0..101).map(|i| (i as f32 - 50.0) * 0.37).collect();
        let mut body = vec![0u8; body_size(101) as usize];
        let n = encode(&x, false, Stream::default(), &mut body).unwrap();
        assert_eq!(n, body.len());
        let mut y = vec![0f32; 101];
        decode(&body, &mut y, false).unwrap();
        let s = 50.0 * 0.37;
        for (a, b) in x.iter().zip(&y) {
            assert!((a - b).abs() <= s / 2.0 + 1e-5, "{a} -> {b}");
        }
    }

    #[test]
    fn stochastic_rounding_is_unbiased() {
        let x: Vec<f32> = (0..64).map(|i| ((i * 37 % 64) as f32 / 32.0) - 1.0).collect();
        let mut sum = vec![0f64; 64];
        let trials = 4000;
        let mut body = vec![0u8; body_size(64) as usize];
        let mut y = vec![0f32; 64];
        for step in 0..trials {
            encode(&x, true, Stream { seed: 7, step, rank: 0 }, &mut body).unwrap();
            decode(&body, &mut y, false).unwrap();
            for (s, v) in sum.iter_mut().zip(&y) {
                *s += *v as f64;
            }
        }
        // Each value is a Bernoulli draw scaled by s = 1: the standard deviation of the mean is at most
        // 0.5 / sqrt(4000) ≈ 0.008; 0.05 is over six of them.
        for (s, v) in sum.iter().zip(&x) {
            assert!((s / trials as f64 - *v as f64).abs() < 0.05, "mean {} for {v}", s / trials as f64);
        }
    }

    #[test]
    fn same_stream_same_bits_other_rank_other_bits() {
        let x: Vec<f32> = (0..1000).map(|i| (i as f32 * 0.1).sin()).collect();
        let mut a = vec![0u8; body_size(1000) as usize];
        let mut b = a.clone();
        let mut c = a.clone();
        encode(&x, true, Stream { seed: 1, step: 2, rank: 0 }, &mut a).unwrap();
        encode(&x, true, Stream { seed: 1, step: 2, rank: 0 }, &mut b).unwrap();
        encode(&x, true, Stream { seed: 1, step: 2, rank: 1 }, &mut c).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn rejects_non_finite_input_and_small_capacity() {
        let mut body = vec![0u8; 8];
        assert_eq!(encode(&[1.0, f32::NAN], true, Stream::default(), &mut body).unwrap_err().status,
                   super::super::abi::GW_ERR_INVALID_ARGUMENT);
        assert_eq!(encode(&[1.0; 40], true, Stream::default(), &mut body).unwrap_err().status,
                   super::super::abi::GW_ERR_BUFFER_TOO_SMALL);
    }

    #[test]
    fn corrupt_bodies_leave_the_output_alone() {
        let mut out = vec![5.0f32; 6];
        let good = [0, 0, 128, 63, 0b1001_0001, 0b0000_0110]; // scale 1.0; codes 1,0,1,2 | 2,1
        decode(&good, &mut out, false).unwrap();
        assert_eq!(out, vec![1.0, 0.0, 1.0, -1.0, -1.0, 1.0]);
        let cases: Vec<Vec<u8>> = vec![
            vec![],
            good[..5].to_vec(),
            [&good[..], &[0]].concat(),
            vec![0, 0, 192, 127, 0, 0],         // NaN scale
            vec![0, 0, 128, 255, 0, 0],         // -inf
            vec![0, 0, 128, 191, 0, 0],         // -1.0
            vec![0, 0, 128, 63, 0b11, 0],       // code 3
            vec![0, 0, 128, 63, 0, 0b0001_0000], // padding bit set
        ];
        for c in cases {
            let mut o = vec![5.0f32; 6];
            assert_eq!(decode(&c, &mut o, false).unwrap_err().status, super::super::abi::GW_ERR_CORRUPT, "{c:?}");
            assert_eq!(o, vec![5.0; 6]);
        }
    }
}
