// Server-side printing: the meta.k8s.io/v1 Table kubectl asks for with
// `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`, and PartialObjectMetadata for
// metadata-only clients. Custom resources use their CRD's additionalPrinterColumns; built-in
// kinds use a condensed version of the real server's columns.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/k8s/resources.h"
#include "tests/k8s/watch.h"

namespace autodist::k8s {

enum class OutputFormat { kObject, kTable, kPartialMetadata };

struct Negotiated {
  OutputFormat format = OutputFormat::kObject;
  std::string version = "v1";  // meta.k8s.io version of Table / PartialObjectMetadata
};

// Picks the first representation in the Accept header the double serves.
Negotiated NegotiateAccept(const std::string& accept);

class TableConverter {
 public:
  // `include_object`: None, Metadata (the default) or Object, as ?includeObject= says.
  TableConverter(const ResourceInfo& r, std::string include_object, std::string version);

  nlohmann::json Table(const std::vector<ObjectPtr>& items, uint64_t rv,
                       const std::string& continue_token) const;
  // A Table with one row, for a watch event; `with_columns` only for a watch's first event.
  nlohmann::json EventTable(const nlohmann::json& object, bool with_columns) const;

 private:
  nlohmann::json Columns() const;
  nlohmann::json Row(const nlohmann::json& object) const;
  nlohmann::json Cells(const nlohmann::json& object) const;

  ResourceInfo resource_;
  std::string include_object_;
  std::string version_;
};

// metav1.PartialObjectMetadata(List) for `as=PartialObjectMetadata[List]`.
nlohmann::json PartialMetadata(const nlohmann::json& object, const std::string& version);

}  // namespace autodist::k8s
