// Which tfjs backends compute a row of a batched step bit for bit as they compute it alone
// (what batched decoding needs to keep "same seed + same request = same completion" at any
// concurrency). Findings and the tests that show them: serve/README.md, "Batch invariance".
//
// - wasm (XNNPACK): row i of x [M, K] @ W [K, N] is the same for every M (XNNPACK's GEMM
//   accumulates each output over k in order, whatever the row tile; the scalar loop for
//   transposed / batched matmuls too); row reductions (mean) are plain loops. Its softmax is
//   NOT invariant to padding (a row with masked trailing keys sums in another SIMD grouping),
//   so attention is never padded: batch-step.ts runs it per sequence at fixed segments.
// - cpu: the same, and its softmax is exp/sum in order (invariant even with padding).
// - tensorflow (tfjs-node / tfjs-node-gpu, not installable here): its MatMul is Eigen (or
//   oneDNN / cuBLAS), which choose blocking, the k split and GEMV-vs-GEMM by the shapes and
//   thread count, so a row can change with the row count. Batching is opt-in there.
// - webgl / webgpu: shaders tile by the output shape; not checked, so opt-in too.
const INVARIANT: Record<string, boolean> = { wasm: true, cpu: true };

export function batchInvariant(backend: string): boolean {
  return INVARIANT[backend] ?? false;
}
