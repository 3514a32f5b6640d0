// Tinker's TensorData <-> plain number arrays (the 0.25 SDK's types/tensor_data.py): a tensor
// is flat `data` in row-major order with a `dtype` (int64 | float32) and an optional `shape`;
// a sparse CSR tensor (2-D only) carries the non-zero values in `data` plus
// `sparse_crow_indices` [rows + 1] and `sparse_col_indices` [nnz], and `shape` is required.
// Dense is what gsteer sends; CSR is decoded because the SDK sparsifies 2-D target_tokens and
// weights built from torch tensors. Every rule names the field it checks.
import { InputError } from '../../util/errors.ts';

export type TensorDtype = 'int64' | 'float32';

/** The JSON shape (and what the protobuf Tensor decodes to). */
export interface TensorData {
  data: number[];
  dtype: TensorDtype;
  shape?: number[] | null;
  sparse_crow_indices?: number[] | null;
  sparse_col_indices?: number[] | null;
}

/** A decoded tensor: dense values (float32-rounded for float32) and its shape. */
export interface DenseTensor {
  values: number[];
  dtype: TensorDtype;
  shape: number[];
}

const prod = (shape: readonly number[]) => shape.reduce((a, b) => a * b, 1);

function checkShape(shape: readonly number[], field: string): void {
  for (const d of shape)
    if (!Number.isInteger(d) || d < 0) throw new InputError(`${field}.shape = ${JSON.stringify(shape)}: every dimension must be an integer >= 0`);
}

function checkValues(values: readonly number[], dtype: TensorDtype, field: string): void {
  for (let i = 0; i < values.length; i++) {
    const v = values[i] as number;
    if (typeof v !== 'number' || Number.isNaN(v) || (dtype === 'int64' && !Number.isInteger(v)))
      throw new InputError(`${field}.data[${i}] = ${JSON.stringify(v)}: a ${dtype} tensor holds ${dtype === 'int64' ? 'integers' : 'numbers'} only`);
  }
}

/** A CSR tensor [rows, cols] densified: values land at (r, col_indices[k]) for k in crow[r]..crow[r+1]. */
function densifyCsr(t: TensorData, field: string): number[] {
  const crow = t.sparse_crow_indices as number[];
  const col = t.sparse_col_indices;
  if (!col) throw new InputError(`${field}: sparse_crow_indices without sparse_col_indices; send both (CSR) or neither (dense)`);
  const shape = t.shape;
  if (!shape || shape.length !== 2) throw new InputError(`${field}.shape = ${JSON.stringify(shape)}: a sparse CSR tensor needs a 2-D shape [rows, cols]`);
  const [rows, cols] = shape as [number, number];
  if (crow.length !== rows + 1)
    throw new InputError(`${field}.sparse_crow_indices has ${crow.length} entries; a CSR tensor of ${rows} rows needs rows + 1 = ${rows + 1}`);
  if (crow[0] !== 0 || crow[rows] !== t.data.length || col.length !== t.data.length)
    throw new InputError(
      `${field}: CSR sizes disagree (crow[0] = ${crow[0]}, crow[last] = ${crow[rows]}, ${col.length} column indices, ${t.data.length} values); crow must start at 0 and end at nnz = data.length = col_indices.length`,
    );
  const dense = new Array<number>(rows * cols).fill(0);
  for (let r = 0; r < rows; r++) {
    const from = crow[r] as number;
    const to = crow[r + 1] as number;
    if (!(from <= to)) throw new InputError(`${field}.sparse_crow_indices must not decrease (row ${r}: ${from} -> ${to})`);
    for (let k = from; k < to; k++) {
      const c = col[k] as number;
      if (!Number.isInteger(c) || c < 0 || c >= cols) throw new InputError(`${field}.sparse_col_indices[${k}] = ${c} is outside [0, ${cols})`);
      dense[r * cols + c] = t.data[k] as number;
    }
  }
  return dense;
}

/** TensorData -> dense values and shape (a 1-D shape [data.length] when none is given). */
export function decodeTensor(t: TensorData, field: string): DenseTensor {
  if (t.dtype !== 'int64' && t.dtype !== 'float32') throw new InputError(`${field}.dtype = ${JSON.stringify(t.dtype)}: Tinker tensors are int64 or float32`);
  checkValues(t.data, t.dtype, field);
  const sparse = t.sparse_crow_indices != null;
  const values = sparse ? densifyCsr(t, field) : t.data;
  const shape = t.shape ?? [values.length];
  checkShape(shape, field);
  if (prod(shape) !== values.length) throw new InputError(`${field}: shape ${JSON.stringify(shape)} holds ${prod(shape)} values but data has ${values.length}`);
  return { values: t.dtype === 'float32' ? Array.from(Float32Array.from(values)) : [...values], dtype: t.dtype, shape: [...shape] };
}

/** A 1-D array as dense TensorData (float32 values are rounded to float32 as the wire carries them). */
export function encodeTensor(values: readonly number[], dtype: TensorDtype): TensorData {
  return { data: dtype === 'float32' ? Array.from(Float32Array.from(values)) : [...values], dtype, shape: [values.length] };
}

/**
 * A 2-D [rows, cols] array as CSR TensorData (the SDK's from_torch_sparse layout), for
 * clients that send mostly-zero weights; dense when CSR would not be smaller (the SDK's rule).
 */
export function encodeTensorCsr(values: readonly number[], rows: number, cols: number, dtype: TensorDtype): TensorData {
  if (values.length !== rows * cols) throw new Error(`internal: ${values.length} values for a [${rows}, ${cols}] tensor`);
  const crow = [0];
  const col: number[] = [];
  const data: number[] = [];
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const v = values[r * cols + c] as number;
      if (v !== 0) {
        col.push(c);
        data.push(v);
      }
    }
    crow.push(data.length);
  }
  if (rows + 1 + 2 * data.length >= rows * cols) return { ...encodeTensor(values, dtype), shape: [rows, cols] };
  return {
    data: dtype === 'float32' ? Array.from(Float32Array.from(data)) : data,
    dtype,
    shape: [rows, cols],
    sparse_crow_indices: crow,
    sparse_col_indices: col,
  };
}
