// onnxtrain's WGSL prelude.  Binding 0 is the dispatch's parameter block; a kernel's inputs follow from binding 1
// (read-only storage), then its outputs (read-write storage), in the order the lowering lists them.
struct Params { v: array<vec4<u32>, 16> }
@group(0) @binding(0) var<uniform> P: Params;
fn pu(i: u32) -> u32 { return P.v[i / 4u][i % 4u]; }
fn pi(i: u32) -> i32 { return bitcast<i32>(pu(i)); }
fn pf(i: u32) -> f32 { return bitcast<f32>(pu(i)); }
// NaN by its bits (compilers may fold x != x away); WGSL's min and max need not pass NaN on, numpy's do.
fn isnan_(x: f32) -> bool { let b = bitcast<u32>(x); return (b & 0x7f800000u) == 0x7f800000u && (b & 0x7fffffu) != 0u; }
// A float from its bits, not as a constant expression (Chromium rejects a constant NaN or infinity).
fn f32_bits(b: u32) -> f32 { return bitcast<f32>(b); }
// The linear index of an invocation in a grid of 256-wide workgroups that Lowering.grid spread over x and y.
fn flat(g: vec3<u32>, n: vec3<u32>) -> u32 { return g.x + g.y * n.x * 256u; }
