// Helpers shared by the Gloo communicator tests: N ranks as threads of this process, each with its
// own communicator, connected through one rendezvous store.
#pragma once

#include <gloo/rendezvous/hash_store.h>
#include <gloo/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "runtime/collective/gloo/communicator.h"
#include "runtime/common/error.h"

namespace autodist::collective::testing {

using StoreForRank = std::function<std::shared_ptr<gloo::rendezvous::Store>(int rank)>;
using AdjustForRank = std::function<void(int rank, GlooOptions& options)>;

// Runs `body(communicator)` on `size` ranks, one thread each, rank r connecting through
// `stores(r)` (one HashStore for all when not given) with `base` options, changed by
// `adjust(r, options)` where given. Returns each rank's error, nullopt where the rank succeeded.
inline std::vector<std::optional<Error>> RunRanks(int size,
                                                  const std::function<void(Communicator&)>& body,
                                                  GlooOptions base = {},
                                                  StoreForRank stores = nullptr,
                                                  const AdjustForRank& adjust = nullptr) {
  if (stores == nullptr) {
    auto shared = std::make_shared<gloo::rendezvous::HashStore>();
    stores = [shared](int) { return shared; };
  }
  std::vector<std::optional<Error>> errors(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank) {
    threads.emplace_back([&, rank] {
      std::optional<Error>& error = errors[static_cast<size_t>(rank)];
      try {
        GlooOptions options = base;
        options.rank = rank;
        options.size = size;
        options.store = stores(rank);
        if (adjust) adjust(rank, options);
        const std::unique_ptr<Communicator> communicator = MakeGlooCommunicator(options);
        body(*communicator);
      } catch (const Error& e) {
        error = e;
      } catch (const std::exception& e) {
        error = Error(ErrorCode::kInternal, std::string("not an autodist::Error: ") + e.what());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  return errors;
}

inline std::string Describe(const std::optional<Error>& error) {
  return error ? error->what() : "no error";
}

inline uint16_t Half(float value) { return gloo::cpu_float2half_rn(value).x; }

inline float FromHalf(uint16_t bits) {
  gloo::float16 h;
  h.x = bits;
  return gloo::cpu_half2float(h);
}

inline double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace autodist::collective::testing
