//! Finds libgradwire: `GRADWIRE_DIR` (an install prefix holding include/gradwire/gradwire.h and
//! lib/libgradwire.so) first, else the `pkg-config` program (`gradwire.pc`). No bindgen: the
//! declarations in src/lib.rs are checked in and tests/layout.rs compares them with the C compiler.
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn from_prefix(prefix: &Path) -> Result<(PathBuf, PathBuf), String> {
    let include = prefix.join("include");
    if !include.join("gradwire/gradwire.h").is_file() {
        return Err(format!(
            "GRADWIRE_DIR={} has no include/gradwire/gradwire.h; point it at a gradwire install prefix \
             (cmake --install build --prefix PREFIX)",
            prefix.display()
        ));
    }
    for lib in ["lib", "lib64", "lib/x86_64-linux-gnu", "lib/aarch64-linux-gnu"] {
        let dir = prefix.join(lib);
        if dir.join("libgradwire.so").exists() || dir.join("libgradwire.so.0").exists() {
            return Ok((include, dir));
        }
    }
    Err(format!("GRADWIRE_DIR={} has no lib/libgradwire.so", prefix.display()))
}

fn from_pkg_config() -> Result<(PathBuf, PathBuf), String> {
    let out = Command::new("pkg-config")
        .args(["--cflags-only-I", "--libs-only-L", "gradwire"])
        .output()
        .map_err(|e| format!("cannot run pkg-config ({e}); install it or set GRADWIRE_DIR"))?;
    if !out.status.success() {
        return Err(format!(
            "pkg-config does not know gradwire ({}); install gradwire (its gradwire.pc), add its \
             lib/pkgconfig folder to PKG_CONFIG_PATH, or set GRADWIRE_DIR to its install prefix",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let mut include = None;
    let mut lib = None;
    for word in text.split_whitespace() {
        if let Some(p) = word.strip_prefix("-I") {
            include.get_or_insert_with(|| PathBuf::from(p));
        } else if let Some(p) = word.strip_prefix("-L") {
            lib.get_or_insert_with(|| PathBuf::from(p));
        }
    }
    // A system install may have neither flag: the compiler's default paths find it.
    Ok((
        include.unwrap_or_else(|| PathBuf::from("/usr/include")),
        lib.unwrap_or_else(|| PathBuf::from("/usr/lib")),
    ))
}

fn main() {
    println!("cargo:rerun-if-env-changed=GRADWIRE_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-changed=build.rs");
    let found = match env::var_os("GRADWIRE_DIR") {
        Some(dir) if !dir.is_empty() => from_prefix(Path::new(&dir)),
        _ => from_pkg_config(),
    };
    let (include, lib) = match found {
        Ok(v) => v,
        Err(e) => {
            eprintln!("gradwire-sys: {e}");
            std::process::exit(1);
        }
    };
    println!("cargo:rustc-link-search=native={}", lib.display());
    println!("cargo:rustc-link-lib=dylib=gradwire");
    // For dependents' build scripts (DEP_GRADWIRE_INCLUDE / DEP_GRADWIRE_LIB_DIR) and for the tests.
    println!("cargo:include={}", include.display());
    println!("cargo:lib_dir={}", lib.display());
    println!("cargo:rustc-env=GW_SYS_INCLUDE_DIR={}", include.display());
    println!("cargo:rustc-env=GW_SYS_LIB_DIR={}", lib.display());
}
