// Parameter-server push+pull throughput against raw loopback TCP, measured in the same run.
//
// One process hosts a ParameterServerService on 127.0.0.1 with one float32 tensor of N bytes
// (sync, 1 worker, 1 replica, SGD with lr 0, so values do not drift) and a PsClient times Step
// with a dense gradient of N bytes and pull=true: N bytes pushed and N bytes pulled per step.
// The raw reference is a plain TCP connection over 127.0.0.1 on which a server thread reads N
// bytes and echoes them back, the same 2N bytes per round trip and the same store-and-forward
// shape (the PS also receives the whole gradient before it replies). Rounds of the two
// alternate, so both see the same machine load; figures are medians.
// The PS side runs twice, on the data channel (what a job uses) and as gRPC streams.
// Target (issue): PS >= 70 % of raw TCP for 1 MiB, 16 MiB and 128 MiB.
//
// With --tls the comparison is of the data channel under mutual TLS (what a job with credentials
// uses) against a bare OpenSSL TLS echo with the same cipher suite (TLS 1.3, AES-128-GCM), both
// authenticated with certificates of one job's CA; plaintext PS and raw TCP run in the same
// rounds for the cost of TLS itself. Target (issue): TLS PS >= 70 % of the TLS echo at 16 MiB.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/ps/client.h"
#include "runtime/ps/service.h"
#include "runtime/rpc/grpc_helpers.h"
#include "runtime/security/certificate_authority.h"
#include "runtime/security/tls_context.h"
#include "runtime/tensor/storage.h"

namespace {

using autodist::ErrorCode;
using autodist::Fail;
using autodist::tensor::DType;
using autodist::tensor::Tensor;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// CPU time of the whole process (all threads: client, server, gRPC's pollers, the echo thread).
// Less sensitive than wall time to other work on a shared machine, so it shows what a change
// to the PS path saves even when the wall-clock figures are noisy.
double ProcessCpuSeconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

// Minor page faults of the process so far: first touches of freshly mapped memory, expensive on
// a VM. Pages of a fresh receive buffer mapped in advance with madvise(MADV_POPULATE_WRITE)
// (runtime/tensor/storage.cc) count too, though they cost much less than one fault each.
double MinorFaults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_minflt);
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

[[noreturn]] void FailErrno(const char* what) {
  Fail(ErrorCode::kUnavailable, "raw TCP: {}: {}", what, std::strerror(errno));
}

// Large socket buffers, as a tuned bulk-transfer peer would set them; the kernel caps them at
// net.core.{w,r}mem_max. TCP_NODELAY so the last partial segment of a round is not held back.
void TuneSocket(int fd, int buffer_bytes) {
  const int one = 1;
  if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer_bytes, sizeof buffer_bytes) != 0 ||
      setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer_bytes, sizeof buffer_bytes) != 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
    FailErrno("setsockopt");
  }
}

void SendAll(int fd, const char* data, size_t bytes) {
  while (bytes > 0) {
    const ssize_t sent = ::send(fd, data, bytes, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) FailErrno("send");
    data += sent;
    bytes -= static_cast<size_t>(sent);
  }
}

// False when the peer closed the connection before the first byte.
bool RecvAll(int fd, char* data, size_t bytes) {
  const size_t wanted = bytes;
  while (bytes > 0) {
    const ssize_t got = ::recv(fd, data, bytes, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got == 0 && bytes == wanted) return false;
    if (got <= 0) FailErrno("recv");
    data += got;
    bytes -= static_cast<size_t>(got);
  }
  return true;
}

// A connected TCP pair over 127.0.0.1 with both ends tuned: {client, server}.
std::pair<int, int> LoopbackPair(int buffer_bytes) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  if (listener < 0) FailErrno("socket");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(listener, 1) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    FailErrno("bind/listen on 127.0.0.1:0");
  }
  const int client = ::socket(AF_INET, SOCK_STREAM, 0);
  if (client < 0) FailErrno("socket");
  // Buffer sizes are set before connect so that the window scale is negotiated for them.
  TuneSocket(client, buffer_bytes);
  TuneSocket(listener, buffer_bytes);
  if (::connect(client, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    FailErrno("connect");
  }
  const int server = ::accept(listener, nullptr, nullptr);
  ::close(listener);
  if (server < 0) FailErrno("accept");
  return {client, server};
}

