// The parameter-server data channel's frames (rpc/frame_socket.h, ps/data_channel.h) as a server
// reads a Step off its socket: heads, metas (StepHeader, TensorPiece) and the pieces' bytes read
// straight into the tensors they belong to.
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>

#include "proto/ps_service.pb.h"
#include "runtime/common/error.h"
#include "runtime/ps/data_channel.h"
#include "runtime/rpc/frame_socket.h"
#include "runtime/rpc/tensor_wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) return 0;
  // The peer: sends the input and closes, as a client that then went away.
  std::thread peer([&] {
    size_t sent = 0;
    while (sent < size) {
      // MSG_NOSIGNAL: the reader may stop early and close its end.
      const ssize_t n = ::send(fds[1], data + sent, size - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    ::close(fds[1]);
  });
  try {
    autodist::rpc::FrameSocket socket(fds[0], "fuzz");
    autodist::rpc::PieceAssembler assembler("fuzz", int64_t{16} << 20);
    while (const std::optional<autodist::rpc::FrameHead> head = socket.ReadHead()) {
      if (head->kind == autodist::ps::kStepHeaderFrame) {
        autodist::proto::StepHeader step;
        if (!step.ParseFromString(head->meta)) break;
        socket.SkipData(head->data_bytes);
      } else if (head->kind == autodist::ps::kGradientFrame) {
        autodist::proto::TensorPiece piece;
        if (!piece.ParseFromString(head->meta)) break;
        assembler.AddFrom(
            piece, static_cast<int64_t>(head->data_bytes),
            [&socket](char* destination, size_t length) { socket.ReadData(destination, length); });
      } else if (head->kind == autodist::ps::kEndFrame) {
        (void)assembler.Finish();
        break;
      } else {
        socket.SkipData(head->data_bytes);
      }
    }
  } catch (const autodist::Error&) {
  }
  peer.join();
  return 0;
}
