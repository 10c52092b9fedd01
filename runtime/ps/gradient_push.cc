#include "runtime/ps/gradient_push.h"

#include "runtime/common/error.h"
#include "runtime/observe/runtime_metrics.h"

namespace autodist::ps {

void CheckGradientRef(const std::string& what, const std::string& name,
                      const GradientRef& gradient) {
  AD_CHECK((gradient.dense != nullptr) != (gradient.sparse != nullptr), kInvalidArgument,
           "{}: gradient '{}' must set exactly one of dense and sparse", what, name);
  if (TravelsUncompressed(gradient)) return;
  compress::CheckPushCompression(what, name, PushCompressorOptions(gradient));
  AD_CHECK(gradient.dense->dtype() == tensor::DType::kFloat32, kInvalidArgument,
           "{}: gradient '{}' is {}; {} compresses float32 gradients only", what, name,
           tensor::DTypeName(gradient.dense->dtype()),
           compress::CompressorName(gradient.compression));
}

bool TravelsUncompressed(const GradientRef& gradient) {
  return gradient.sparse != nullptr || gradient.compression == compress::CompressorKind::kNone;
}

compress::CompressorOptions PushCompressorOptions(const GradientRef& gradient) {
  compress::CompressorOptions options;
  options.kind = gradient.compression;
  options.fraction = gradient.topk_fraction;
  return options;
}

void EmitGradient(const std::string& what, int first_replica, const std::string& name,
                  const GradientRef& gradient, int32_t replicas, int64_t piece_bytes,
                  compress::PushEncoder& encoder, const rpc::PieceSink& sink) {
  CheckGradientRef(what, name, gradient);
  if (gradient.sparse != nullptr) {
    rpc::EmitSparse(name, *gradient.sparse, replicas, piece_bytes, sink);
    return;
  }
  const tensor::Tensor& dense = *gradient.dense;
  if (TravelsUncompressed(gradient)) {
    rpc::EmitTensor(name, dense, replicas, piece_bytes, sink);
    return;
  }
  compress::EncodedPush encoded;
  encoder.Encode(what, first_replica, name, dense, PushCompressorOptions(gradient), encoded);
  switch (encoded.form) {
    case compress::EncodedPush::Form::kHalves:
      rpc::EmitHalves(name, dense.shape(), encoded.halves, replicas, piece_bytes, sink);
      return;
    case compress::EncodedPush::Form::kTopK:
      rpc::EmitTopK(name, dense.shape(), encoded.indices, encoded.values, replicas, piece_bytes,
                    sink);
      return;
  }
  Fail(ErrorCode::kInternal, "{}: gradient '{}' was encoded in an unknown form {}", what, name,
       static_cast<int>(encoded.form));
}

void TakeReplyValues(rpc::PieceAssembler& assembler, PsValues& out) {
  int64_t bytes = 0;
  for (auto& [name, received] : assembler.Finish()) {
    bytes += received.wire_bytes;
    if (received.is_sparse()) {
      out.changed_rows.emplace(
          name,
          tensor::SparseGradient{std::move(*received.indices), std::move(received.dense), {}});
    } else {
      out.values.emplace(name, std::move(received.dense));
    }
  }
  observe::ProcessMetrics().parameter_server_received_bytes.Inc(static_cast<double>(bytes));
}

void AddHeldVersions(const PsStepRequest& request, autodist::proto::StepHeader& header) {
  for (const auto& [name, held] : request.held) {
    autodist::proto::TensorVersion* version = header.add_held();
    version->set_name(name);
    version->set_version(held.version);
    version->set_incarnation(held.incarnation);
  }
}

void TakeVersion(const autodist::proto::TensorVersion& version, PsValues& out) {
  out.versions[version.name()] = version.version();
  out.incarnation = version.incarnation();
}

}  // namespace autodist::ps