// A connected pair over 127.0.0.1 and an echo thread on the accepting side: per round it reads
// `bytes` and writes them back.
class RawEcho {
 public:
  RawEcho(size_t bytes, int buffer_bytes) : bytes_(bytes) {
    std::tie(client_, server_) = LoopbackPair(buffer_bytes);
    echo_ = std::thread([this] {
      std::vector<char> buffer(bytes_);
      // Errors end the thread quietly; the client's side of the round reports them.
      try {
        while (RecvAll(server_, buffer.data(), bytes_)) SendAll(server_, buffer.data(), bytes_);
      } catch (const autodist::Error&) {
      }
    });
    payload_.assign(bytes_, 1);
    reply_.resize(bytes_);
  }
  ~RawEcho() {
    ::shutdown(client_, SHUT_WR);
    echo_.join();
    ::close(client_);
    ::close(server_);
  }
  RawEcho(const RawEcho&) = delete;
  RawEcho& operator=(const RawEcho&) = delete;

  // One round trip: N bytes out, N bytes back. Returns seconds.
  double Round() {
    const auto start = Clock::now();
    SendAll(client_, payload_.data(), bytes_);
    AD_CHECK(RecvAll(client_, reply_.data(), bytes_), kUnavailable,
             "raw TCP: the echo thread closed the connection");
    return SecondsSince(start);
  }

 private:
  size_t bytes_;
  int client_ = -1;
  int server_ = -1;
  std::thread echo_;
  std::vector<char> payload_;
  std::vector<char> reply_;
};

// The TLS peer: RawEcho's rounds over TLS 1.3 with the data channel's one cipher suite, written
// against OpenSSL alone (SSL_write_ex / SSL_read_ex of whole rounds), both ends presenting and
// verifying certificates of one CA as a job's members do.
class TlsEcho {
 public:
  TlsEcho(size_t bytes, int buffer_bytes, const autodist::security::JobCredentials& server,
          const autodist::security::JobCredentials& client)
      : bytes_(bytes) {
    std::tie(client_fd_, server_fd_) = LoopbackPair(buffer_bytes);
    server_context_ = Context(server, TLS_server_method());
    client_context_ = Context(client, TLS_client_method());
    server_ = SSL_new(server_context_);
    client_ = SSL_new(client_context_);
    SSL_set_fd(server_, server_fd_);
    SSL_set_fd(client_, client_fd_);
    std::thread accept([this] { SSL_accept(server_); });
    const int connected = SSL_connect(client_);
    accept.join();
    AD_CHECK(connected == 1, kUnavailable, "TLS echo: the handshake failed");
    echo_ = std::thread([this] {
      std::vector<char> buffer(bytes_);
      while (Read(server_, buffer.data(), bytes_)) Write(server_, buffer.data(), bytes_);
    });
    payload_.assign(bytes_, 1);
    reply_.resize(bytes_);
  }
  ~TlsEcho() {
    ::shutdown(client_fd_, SHUT_WR);
    echo_.join();
    SSL_free(client_);
    SSL_free(server_);
    SSL_CTX_free(client_context_);
    SSL_CTX_free(server_context_);
    ::close(client_fd_);
    ::close(server_fd_);
  }
  TlsEcho(const TlsEcho&) = delete;
  TlsEcho& operator=(const TlsEcho&) = delete;

  double Round() {
    const auto start = Clock::now();
    AD_CHECK(Write(client_, payload_.data(), bytes_) && Read(client_, reply_.data(), bytes_),
             kUnavailable, "TLS echo: the connection broke");
    return SecondsSince(start);
  }

 private:
  static SSL_CTX* Context(const autodist::security::JobCredentials& own, const SSL_METHOD* method) {
    SSL_CTX* context = SSL_CTX_new(method);
    SSL_CTX_set_min_proto_version(context, TLS1_3_VERSION);
    SSL_CTX_set_ciphersuites(context, autodist::security::kDataCipherSuite);
    SSL_CTX_set_options(context, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_TICKET);
    BIO* cert = BIO_new_mem_buf(own.certificate.data(), static_cast<int>(own.certificate.size()));
    BIO* key = BIO_new_mem_buf(own.key.data(), static_cast<int>(own.key.size()));
    BIO* ca = BIO_new_mem_buf(own.ca.data(), static_cast<int>(own.ca.size()));
    X509* cert_x509 = PEM_read_bio_X509(cert, nullptr, nullptr, nullptr);
    EVP_PKEY* key_pkey = PEM_read_bio_PrivateKey(key, nullptr, nullptr, nullptr);
    X509* ca_x509 = PEM_read_bio_X509(ca, nullptr, nullptr, nullptr);
    SSL_CTX_use_certificate(context, cert_x509);
    SSL_CTX_use_PrivateKey(context, key_pkey);
    X509_STORE_add_cert(SSL_CTX_get_cert_store(context), ca_x509);
    SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    X509_free(cert_x509);
    EVP_PKEY_free(key_pkey);
    X509_free(ca_x509);
    BIO_free(cert);
    BIO_free(key);
    BIO_free(ca);
    return context;
  }
  static bool Read(SSL* ssl, char* data, size_t bytes) {
    while (bytes > 0) {
      size_t got = 0;
      if (SSL_read_ex(ssl, data, bytes, &got) != 1) return false;
      data += got;
      bytes -= got;
    }
    return true;
  }
  static bool Write(SSL* ssl, const char* data, size_t bytes) {
    size_t wrote = 0;
    return SSL_write_ex(ssl, data, bytes, &wrote) == 1 && wrote == bytes;
  }

