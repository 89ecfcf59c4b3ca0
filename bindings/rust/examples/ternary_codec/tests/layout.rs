//! The plugin's own #[repr(C)] declarations against plugin.h, as the C compiler lays them out.
use gw_ternary::abi::*;
use std::mem::{size_of, MaybeUninit};
use std::process::Command;

macro_rules! offsets {
    ($t:ident, $($f:ident),+) => {{
        let v = MaybeUninit::<$t>::uninit();
        let base = v.as_ptr() as usize;
        let mut s = format!("{} {}", stringify!($t), size_of::<$t>());
        // SAFETY: addresses only.
        $( s += &format!(" {}", unsafe { std::ptr::addr_of!((*v.as_ptr()).$f) } as usize - base); )+
        s
    }};
}

#[test]
fn plugin_structs_match_plugin_h() {
    let rust = [
        offsets!(gw_host, struct_size, abi_major, abi_minor, ctx, log, set_error, config_get_bool, config_get_int,
                 config_get_float, config_get_string, get_extension),
        offsets!(gw_config_key, struct_size, name, type_, default_value, help, min_value, max_value, choices),
        offsets!(gw_codec_vtable, struct_size, create, destroy, properties, max_encoded_size, encode, decode,
                 get_extension),
        offsets!(gw_component, struct_size, kind, name, help, config_keys, num_config_keys, vtable),
        offsets!(gw_plugin_descriptor, struct_size, abi_major, abi_minor, name, version, description, init, fini,
                 components, num_components, get_extension),
        offsets!(gw_tensor, struct_size, memory, dtype, device, data, count, stream),
        offsets!(gw_codec_properties, struct_size, flags, sum_dtype, dtypes),
        offsets!(gw_codec_context, struct_size, seed, step, rank, world_size, workspace, workspace_bytes),
    ]
    .join("\n");
    let src = r#"#include <gradwire/plugin.h>
#include <stddef.h>
#include <stdio.h>
#define O(T, f) printf(" %zu", offsetof(T, f))
int main(void) {
  printf("gw_host %zu", sizeof(gw_host)); O(gw_host, struct_size); O(gw_host, abi_major); O(gw_host, abi_minor);
  O(gw_host, ctx); O(gw_host, log); O(gw_host, set_error); O(gw_host, config_get_bool); O(gw_host, config_get_int);
  O(gw_host, config_get_float); O(gw_host, config_get_string); O(gw_host, get_extension);
  printf("\ngw_config_key %zu", sizeof(gw_config_key)); O(gw_config_key, struct_size); O(gw_config_key, name);
  O(gw_config_key, type); O(gw_config_key, default_value); O(gw_config_key, help); O(gw_config_key, min_value);
  O(gw_config_key, max_value); O(gw_config_key, choices);
  /* The plugin is written against ABI 1.3's codec vtable and context (a 1.4 host reads the members past
     its struct_size as absent): their sizes are those of the 1.3 prefix. */
  printf("\ngw_codec_vtable %zu", offsetof(gw_codec_vtable, round_plan)); O(gw_codec_vtable, struct_size); O(gw_codec_vtable, create);
  O(gw_codec_vtable, destroy); O(gw_codec_vtable, properties); O(gw_codec_vtable, max_encoded_size);
  O(gw_codec_vtable, encode); O(gw_codec_vtable, decode); O(gw_codec_vtable, get_extension);
  printf("\ngw_component %zu", sizeof(gw_component)); O(gw_component, struct_size); O(gw_component, kind);
  O(gw_component, name); O(gw_component, help); O(gw_component, config_keys); O(gw_component, num_config_keys);
  O(gw_component, vtable);
  printf("\ngw_plugin_descriptor %zu", sizeof(gw_plugin_descriptor)); O(gw_plugin_descriptor, struct_size);
  O(gw_plugin_descriptor, abi_major); O(gw_plugin_descriptor, abi_minor); O(gw_plugin_descriptor, name);
  O(gw_plugin_descriptor, version); O(gw_plugin_descriptor, description); O(gw_plugin_descriptor, init);
  O(gw_plugin_descriptor, fini); O(gw_plugin_descriptor, components); O(gw_plugin_descriptor, num_components);
  O(gw_plugin_descriptor, get_extension);
  printf("\ngw_tensor %zu", sizeof(gw_tensor)); O(gw_tensor, struct_size); O(gw_tensor, memory); O(gw_tensor, dtype);
  O(gw_tensor, device); O(gw_tensor, data); O(gw_tensor, count); O(gw_tensor, stream);
  printf("\ngw_codec_properties %zu", sizeof(gw_codec_properties)); O(gw_codec_properties, struct_size);
  O(gw_codec_properties, flags); O(gw_codec_properties, sum_dtype); O(gw_codec_properties, dtypes);
  printf("\ngw_codec_context %zu", offsetof(gw_codec_context, buffer_id)); O(gw_codec_context, struct_size);
  O(gw_codec_context, seed); O(gw_codec_context, step); O(gw_codec_context, rank); O(gw_codec_context, world_size);
  O(gw_codec_context, workspace); O(gw_codec_context, workspace_bytes);
  return 0;
}
"#;
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("gw-ternary-layout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("probe.c"), src).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let include = std::env::var("GW_INCLUDE_DIR").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../../../abi/include").to_string()
    });
    let st = Command::new(&cc)
        .args(["-std=c99", "-Wall", "-Werror", "-I", &include])
        .arg(dir.join("probe.c"))
        .arg("-o")
        .arg(dir.join("probe"))
        .status()
        .unwrap_or_else(|e| panic!("cannot run '{cc}': {e}"));
    assert!(st.success(), "probe did not compile against {include}");
    let out = Command::new(dir.join("probe")).output().unwrap();
    let c = String::from_utf8(out.stdout).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(rust, c, "Rust (left) and C (right) lay out plugin.h differently");
}
