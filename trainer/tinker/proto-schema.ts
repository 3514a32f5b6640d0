// gsteer's own protobuf schema of the Tinker bodies that travel as protobuf in the 0.25 SDK:
// the forward_backward request (sent with Content-Type application/x-protobuf, optionally
// zstd-compressed) and the ForwardBackwardOutput / SampleResponse results of retrieve_future
// (asked for with Accept: application/x-protobuf). Written from the field numbers and types of
// the SDK's descriptor (tinker_public.proto, read with descriptor_pb2; no file copied). Tensors
// and token lists are raw little-endian bytes: tokens int32, dense values in the tensor's dtype,
// CSR indices int64, BatchedTensor offsets int64 byte offsets per datum.
//
// gsteer's extensions are fields numbered from 1001, which a Tinker server skips as unknown
// fields (proto3): Datum.gsteer_json and ForwardBackwardRequest.gsteer_json carry JSON
// (trainer/tinker/README.md, "gsteer's extensions").
import protobuf from 'protobufjs';

export const TINKER_PROTO = `syntax = "proto3";
package tinker_public;

enum StopReason { STOP_REASON_STOP = 0; STOP_REASON_LENGTH = 1; }
enum DType { DTYPE_UNSPECIFIED = 0; DTYPE_FLOAT32 = 1; DTYPE_INT64 = 2; DTYPE_INT32 = 3; DTYPE_BFLOAT16 = 4; }

message SampleResponse {
  repeated SampledSequence sequences = 1;
  optional bytes prompt_logprobs = 2;
  optional TopkPromptLogprobs topk_prompt_logprobs = 3;
  int32 prompt_cache_hit_tokens = 4;
}
message SampledSequence {
  StopReason stop_reason = 1;
  bytes tokens = 2;
  optional bytes logprobs = 3;
}
message TopkPromptLogprobs {
  bytes token_ids = 1;
  bytes logprobs = 2;
  uint32 k = 3;
  uint32 prompt_length = 4;
}
message SparseCsr {
  bytes values = 1;
  bytes crow_indices = 2;
  bytes col_indices = 3;
}
message Tensor {
  oneof encoding { bytes dense = 1; SparseCsr sparse_csr = 2; }
  DType dtype = 3;
  repeated int64 shape = 4;
}
message BatchedTensor {
  bytes data = 1;
  bytes offsets = 2;
  DType dtype = 3;
  repeated int64 trailing_shape = 4;
}
message ArrayRecord {
  string type_tag = 1;
  map<string, BatchedTensor> fields = 2;
  int64 num_datums = 3;
}
message ForwardBackwardOutput {
  string loss_fn_output_type = 1;
  repeated ArrayRecord loss_fn_outputs = 2;
  map<string, double> metrics = 3;
}
message ForwardBackwardRequest {
  string model_id = 1;
  int32 seq_id = 2;
  repeated Datum data = 3;
  string loss_fn = 4;
  map<string, double> loss_fn_config = 5;
  bool forward_only = 6;
  string gsteer_json = 1001;
}
message Datum {
  repeated Chunk model_input = 1;
  map<string, Tensor> loss_fn_inputs = 2;
  string gsteer_json = 1001;
}
message Chunk {
  oneof chunk { EncodedTextChunk encoded_text = 1; ImageChunk image = 2; DmelChunk dmel = 3; }
}
message EncodedTextChunk { bytes tokens = 1; }
message ImageChunk {
  bytes data = 1;
  string format = 2;
  optional int32 expected_tokens = 3;
}
message DmelChunk { bytes dmel = 1; }
`;

const root = protobuf.parse(TINKER_PROTO, { keepCase: true }).root;

export const pb = {
  ForwardBackwardRequest: root.lookupType('tinker_public.ForwardBackwardRequest'),
  ForwardBackwardOutput: root.lookupType('tinker_public.ForwardBackwardOutput'),
  SampleResponse: root.lookupType('tinker_public.SampleResponse'),
};

/** DType enum values (the descriptor's numbers). */
export const DTYPE = { FLOAT32: 1, INT64: 2, INT32: 3, BFLOAT16: 4 } as const;
export const STOP_REASON = { stop: 0, length: 1 } as const;