  size_t bytes_;
  int client_fd_ = -1;
  int server_fd_ = -1;
  SSL_CTX* server_context_ = nullptr;
  SSL_CTX* client_context_ = nullptr;
  SSL* server_ = nullptr;
  SSL* client_ = nullptr;
  std::thread echo_;
  std::vector<char> payload_;
  std::vector<char> reply_;
};

// A parameter server hosting one float32 tensor of `bytes` bytes and a client pushing dense
// gradients of that size with pull=true; Steps travel on the data channel (the default of a
// job's PS) or, with `data_channel` false, as gRPC streams; with credentials, as mutual TLS.
class PsLoop {
 public:
  PsLoop(int64_t bytes, bool data_channel,
         const std::shared_ptr<const autodist::security::JobCredentials>& server = nullptr,
         const std::shared_ptr<const autodist::security::JobCredentials>& client = nullptr)
      : server_("127.0.0.1:0", {&service_}, autodist::rpc::WithCredentials(server)),
        client_("ps-0", server_.endpoint(), autodist::rpc::WithCredentials(client)) {
    if (data_channel) service_.ServeDataChannel("127.0.0.1", server);
    const int64_t elements = bytes / 4;
    Tensor value(DType::kFloat32, {elements});
    std::fill_n(value.data<float>(), elements, 0.5F);
    gradient_ = Tensor(DType::kFloat32, {elements});
    std::fill_n(gradient_.data<float>(), elements, 1.0F);
    autodist::ps::PsInitRequest init;
    init.tensors = {{"w", true, 0, false}};
    // lr 0: the update still runs (its cost is part of a step) but the value stays put.
    init.optimizer = "sgd";
    init.optimizer_options = {{"lr", "0.0"}};
    init.num_workers = 1;
    init.total_replicas = 1;
    init.values.emplace("w", std::move(value));
    client_.Init(init);
  }
  ~PsLoop() {
    service_.Shutdown();
    server_.Shutdown();
  }
  PsLoop(const PsLoop&) = delete;
  PsLoop& operator=(const PsLoop&) = delete;

  // One Step: push N bytes, pull N bytes. Returns seconds.
  double Round() {
    autodist::ps::PsStepRequest request;
    request.step = step_++;
    request.learning_rate = 0.0;
    request.pull = true;
    request.gradients.emplace("w", autodist::ps::GradientRef{&gradient_, nullptr});
    const auto start = Clock::now();
    const autodist::ps::PsValues reply = client_.Step(request);
    const double seconds = SecondsSince(start);
    const auto it = reply.values.find("w");
    AD_CHECK(it != reply.values.end() && it->second.nbytes() == gradient_.nbytes(), kInternal,
             "PS step {}: the reply does not carry the whole value of 'w'", request.step);
    return seconds;
  }

 private:
  // Declared first, destroyed last: the server and the client hold on to it.
  autodist::ps::ParameterServerService service_;
  autodist::rpc::RpcServer server_;
  autodist::ps::PsClient client_;
  Tensor gradient_;
  int64_t step_ = 0;
};

struct Timing {
  double wall = 0;    // seconds, median over rounds
  double cpu = 0;     // process CPU seconds, median over rounds
  double faults = 0;  // minor page faults, median over rounds
};

struct Result {
  int64_t bytes = 0;
  int rounds = 0;
  Timing ps;    // on the data channel
  Timing grpc;  // the same Steps as gRPC streams
  Timing raw;
};

