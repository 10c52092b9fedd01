#include "runtime/optim/optimizer_options.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <set>
#include <string_view>
#include <vector>

#include "runtime/common/error.h"

namespace autodist::optim {
namespace {

std::string Lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// "weightDecay" -> "weight_decay", "lazy-sparse" -> "lazy_sparse".
std::string SnakeCase(std::string_view key) {
  std::string out;
  for (const char c : key) {
    if (std::isupper(static_cast<unsigned char>(c)) != 0) {
      if (!out.empty() && out.back() != '_') out += '_';
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      out += c == '-' ? '_' : c;
    }
  }
  return out;
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())) != 0) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())) != 0) {
    text.remove_suffix(1);
  }
  return text;
}

// Reads the options one optimizer takes; the keys it may read are declared up front so that an
// option it does not take is rejected with the full list.
class OptionReader {
 public:
  OptionReader(std::string optimizer, const std::map<std::string, std::string>& options,
               std::vector<std::string> accepted)
      : optimizer_(std::move(optimizer)), accepted_(std::move(accepted)) {
    for (const auto& [key, value] : options) {
      const std::string normalized = SnakeCase(key);
      const auto [it, inserted] = given_.emplace(normalized, key);
      AD_CHECK(inserted, kInvalidArgument,
               "optimizer {}: option '{}' is given twice (as '{}' and '{}')", optimizer_,
               normalized, it->second, key);
      AD_CHECK(std::find(accepted_.begin(), accepted_.end(), normalized) != accepted_.end(),
               kInvalidArgument, "optimizer {} does not take option '{}'; it takes: {}", optimizer_,
               key, fmt::join(accepted_, ", "));
      values_.emplace(normalized, value);
    }
  }

  bool Has(const std::string& key) const { return values_.contains(key); }

  double Number(const std::string& key, double default_value) const {
    const auto it = values_.find(key);
    if (it == values_.end()) return default_value;
    return ParseNumber(key, it->second);
  }

  bool Bool(const std::string& key, bool default_value) const {
    const auto it = values_.find(key);
    if (it == values_.end()) return default_value;
    const std::string lowered = Lower(Trim(it->second));
    if (lowered == "true" || lowered == "1" || lowered == "yes") return true;
    if (lowered == "false" || lowered == "0" || lowered == "no") return false;
    Fail(ErrorCode::kInvalidArgument, "optimizer {}: option {}: expected true or false, got '{}'",
         optimizer_, key, it->second);
  }

  // "0.9,0.999", "(0.9, 0.999)" or "[0.9, 0.999]".
  std::pair<double, double> Pair(const std::string& key) const {
    const std::string& text = values_.at(key);
    std::string_view body = Trim(text);
    if (body.size() >= 2 && ((body.front() == '(' && body.back() == ')') ||
                             (body.front() == '[' && body.back() == ']'))) {
      body = body.substr(1, body.size() - 2);
    }
    const size_t comma = body.find(',');
    AD_CHECK(comma != std::string_view::npos && body.find(',', comma + 1) == std::string_view::npos,
             kInvalidArgument,
             "optimizer {}: option {}: expected two numbers like '0.9,0.999', got '{}'", optimizer_,
             key, text);
    return {ParseNumber(key, std::string(body.substr(0, comma))),
            ParseNumber(key, std::string(body.substr(comma + 1)))};
  }

 private:
  double ParseNumber(const std::string& key, const std::string& text) const {
    const std::string_view trimmed = Trim(text);
    double value = 0;
    const char* last = trimmed.data() + trimmed.size();
    const auto [ptr, ec] = std::from_chars(trimmed.data(), last, value);
    AD_CHECK(!trimmed.empty() && ec == std::errc() && ptr == last && std::isfinite(value),
             kInvalidArgument, "optimizer {}: option {}: expected a finite number, got '{}'",
             optimizer_, key, text);
    return value;
  }

  std::string optimizer_;
  std::vector<std::string> accepted_;
  std::map<std::string, std::string> values_;  // normalized key -> value
  std::map<std::string, std::string> given_;   // normalized key -> key as written
};

std::vector<std::string> AcceptedOptions(const std::string& name) {
  if (name == "sgd")
    return {"lr", "momentum", "dampening", "nesterov", "weight_decay", "lazy_sparse"};
  if (name == "adam" || name == "adamw") {
    return {"lr", "betas", "beta1", "beta2", "eps", "weight_decay", "amsgrad", "lazy_sparse"};
  }
  if (name == "adagrad") {
    return {"lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps", "lazy_sparse"};
  }
  if (name == "rmsprop") {
    return {"lr", "alpha", "eps", "weight_decay", "momentum", "centered", "lazy_sparse"};
  }
  Fail(ErrorCode::kInvalidArgument, "unknown optimizer '{}'; valid: {}", name,
       fmt::join(kOptimizerNames, ", "));
}

void CheckAtLeast(const std::string& optimizer, const char* option, double value, double minimum) {
  AD_CHECK(std::isfinite(value) && value >= minimum, kInvalidArgument,
           "optimizer {}: option {} must be a finite number >= {}, got {}", optimizer, option,
           minimum, value);
}

