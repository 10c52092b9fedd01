#include "tests/k8s/protobuf_body.h"

#include <cstdint>
#include <functional>
#include <string_view>

#include "tests/k8s/api_error.h"
#include "tests/k8s/base64.h"
#include "tests/k8s/clock.h"

namespace autodist::k8s {
namespace {

[[noreturn]] void Malformed(const char* what) {
  FailApi(400, "BadRequest", "protobuf request body: {}", what);
}

// The protobuf wire format, as far as Kubernetes objects use it.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  bool Done() const { return pos_ >= data_.size(); }

  uint64_t Varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (Done()) Malformed("truncated varint");
      const auto byte = static_cast<uint8_t>(data_[pos_++]);
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return value;
    }
    Malformed("varint longer than 10 bytes");
  }
  // Field number and wire type of the next field.
  std::pair<uint32_t, uint32_t> Tag() {
    const uint64_t tag = Varint();
    return {static_cast<uint32_t>(tag >> 3), static_cast<uint32_t>(tag & 7)};
  }
  std::string_view Bytes() {
    const uint64_t n = Varint();
    if (n > data_.size() - pos_) Malformed("truncated length-delimited field");
    const std::string_view out = data_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  void Skip(uint32_t wire_type) {
    switch (wire_type) {
      case 0:
        Varint();
        return;
      case 1:
        Advance(8);
        return;
      case 2:
        Bytes();
        return;
      case 5:
        Advance(4);
        return;
      default:
        Malformed("unsupported wire type");
    }
  }

 private:
  void Advance(size_t n) {
    if (n > data_.size() - pos_) Malformed("truncated fixed-width field");
    pos_ += n;
  }
  std::string_view data_;
  size_t pos_ = 0;
};

using FieldHandler = std::function<void(uint32_t field, uint32_t wire_type, Reader& r)>;

void ForEachField(std::string_view message, const FieldHandler& handle) {
  Reader r(message);
  while (!r.Done()) {
    const auto [field, wire_type] = r.Tag();
    handle(field, wire_type, r);
  }
}

std::string Str(Reader& r) { return std::string(r.Bytes()); }

// map<string, string|bytes> entries are messages {key = 1, value = 2}.
void MapEntry(Reader& r, nlohmann::json& map, bool bytes_value) {
  std::string key;
  std::string value;
  ForEachField(r.Bytes(), [&](uint32_t field, uint32_t wire_type, Reader& entry) {
    if (field == 1 && wire_type == 2) {
      key = Str(entry);
    } else if (field == 2 && wire_type == 2) {
      value = Str(entry);
    } else {
      entry.Skip(wire_type);
    }
  });
  map[key] = bytes_value ? Base64Encode(value) : value;
}

// metav1.Time {seconds = 1, nanos = 2}.
std::string Time(Reader& r) {
  int64_t seconds = 0;
  ForEachField(r.Bytes(), [&](uint32_t field, uint32_t wire_type, Reader& t) {
    if (field == 1 && wire_type == 0) {
      seconds = static_cast<int64_t>(t.Varint());
    } else {
      t.Skip(wire_type);
    }
  });
  return FormatRfc3339(std::chrono::system_clock::time_point(std::chrono::seconds(seconds)));
}

nlohmann::json OwnerReference(Reader& r) {
  nlohmann::json ref = nlohmann::json::object();
  ForEachField(r.Bytes(), [&](uint32_t field, uint32_t wire_type, Reader& o) {
    switch (field) {
      case 1:
        ref["kind"] = Str(o);
        break;
      case 3:
        ref["name"] = Str(o);
        break;
      case 4:
        ref["uid"] = Str(o);
        break;
      case 5:
        ref["apiVersion"] = Str(o);
        break;
      case 6:
        ref["controller"] = o.Varint() != 0;
        break;
      case 7:
        ref["blockOwnerDeletion"] = o.Varint() != 0;
        break;
      default:
        o.Skip(wire_type);
    }
  });
  return ref;
}

// metav1.ObjectMeta: the fields a client may send (server-set ones are overwritten anyway).
nlohmann::json ObjectMeta(Reader& r) {
  nlohmann::json meta = nlohmann::json::object();
  ForEachField(r.Bytes(), [&](uint32_t field, uint32_t wire_type, Reader& m) {
    switch (field) {
      case 1:
        meta["name"] = Str(m);
        break;
      case 2:
        meta["generateName"] = Str(m);
        break;
      case 3:
        meta["namespace"] = Str(m);
        break;
      case 6:
        meta["resourceVersion"] = Str(m);
        break;
      case 8:
        meta["creationTimestamp"] = Time(m);
        break;
      case 11:
        MapEntry(m, meta["labels"], false);
        break;
      case 12:
        MapEntry(m, meta["annotations"], false);
        break;
      case 13:
        meta["ownerReferences"].push_back(OwnerReference(m));
        break;
      case 14:
        meta["finalizers"].push_back(Str(m));
        break;
      default:
        m.Skip(wire_type);
    }
  });
  return meta;
}

