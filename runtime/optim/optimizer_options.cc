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
#include "runtime/config/option_map.h"

namespace autodist::optim {
namespace {

// "0.9,0.999", "(0.9, 0.999)" or "[0.9, 0.999]".
std::pair<double, double> ReadPair(config::OptionMap& options, const std::string& key) {
  const std::string& text = *options.Find(key);
  std::string_view body = config::TrimSpace(text);
  if (body.size() >= 2 && ((body.front() == '(' && body.back() == ')') ||
                           (body.front() == '[' && body.back() == ']'))) {
    body = body.substr(1, body.size() - 2);
  }
  const size_t comma = body.find(',');
  if (comma == std::string_view::npos || body.find(',', comma + 1) != std::string_view::npos) {
    options.FailValue(key, "two numbers like '0.9,0.999'", text);
  }
  const auto number = [&](std::string_view part) {
    const std::optional<double> value = config::ParseFiniteNumber(part);
    if (!value.has_value()) options.FailValue(key, "a finite number", std::string(part));
    return *value;
  };
  return {number(body.substr(0, comma)), number(body.substr(comma + 1))};
}

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
  out.name = config::Lowercase(config::TrimSpace(name));
  config::OptionMap reader("optimizer " + out.name, options);
  reader.RejectOthers(AcceptedOptions(out.name));
  const std::string& n = out.name;

  if (n == "sgd") {
    AD_CHECK(reader.Has("lr"), kInvalidArgument,
             "optimizer sgd: option lr is required (torch.optim.SGD has no default learning rate)");
  }
  const double default_lr = (n == "adagrad" || n == "rmsprop") ? 1e-2 : 1e-3;
  out.lr = reader.Number("lr").value_or(default_lr);
  out.weight_decay = reader.Number("weight_decay").value_or(n == "adamw" ? 1e-2 : 0.0);
  out.lazy_sparse = reader.Bool("lazy_sparse").value_or(false);
  if (n == "sgd" || n == "rmsprop") out.momentum = reader.Number("momentum").value_or(0.0);
  if (n == "sgd") {
    out.dampening = reader.Number("dampening").value_or(0.0);
    out.nesterov = reader.Bool("nesterov").value_or(false);
  }
  if (n != "sgd") out.eps = reader.Number("eps").value_or(n == "adagrad" ? 1e-10 : 1e-8);
  if (n == "adam" || n == "adamw") {
    if (reader.Has("betas")) {
      AD_CHECK(!reader.Has("beta1") && !reader.Has("beta2"), kInvalidArgument,
               "optimizer {}: give either betas or beta1/beta2, not both", n);
      std::tie(out.beta1, out.beta2) = ReadPair(reader, "betas");
    } else {
      out.beta1 = reader.Number("beta1").value_or(0.9);
      out.beta2 = reader.Number("beta2").value_or(0.999);
    }
    out.amsgrad = reader.Bool("amsgrad").value_or(false);
  }
  if (n == "adagrad") {
    out.lr_decay = reader.Number("lr_decay").value_or(0.0);
    out.initial_accumulator_value = reader.Number("initial_accumulator_value").value_or(0.0);
  }
  if (n == "rmsprop") {
    out.alpha = reader.Number("alpha").value_or(0.99);
    out.centered = reader.Bool("centered").value_or(false);
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