void CheckBeta(const std::string& optimizer, const char* option, double value) {
  AD_CHECK(value >= 0.0 && value < 1.0, kInvalidArgument,
           "optimizer {}: option {} must be in [0, 1), got {}", optimizer, option, value);
}

}  // namespace

OptimizerOptions ParseOptimizerOptions(const std::string& name,
                                       const std::map<std::string, std::string>& options) {
  OptimizerOptions out;
  out.name = Lower(Trim(name));
  const OptionReader reader(out.name, options, AcceptedOptions(out.name));
  const std::string& n = out.name;

  if (n == "sgd") {
    AD_CHECK(reader.Has("lr"), kInvalidArgument,
             "optimizer sgd: option lr is required (torch.optim.SGD has no default learning rate)");
  }
  const double default_lr = (n == "adagrad" || n == "rmsprop") ? 1e-2 : 1e-3;
  out.lr = reader.Number("lr", default_lr);
  out.weight_decay = reader.Number("weight_decay", n == "adamw" ? 1e-2 : 0.0);
  out.lazy_sparse = reader.Bool("lazy_sparse", false);
  if (n == "sgd" || n == "rmsprop") out.momentum = reader.Number("momentum", 0.0);
  if (n == "sgd") {
    out.dampening = reader.Number("dampening", 0.0);
    out.nesterov = reader.Bool("nesterov", false);
  }
  if (n != "sgd") out.eps = reader.Number("eps", n == "adagrad" ? 1e-10 : 1e-8);
  if (n == "adam" || n == "adamw") {
    if (reader.Has("betas")) {
      AD_CHECK(!reader.Has("beta1") && !reader.Has("beta2"), kInvalidArgument,
               "optimizer {}: give either betas or beta1/beta2, not both", n);
      std::tie(out.beta1, out.beta2) = reader.Pair("betas");
    } else {
      out.beta1 = reader.Number("beta1", 0.9);
      out.beta2 = reader.Number("beta2", 0.999);
    }
    out.amsgrad = reader.Bool("amsgrad", false);
  }
  if (n == "adagrad") {
    out.lr_decay = reader.Number("lr_decay", 0.0);
    out.initial_accumulator_value = reader.Number("initial_accumulator_value", 0.0);
  }
  if (n == "rmsprop") {
    out.alpha = reader.Number("alpha", 0.99);
    out.centered = reader.Bool("centered", false);
  }
  ValidateOptimizerOptions(out);
  return out;
}

void ValidateOptimizerOptions(const OptimizerOptions& options) {
  const std::string& n = options.name;
  (void)AcceptedOptions(n);  // rejects an unknown name
  CheckAtLeast(n, "lr", options.lr, 0.0);
  CheckAtLeast(n, "weight_decay", options.weight_decay, 0.0);
  if (n == "sgd") {
    CheckAtLeast(n, "momentum", options.momentum, 0.0);
    AD_CHECK(std::isfinite(options.dampening), kInvalidArgument,
             "optimizer sgd: option dampening must be finite, got {}", options.dampening);
    AD_CHECK(!options.nesterov || (options.momentum > 0 && options.dampening == 0),
             kInvalidArgument,
             "optimizer sgd: nesterov=true requires momentum > 0 and dampening = 0, got "
             "momentum={} dampening={}",
             options.momentum, options.dampening);
    return;
  }
  CheckAtLeast(n, "eps", options.eps, 0.0);
  if (n == "adam" || n == "adamw") {
    CheckBeta(n, "beta1", options.beta1);
    CheckBeta(n, "beta2", options.beta2);
  } else if (n == "adagrad") {
    CheckAtLeast(n, "lr_decay", options.lr_decay, 0.0);
    CheckAtLeast(n, "initial_accumulator_value", options.initial_accumulator_value, 0.0);
  } else if (n == "rmsprop") {
    CheckAtLeast(n, "momentum", options.momentum, 0.0);
    CheckAtLeast(n, "alpha", options.alpha, 0.0);
  }
}

std::string DescribeOptimizerOptions(const OptimizerOptions& o) {
  const std::string& n = o.name;
  std::string text = fmt::format("{}(lr={}", n, o.lr);
  if (n == "sgd") {
    text += fmt::format(", momentum={}, dampening={}, nesterov={}", o.momentum, o.dampening,
                        o.nesterov);
  } else if (n == "adam" || n == "adamw") {
    text += fmt::format(", betas=({}, {}), eps={}, amsgrad={}", o.beta1, o.beta2, o.eps, o.amsgrad);
  } else if (n == "adagrad") {
    text += fmt::format(", lr_decay={}, initial_accumulator_value={}, eps={}", o.lr_decay,
                        o.initial_accumulator_value, o.eps);
  } else if (n == "rmsprop") {
    text += fmt::format(", alpha={}, eps={}, momentum={}, centered={}", o.alpha, o.eps, o.momentum,
                        o.centered);
  }
  text += fmt::format(", weight_decay={}", o.weight_decay);
  if (o.lazy_sparse) text += ", lazy_sparse=true";
  return text + ")";
}

}  // namespace autodist::optim
