"""The official Tinker SDK's own serializers as an independent reference for gsteer's codecs
(trainer/tinker/). Reads a command on argv and JSON on stdin, writes JSON to stdout:

  request   -> the SDK's protobuf (and zstd) bytes of a fixed forward_backward request
  output    <- {"b64": ...} ForwardBackwardOutput bytes, decoded by the SDK's deserializer
  sample    <- {"b64": ...} SampleResponse bytes, decoded by the SDK's deserializer
  parse_request <- {"b64": ..., "zstd": bool} a ForwardBackwardRequest parsed with the SDK's
               descriptor (tinker_public_pb2) by the protobuf runtime, tensors read with numpy

Needs the SDK on PYTHONPATH (tests/helpers/tinker-sdk.ts says how it is found)."""
import base64
import json
import sys

sys.path.append("/usr/lib/python3/dist-packages")  # Debian's httpx, protobuf, zstandard (peers/README.md)

import zstandard  # noqa: E402
import numpy as np  # noqa: E402
from tinker import types  # noqa: E402
from tinker.proto import tinker_public_pb2 as public_pb  # noqa: E402
from tinker.proto.request_conv import forward_backward_request_to_proto  # noqa: E402
from tinker.proto.response_conv import deserialize_forward_backward_output, deserialize_sample_response  # noqa: E402


def fixed_request() -> types.ForwardBackwardRequest:
    d0 = types.Datum(
        model_input=types.ModelInput(chunks=[types.EncodedTextChunk(tokens=[151644, 872, 198]), types.EncodedTextChunk(tokens=[9707])]),
        loss_fn_inputs={
            "target_tokens": types.TensorData(data=[872, 198, 9707, 151645], dtype="int64", shape=[4]),
            "logprobs": types.TensorData(data=[-0.5, -1.25, -3.0, -0.125], dtype="float32", shape=[4]),
            "advantages": types.TensorData(data=[0.0, 0.75, 0.75, -2.5], dtype="float32", shape=[4]),
        },
    )
    d1 = types.Datum(
        model_input=types.ModelInput.from_ints([1, 2, 3, 4, 5, 6]),
        loss_fn_inputs={
            "target_tokens": types.TensorData(data=[2, 3, 4, 5, 6, 7], dtype="int64", shape=[6]),
            # CSR [2, 3]: row 0 = [0, 0.5, 0], row 1 = [0, 0, 2]
            "weights": types.TensorData(data=[0.5, 2.0], dtype="float32", shape=[2, 3], sparse_crow_indices=[0, 1, 2], sparse_col_indices=[1, 2]),
        },
    )
    inp = types.ForwardBackwardInput(data=[d0, d1], loss_fn="ppo", loss_fn_config={"clip_low_threshold": 0.8, "clip_high_threshold": 1.28})
    return types.ForwardBackwardRequest(forward_backward_input=inp, model_id="sess-1:train:0", seq_id=7)


def main() -> None:
    cmd = sys.argv[1]
    if cmd == "request":
        msg = forward_backward_request_to_proto(fixed_request())
        msg.forward_only = True
        raw = msg.SerializeToString()
        out = {"proto_b64": base64.b64encode(raw).decode(), "zstd_b64": base64.b64encode(zstandard.ZstdCompressor().compress(raw)).decode()}
    elif cmd == "output":
        o = deserialize_forward_backward_output(base64.b64decode(json.load(sys.stdin)["b64"]))
        out = {
            "loss_fn_output_type": o.loss_fn_output_type,
            "metrics": o.metrics,
            "loss_fn_outputs": [{k: {"data": t.tolist(), "dtype": t.dtype, "shape": t.shape} for k, t in rec.items()} for rec in o.loss_fn_outputs],
        }
    elif cmd == "sample":
        r = deserialize_sample_response(base64.b64decode(json.load(sys.stdin)["b64"]))
        out = {
            "sequences": [{"tokens": s.tokens, "logprobs": s.logprobs, "stop_reason": s.stop_reason} for s in r.sequences],
            "prompt_logprobs": r.prompt_logprobs,
            "prompt_cache_hit_tokens": r.prompt_cache_hit_tokens,
        }
    elif cmd == "parse_request":
        inp = json.load(sys.stdin)
        raw = base64.b64decode(inp["b64"])
        if inp.get("zstd"):
            raw = zstandard.ZstdDecompressor().decompress(raw)
        msg = public_pb.ForwardBackwardRequest()
        msg.ParseFromString(raw)
        np_of = {public_pb.DTYPE_FLOAT32: np.float32, public_pb.DTYPE_INT64: np.int64}

        def tensor(t):
            assert t.WhichOneof("encoding") == "dense", "gsteer writes dense tensors"
            return {"data": np.frombuffer(t.dense, dtype=np_of[t.dtype]).tolist(), "shape": list(t.shape), "dtype": public_pb.DType.Name(t.dtype)}

        out = {
            "model_id": msg.model_id,
            "seq_id": msg.seq_id,
            "loss_fn": msg.loss_fn,
            "loss_fn_config": dict(msg.loss_fn_config),
            "forward_only": msg.forward_only,
            "data": [
                {
                    "tokens": [t for c in d.model_input for t in np.frombuffer(c.encoded_text.tokens, dtype=np.int32).tolist()],
                    "loss_fn_inputs": {k: tensor(v) for k, v in d.loss_fn_inputs.items()},
                }
                for d in msg.data
            ],
        }
    else:
        raise SystemExit(f"unknown command {cmd}")
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