// Per-round samples of one side (PS or raw).
struct Samples {
  std::vector<double> wall;
  std::vector<double> cpu;
  std::vector<double> faults;

  // Runs `round` (which returns its wall time) and records it with the CPU time and the page
  // faults of the process meanwhile.
  template <typename Round>
  void Record(Round&& round) {
    const double cpu_start = ProcessCpuSeconds();
    const double faults_start = MinorFaults();
    wall.push_back(round());
    cpu.push_back(ProcessCpuSeconds() - cpu_start);
    faults.push_back(MinorFaults() - faults_start);
  }
  Timing Medians() const { return {Median(wall), Median(cpu), Median(faults)}; }
};

Result Measure(int64_t bytes, int min_rounds, double budget_seconds, int warmup,
               int socket_buffer) {
  RawEcho raw(static_cast<size_t>(bytes), socket_buffer);
  PsLoop ps(bytes, true);
  PsLoop grpc(bytes, false);
  for (int i = 0; i < warmup; ++i) {
    raw.Round();
    ps.Round();
    grpc.Round();
  }
  Samples raw_samples;
  Samples ps_samples;
  Samples grpc_samples;
  const auto start = Clock::now();
  while (static_cast<int>(ps_samples.wall.size()) < min_rounds ||
         SecondsSince(start) < budget_seconds) {
    raw_samples.Record([&] { return raw.Round(); });
    ps_samples.Record([&] { return ps.Round(); });
    grpc_samples.Record([&] { return grpc.Round(); });
  }
  return {bytes, static_cast<int>(ps_samples.wall.size()), ps_samples.Medians(),
          grpc_samples.Medians(), raw_samples.Medians()};
}

struct TlsResult {
  int64_t bytes = 0;
  int rounds = 0;
  Timing tls_ps;    // data channel over mutual TLS
  Timing tls_echo;  // bare OpenSSL echo, same cipher suite
  Timing ps;        // data channel, plaintext
  Timing raw;       // TCP echo, plaintext
};

TlsResult MeasureTls(int64_t bytes, int min_rounds, double budget_seconds, int warmup,
                     int socket_buffer) {
  using autodist::security::CertificateAuthority;
  using autodist::security::Validity;
  const auto authority =
      CertificateAuthority::Create("bench/tls", Validity::For(std::chrono::hours(1)));
  auto server = std::make_shared<const autodist::security::JobCredentials>(
      authority.Issue("ps-0", Validity::For(std::chrono::hours(1))));
  auto client = std::make_shared<const autodist::security::JobCredentials>(
      authority.Issue("worker-0", Validity::For(std::chrono::hours(1))));
  RawEcho raw(static_cast<size_t>(bytes), socket_buffer);
  TlsEcho echo(static_cast<size_t>(bytes), socket_buffer, *server, *client);
  PsLoop ps(bytes, true);
  PsLoop tls_ps(bytes, true, server, client);
  for (int i = 0; i < warmup; ++i) {
    raw.Round();
    echo.Round();
    ps.Round();
    tls_ps.Round();
  }
  Samples raw_samples;
  Samples echo_samples;
  Samples ps_samples;
  Samples tls_samples;
  const auto start = Clock::now();
  while (static_cast<int>(tls_samples.wall.size()) < min_rounds ||
         SecondsSince(start) < budget_seconds) {
    raw_samples.Record([&] { return raw.Round(); });
    echo_samples.Record([&] { return echo.Round(); });
    ps_samples.Record([&] { return ps.Round(); });
    tls_samples.Record([&] { return tls_ps.Round(); });
  }
  return {bytes,
          static_cast<int>(tls_samples.wall.size()),
          tls_samples.Medians(),
          echo_samples.Medians(),
          ps_samples.Medians(),
          raw_samples.Medians()};
}

