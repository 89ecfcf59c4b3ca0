//! The plugin as gradwire loads it: found on a plugin path, listed, created by name, and its decoder
//! fed hostile payloads through gw_codec_decode (the runtime's header checks, then this decoder).
use gradwire::{Codec, CodecContext, DType, Runtime, RuntimeOptions, Status};
use std::path::PathBuf;

/// A folder holding only the built cdylib.
fn plugin_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap(); // target/<profile>/deps: cargo test builds the cdylib there
    let lib = [deps.join("libgw_ternary.so"), deps.parent().unwrap().join("libgw_ternary.so")]
        .into_iter()
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("libgw_ternary.so not built next to {}", exe.display()));
    // Cargo's scratch folder for integration tests (inside target/, so nothing is left in /tmp).
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("gw-ternary-test-{}", std::process::id()));
    // Once per process: copying over a library another test thread has loaded would corrupt its mapping.
    static COPY: std::sync::Once = std::sync::Once::new();
    COPY.call_once(|| {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(&lib, dir.join("libgw-ternary.so")).unwrap();
    });
    dir
}

fn runtime(toml: &str) -> Runtime {
    Runtime::with_options(&RuntimeOptions {
        config_text: Some(toml.to_string()),
        plugin_paths: vec![plugin_dir()],
        no_env_overrides: true,
        ..Default::default()
    })
    .unwrap_or_else(|e| panic!("{e}"))
}

fn codec() -> Codec {
    runtime("").codec(Some("ternary")).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn listed_with_its_component() {
    let rt = runtime("");
    let p = rt.plugins().unwrap();
    let t = p.iter().find(|p| p.name == "rust_ternary").expect("rust_ternary not listed");
    assert!(t.error.is_none(), "{:?}", t.error);
    assert_eq!(t.version, "1.0.0");
    assert_eq!(t.abi, (1, 1));
    assert_eq!(t.components.len(), 1);
    assert_eq!(t.components[0].name, "ternary");
    let reference = rt.config_dump(gradwire::ConfigFormat::Reference).unwrap();
    assert!(reference.contains("stochastic"), "the key is not documented: {reference}");
}

#[test]
fn round_trip_through_gradwire() {
    let mut c = codec();
    assert_eq!(c.name(), "ternary");
    let x: Vec<f32> = (0..1000).map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0).collect();
    assert_eq!(c.max_encoded_size(DType::F32, 1000).unwrap(), 32 + 4 + 250);
    let ctx = CodecContext { seed: 3, step: 1, ..Default::default() };
    let p = c.encode(Some(&ctx), &x).unwrap();
    let mut y = vec![0f32; 1000];
    c.decode(None, &p, &mut y, false).unwrap();
    let s = x.iter().fold(0f32, |m, v| m.max(v.abs()));
    assert!(y.iter().all(|v| *v == 0.0 || v.abs() == s));
    // Stochastic rounding keeps the sign
    assert!(x.iter().zip(&y).all(|(a, b)| *b == 0.0 || a.signum() == b.signum()));
    // accumulate adds
    let mut z = vec![1f32; 1000];
    c.decode(None, &p, &mut z, true).unwrap();
    assert!(z.iter().zip(&y).all(|(a, b)| *a == 1.0 + b));
}

#[test]
fn deterministic_mode_from_the_configuration() {
    let mut c = runtime("[codec.ternary]\nstochastic = false\n").codec(Some("ternary")).unwrap();
    assert_eq!(c.properties().unwrap().flags & gradwire::sys::GW_CODEC_STATEFUL, 0);
    let x = [0.1f32, -0.9, 1.0, 0.49, -0.51];
    let p = c.encode(None, &x).unwrap();
    let mut y = [0f32; 5];
    c.decode(None, &p, &mut y, false).unwrap();
    assert_eq!(y, [0.0, -1.0, 1.0, 0.0, -1.0]);
    let e = Runtime::with_options(&RuntimeOptions {
        config_text: Some("[codec.ternary]\nstochastic = 3\n".into()),
        plugin_paths: vec![plugin_dir()],
        no_env_overrides: true,
        ..Default::default()
    })
    .err()
    .expect("stochastic = 3 accepted");
    assert_eq!(e.status, Status::Config);
    assert!(e.message.contains("stochastic must be a boolean"), "{e}");
}

