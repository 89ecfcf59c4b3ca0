// libgradwire.so is gradwire_core linked whole; the C ABI lives in runtime/capi/.