void PrintTls(const std::vector<int64_t>& sizes_mib, int min_rounds, double budget, int warmup,
              int socket_buffer) {
  fmt::print("{:>8} {:>6} {:>9} {:>9} {:>8} {:>8} {:>11} {:>10} {:>9} {:>11} {:>11}\n", "size",
             "rounds", "TLS PS ms", "echo ms", "PS ms", "raw ms", "TLS PS GB/s", "TLS/echo",
             "TLS/PS", "echo/raw", "TLS cpu ms");
  for (const int64_t mib : sizes_mib) {
    const TlsResult r = MeasureTls(mib << 20, min_rounds, budget, warmup, socket_buffer);
    const double moved = 2.0 * static_cast<double>(r.bytes);
    fmt::print(
        "{:>4} MiB {:>6} {:>9.2f} {:>9.2f} {:>8.2f} {:>8.2f} {:>11.3f} {:>9.1f}% {:>8.1f}% "
        "{:>10.1f}% {:>11.2f}\n",
        mib, r.rounds, r.tls_ps.wall * 1e3, r.tls_echo.wall * 1e3, r.ps.wall * 1e3,
        r.raw.wall * 1e3, moved / r.tls_ps.wall / 1e9, 100.0 * r.tls_echo.wall / r.tls_ps.wall,
        100.0 * r.ps.wall / r.tls_ps.wall, 100.0 * r.raw.wall / r.tls_echo.wall,
        r.tls_ps.cpu * 1e3);
    std::fflush(stdout);
  }
  fmt::print(
      "medians per round; a round moves 2N bytes (TLS PS: push N + pull N on the data "
      "channel over mutual TLS; echo: bare OpenSSL TLS echo of N, {}; PS: the data channel "
      "in plaintext; raw: TCP echo); target TLS/echo >= 70% at 16 MiB\n",
      autodist::security::kDataCipherSuite);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Parameter-server push+pull throughput vs raw loopback TCP"};
  std::vector<int64_t> sizes_mib = {1, 16, 128};
  int min_rounds = 5;
  double budget = 3.0;
  int warmup = 2;
  int socket_buffer = 8 << 20;
  app.add_option("--sizes-mib", sizes_mib, "Tensor sizes in MiB")->check(CLI::PositiveNumber);
  app.add_option("--min-rounds", min_rounds, "Timed rounds per size, at least")
      ->check(CLI::PositiveNumber);
  app.add_option("--seconds", budget, "Time spent per size, at least (rounds keep going)");
  app.add_option("--warmup", warmup, "Untimed rounds first");
  app.add_option("--socket-buffer", socket_buffer, "SO_SNDBUF/SO_RCVBUF of the raw TCP test")
      ->check(CLI::PositiveNumber);
  bool tls = false;
  app.add_flag("--tls", tls,
               "Measure the data channel under mutual TLS against a bare OpenSSL TLS echo");
  CLI11_PARSE(app, argc, argv);

  try {
    autodist::tensor::ConfigureTensorPool(
        autodist::tensor::ParseTensorPoolOptions(std::getenv(autodist::tensor::kTensorPoolEnv)));
    if (tls) {
      PrintTls(sizes_mib, min_rounds, budget, warmup, socket_buffer);
      return 0;
    }
    fmt::print("{:>8} {:>6} {:>8} {:>8} {:>8} {:>8} {:>8} {:>7} {:>9} {:>9} {:>10} {:>9}\n", "size",
               "rounds", "PS ms", "gRPC ms", "raw ms", "PS GB/s", "raw GB/s", "PS/raw", "gRPC/raw",
               "PS cpu ms", "raw cpu ms", "PS faults");
    for (const int64_t mib : sizes_mib) {
      const Result r = Measure(mib << 20, min_rounds, budget, warmup, socket_buffer);
      // GB/s = 1e9 bytes per second, counting both directions: 2N bytes per round.
      const double moved = 2.0 * static_cast<double>(r.bytes);
      const double ps_rate = moved / r.ps.wall / 1e9;
      const double raw_rate = moved / r.raw.wall / 1e9;
      fmt::print(
          "{:>4} MiB {:>6} {:>8.2f} {:>8.2f} {:>8.2f} {:>8.3f} {:>8.3f} {:>6.1f}% {:>8.1f}% "
          "{:>9.2f} {:>10.2f} {:>9.0f}\n",
          mib, r.rounds, r.ps.wall * 1e3, r.grpc.wall * 1e3, r.raw.wall * 1e3, ps_rate, raw_rate,
          100.0 * r.raw.wall / r.ps.wall, 100.0 * r.raw.wall / r.grpc.wall, r.ps.cpu * 1e3,
          r.raw.cpu * 1e3, r.ps.faults);
      std::fflush(stdout);
    }
    fmt::print(
        "medians per round; a round moves 2N bytes (PS: push N + pull N on the data channel, "
        "gRPC: the same Step as a gRPC stream, raw: echo of N); GB/s = 1e9 bytes/s; target "
        "PS/raw >= 70%\n");
  } catch (const autodist::Error& error) {
    fmt::print(stderr, "ps_throughput_bench: error: {}\n", error.what());
    return 1;
  }
  return 0;
}
