// Request bodies in Kubernetes' protobuf encoding (Content-Type
// application/vnd.kubernetes.protobuf), which kubectl's typed clients send for `kubectl create
// configmap|secret|namespace|serviceaccount`: the "k8s\0" envelope around a runtime.Unknown whose
// raw bytes are the object. Decoded to JSON for the kinds those commands create; the double serves
// JSON everywhere else.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace autodist::k8s {

// The object of a protobuf request body as the JSON the API would take. Throws ApiError (415
// UnsupportedMediaType) for kinds other than ConfigMap, Secret, Namespace and ServiceAccount, and
// (400 BadRequest) for a malformed body.
nlohmann::json DecodeProtobufObject(const std::string& body);

}  // namespace autodist::k8s