// Field numbers from k8s.io/api/core/v1/generated.proto.
nlohmann::json ConfigMap(std::string_view raw) {
  nlohmann::json out = nlohmann::json::object();
  ForEachField(raw, [&](uint32_t field, uint32_t wire_type, Reader& r) {
    switch (field) {
      case 1:
        out["metadata"] = ObjectMeta(r);
        break;
      case 2:
        MapEntry(r, out["data"], false);
        break;
      case 3:
        MapEntry(r, out["binaryData"], true);
        break;
      case 4:
        out["immutable"] = r.Varint() != 0;
        break;
      default:
        r.Skip(wire_type);
    }
  });
  return out;
}

nlohmann::json Secret(std::string_view raw) {
  nlohmann::json out = nlohmann::json::object();
  ForEachField(raw, [&](uint32_t field, uint32_t wire_type, Reader& r) {
    switch (field) {
      case 1:
        out["metadata"] = ObjectMeta(r);
        break;
      case 2:
        MapEntry(r, out["data"], true);
        break;
      case 3:
        out["type"] = Str(r);
        break;
      case 4:
        MapEntry(r, out["stringData"], false);
        break;
      case 5:
        out["immutable"] = r.Varint() != 0;
        break;
      default:
        r.Skip(wire_type);
    }
  });
  return out;
}

nlohmann::json Namespace(std::string_view raw) {
  nlohmann::json out = nlohmann::json::object();
  ForEachField(raw, [&](uint32_t field, uint32_t wire_type, Reader& r) {
    if (field == 1) {
      out["metadata"] = ObjectMeta(r);
    } else if (field == 2) {  // NamespaceSpec {repeated string finalizers = 1}
      auto& spec = out["spec"] = nlohmann::json::object();
      ForEachField(r.Bytes(), [&](uint32_t f, uint32_t w, Reader& s) {
        if (f == 1) {
          spec["finalizers"].push_back(Str(s));
        } else {
          s.Skip(w);
        }
      });
    } else {
      r.Skip(wire_type);
    }
  });
  return out;
}

nlohmann::json ServiceAccount(std::string_view raw) {
  nlohmann::json out = nlohmann::json::object();
  ForEachField(raw, [&](uint32_t field, uint32_t wire_type, Reader& r) {
    if (field == 1) {
      out["metadata"] = ObjectMeta(r);
    } else if (field == 4) {
      out["automountServiceAccountToken"] = r.Varint() != 0;
    } else {
      r.Skip(wire_type);  // secrets and imagePullSecrets: kubectl create never sets them
    }
  });
  return out;
}

}  // namespace

nlohmann::json DecodeProtobufObject(const std::string& body) {
  static constexpr std::string_view kMagic("k8s\0", 4);
  if (std::string_view(body).substr(0, 4) != kMagic) Malformed("missing the k8s envelope");
  // runtime.Unknown {TypeMeta typeMeta = 1 {apiVersion = 1, kind = 2}, bytes raw = 2, ...}.
  std::string api_version;
  std::string kind;
  std::string_view raw;
  ForEachField(std::string_view(body).substr(4),
               [&](uint32_t field, uint32_t wire_type, Reader& r) {
                 if (field == 1 && wire_type == 2) {
                   ForEachField(r.Bytes(), [&](uint32_t f, uint32_t w, Reader& t) {
                     if (f == 1 && w == 2) {
                       api_version = Str(t);
                     } else if (f == 2 && w == 2) {
                       kind = Str(t);
                     } else {
                       t.Skip(w);
                     }
                   });
                 } else if (field == 2 && wire_type == 2) {
                   raw = r.Bytes();
                 } else {
                   r.Skip(wire_type);
                 }
               });
  nlohmann::json object;
  if (api_version == "v1" && kind == "ConfigMap") {
    object = ConfigMap(raw);
  } else if (api_version == "v1" && kind == "Secret") {
    object = Secret(raw);
  } else if (api_version == "v1" && kind == "Namespace") {
    object = Namespace(raw);
  } else if (api_version == "v1" && kind == "ServiceAccount") {
    object = ServiceAccount(raw);
  } else {
    FailApi(415, "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: "
            "application/json, application/yaml (the test double decodes protobuf only for v1 "
            "ConfigMap, Secret, Namespace and ServiceAccount, not {} {})",
            api_version, kind);
  }
  object["apiVersion"] = api_version;
  object["kind"] = kind;
  return object;
}

}  // namespace autodist::k8s
