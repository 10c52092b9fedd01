#include "runtime/collective/communicator.h"

namespace autodist::collective {

size_t ElementBytes(ElementType type) {
  switch (type) {
    case ElementType::kFloat32:
      return 4;
    case ElementType::kFloat16:
      return 2;
    case ElementType::kInt64:
      return 8;
  }
  return 0;  // unreachable: every enumerator is handled above
}

const char* ElementTypeName(ElementType type) {
  switch (type) {
    case ElementType::kFloat32:
      return "float32";
    case ElementType::kFloat16:
      return "float16";
    case ElementType::kInt64:
      return "int64";
  }
  return "unknown";
}

}  // namespace autodist::collective
