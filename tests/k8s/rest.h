// The write verbs of the API (create, update, patch, delete) with their semantics on top of the
// store: AlreadyExists, generateName, 409 on stale resourceVersions, status-subresource
// isolation, generation, dry run, field validation and server-side apply (approximated).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tests/k8s/object_rules.h"
#include "tests/k8s/patch.h"
#include "tests/k8s/store.h"

namespace autodist::k8s {

struct WriteOptions {
  bool dry_run = false;
  FieldValidation field_validation = FieldValidation::kWarn;
  // Warnings for the client (the Warning: 299 headers), e.g. unknown fields under Warn.
  std::vector<std::string>* warnings = nullptr;
};

class Rest {
 public:
  explicit Rest(Store& store) : store_(store) {}

  // POST: 409 AlreadyExists when the name is taken; metadata.generateName picks a fresh name.
  ObjectPtr Create(const ResourceInfo& r, const std::string& ns, nlohmann::json body,
                   const WriteOptions& options);
  // PUT on the object (status_subresource false) or its /status.
  ObjectPtr Update(const ResourceInfo& r, const std::string& ns, const std::string& name,
                   nlohmann::json body, bool status_subresource, const WriteOptions& options);
  // PATCH with any supported content type; apply patches create the object when absent.
  ObjectPtr Patch(const ResourceInfo& r, const std::string& ns, const std::string& name,
                  PatchType type, const std::string& body, bool status_subresource,
                  const WriteOptions& options);
  ObjectPtr Delete(const ResourceInfo& r, const std::string& ns, const std::string& name,
                   const DeleteOptions& options);

 private:
  Store& store_;
};

// Parses a request body as JSON; 400 BadRequest naming the parse error otherwise.
nlohmann::json ParseBody(const std::string& body);

// 404 NotFound for `name` of resource `r`.
[[noreturn]] void NotFound(const ResourceInfo& r, const std::string& name);

}  // namespace autodist::k8s