#[test]
fn bad_input_is_an_error_with_the_plugins_message() {
    let mut c = codec();
    let e = c.encode(None, &[1.0f32, f32::INFINITY]).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(e.message.contains("must be finite"), "{e}");
    let e = c.encode(None, &[1.0f64, 2.0]).unwrap_err();
    assert!(e.status == Status::Unsupported || e.status == Status::InvalidArgument, "{e}");
    let mut small = [0u8; 33];
    let e = c.encode_into(None, &[1.0f32; 64], &mut small).unwrap_err();
    assert_eq!(e.status, Status::BufferTooSmall, "{e}");
}

/// Replaces the body of a valid payload, keeping the header consistent with the new length.
fn with_body(valid: &[u8], body: &[u8]) -> Vec<u8> {
    let mut p = valid[..32].to_vec();
    p[24..32].copy_from_slice(&(body.len() as u64).to_le_bytes());
    p.extend_from_slice(body);
    p
}

#[test]
fn decoder_survives_hostile_payloads() {
    let mut c = codec();
    let n = 37usize;
    let x: Vec<f32> = (0..n).map(|i| i as f32 - 18.0).collect();
    let valid = c.encode(None, &x).unwrap();
    let body = valid[32..].to_vec();
    let mut out = vec![0f32; n];
    // Cut off, extended, emptied: the header's length no longer matches (runtime) or the body's does (codec).
    for cut in [0usize, 1, 31, 33, valid.len() - 1] {
        let e = c.decode(None, &valid[..cut], &mut out, false).unwrap_err();
        assert_eq!(e.status, Status::Corrupt, "cut at {cut}: {e}");
    }
    let mut longer = body.clone();
    longer.push(0);
    for b in [vec![], body[..body.len() - 1].to_vec(), longer] {
        let e = c.decode(None, &with_body(&valid, &b), &mut out, false).unwrap_err();
        assert_eq!(e.status, Status::Corrupt, "{e}");
        assert!(e.message.contains("ternary"), "the codec's message is lost: {e}");
    }
    // Bad scale, invalid code, padding bits
    for (at, byte) in [(3usize, 0x7fu8), (3, 0xff), (3, 0xbf), (4, 0xff), (body.len() - 1, 0xff)] {
        let mut b = body.clone();
        b[at] = byte;
        if at == 3 {
            b[2] = 0xc0; // with 0x7f: NaN; with 0xff: -NaN; with 0xbf: -1.5
        }
        let e = c.decode(None, &with_body(&valid, &b), &mut out, false).unwrap_err();
        assert_eq!(e.status, Status::Corrupt, "byte {at} = {byte:#x}: {e}");
    }
    // Another codec's payload, another count
    let mut other = runtime("").codec(Some("int8")).unwrap();
    let int8 = other.encode(None, &x).unwrap();
    assert_eq!(c.decode(None, &int8, &mut out, false).unwrap_err().status, Status::Mismatch);
    let mut fewer = vec![0f32; n - 1];
    assert_eq!(c.decode(None, &valid, &mut fewer, false).unwrap_err().status, Status::Mismatch);
    // Random bodies of every length up to 3 x the valid one: OK or CORRUPT, never anything else, and a
    // decoded value is always one of {-s, 0, s}.
    let mut state = 0x1234_5678_9abc_def0u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut ok = 0;
    for i in 0..20000 {
        let len = (next() % (3 * body.len() as u64 + 1)) as usize;
        let mut b: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        if i % 2 == 0 && len >= 4 {
            b[..4].copy_from_slice(&((next() % 1000) as f32).to_le_bytes()); // plausible scales too
            for v in b[4..].iter_mut() {
                *v &= 0b0101_0101 | (*v & 0b1010_1010 & !((*v & 0b0101_0101) << 1)); // fewer 3 codes
            }
        }
        let mut o = vec![7f32; n];
        match c.decode(None, &with_body(&valid, &b), &mut o, false) {
            Ok(()) => {
                ok += 1;
                let s = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                assert!(o.iter().all(|v| *v == 0.0 || v.abs() == s));
            }
            Err(e) => assert_eq!(e.status, Status::Corrupt, "{e}"),
        }
    }
    assert!(ok > 0, "no random body decoded: the generator never made a valid one");
}
