// Built-in traces against the inventories of docs/seed-systems.md#model-inventories and docs/seed-systems.md
#include <gtest/gtest.h>

#include <cmath>

#include "common/trace.h"

namespace sparsefuse {
namespace {

TEST(Trace, BuiltinInventoriesMatchTheReferences) {
  struct Expected {
    const char* name;
    size_t tensors;
    int64_t parameters;
  };
  for (const Expected& e : {Expected{"bert-base", 201, 109'488'386}, Expected{"bert-large", 393, 335'150'082},
                            Expected{"gpt2-large", 436, 774'030'080}, Expected{"vit-large", 392, 304'326'632},
                            Expected{"resnet50", 161, 25'557'032}, Expected{"resnet50-cifar100", 161, 23'705'252},
                            Expected{"resnet152", 467, 60'192'808}, Expected{"vgg16", 32, 138'357'544}}) {
    Trace t = load_builtin_trace(e.name);
    EXPECT_EQ(t.tensors.size(), e.tensors) << e.name;
    EXPECT_EQ(t.parameters(), e.parameters) << e.name;
    EXPECT_EQ(t.provenance_kind(), "analytic") << e.name;
    EXPECT_EQ(t.tensors.back().ready_ns, t.backward_ns) << e.name;
  }
  size_t analytic = 0;
  for (const auto& name : builtin_trace_names()) analytic += name.rfind("measured/", 0) != 0;
  EXPECT_EQ(analytic, 8u);
}

// A small measured trace as sparsefuse profile-model writes it.
Json measured_trace() {
  return Json::parse(R"({
    "format": "sparsefuse-trace/1", "model": "tiny", "batch_size": 2, "dtype": "float32",
    "provenance": {"kind": "measured", "device": "cpu", "pytorch_version": "1.13.1", "threads": 1,
                   "iterations": 5, "host": "h", "date": "2026-11-24T00:00:00Z"},
    "forward_ns": 300, "backward_ns": 500, "optimizer_ns": 100, "iteration_ns": 905, "iteration_cv": 0.02,
    "tensors": [
      {"name": "b", "shape": [2], "elements": 2, "ready_ns": 100, "ready_spread_ns": 7, "forward_ns": 10},
      {"name": "w", "shape": [2, 3], "elements": 6, "ready_ns": 480, "ready_spread_ns": 12, "forward_ns": 20}]})");
}

TEST(Trace, MeasuredFieldsAreRead) {
  Trace t = parse_trace(measured_trace(), "m.json");
  EXPECT_EQ(t.provenance_kind(), "measured");
  EXPECT_EQ(t.iteration_ns, 905);
  EXPECT_DOUBLE_EQ(t.iteration_cv, 0.02);
  EXPECT_EQ(t.tensors[0].ready_spread_ns, 7);
  EXPECT_EQ(t.tensors[1].ready_spread_ns, 12);
  // Analytic traces leave them at 0.
  Trace analytic = load_builtin_trace("vgg16");
  EXPECT_EQ(analytic.iteration_ns, 0);
  EXPECT_EQ(analytic.tensors[0].ready_spread_ns, 0);
}

TEST(Trace, MeasuredTraceMustSayWhatItMeasured) {
  Json no_iteration = measured_trace();
  no_iteration.erase("iteration_ns");
  EXPECT_THROW(parse_trace(no_iteration, "m.json"), InputError);
  for (const char* key : {"device", "pytorch_version", "threads", "iterations", "host", "date"}) {
    Json missing = measured_trace();
    missing["provenance"].erase(key);
    EXPECT_THROW(parse_trace(missing, "m.json"), InputError) << key;
  }
  // Measurements from elsewhere name their source and method instead.
  Json external = {{"format", "sparsefuse-trace/1"}, {"model", "x"}, {"batch_size", 1},
                   {"provenance", {{"kind", "measured"}, {"source", "a log"}, {"method", "per-layer times"}}},
                   {"forward_ns", 1}, {"backward_ns", 2}, {"optimizer_ns", 1},
                   {"tensors", {{{"name", "w"}, {"shape", {2}}, {"elements", 2}, {"ready_ns", 2}}}}};
  EXPECT_EQ(parse_trace(external, "e.json").provenance_kind(), "measured");
  external["provenance"].erase("method");
  EXPECT_THROW(parse_trace(external, "e.json"), InputError);
  Json negative_spread = measured_trace();
  negative_spread["tensors"][0]["ready_spread_ns"] = -1;
  EXPECT_THROW(parse_trace(negative_spread, "m.json"), InputError);
}

// The flush probe's per-hook medians: the bookkeeping (the median over the
// tensors of flush_us - kernel_us, each floored at 0) and, for a tensor
// probed at its own size, its flush are read; every field is checked,
// naming it. With max_elements 4, "w" (6 elements) was probed at 4, so it
// has no flush of its own.
TEST(Trace, RuntimeFlushIsReadAndChecked) {
  const Json probe = Json::parse(R"({"bookkeeping_us": 0.6, "max_elements": 4, "flushes": 10, "kernels": 5,
    "method": "a probe", "tensors": [{"name": "b", "elements": 2, "flush_us": 0.9, "kernel_us": 0.3},
                                     {"name": "w", "elements": 4, "flush_us": 1.5, "kernel_us": 0.9}]})");
  Json doc = measured_trace();
  const Trace without = parse_trace(doc, "m.json");
  EXPECT_FALSE(without.flush_bookkeeping_us);
  EXPECT_FALSE(without.tensors[0].in_situ_flush_us);
  doc["runtime_flush"] = probe;
  const Trace with = parse_trace(doc, "m.json");
  EXPECT_DOUBLE_EQ(with.flush_bookkeeping_us.value(), 0.6);
  EXPECT_DOUBLE_EQ(with.tensors[0].in_situ_flush_us.value(), 0.9);
  EXPECT_FALSE(with.tensors[1].in_situ_flush_us);
  doc["runtime_flush"]["tensors"][1]["kernel_us"] = 2.0;  // floored at 0: the median of 0.6 and 0
  doc["runtime_flush"]["bookkeeping_us"] = 0.3;
  EXPECT_DOUBLE_EQ(parse_trace(doc, "m.json").flush_bookkeeping_us.value(), 0.3);
  // The write-back of the averages: added, unscaled, to the scaled optimizer step.
  EXPECT_FALSE(with.runtime_write_back_us);
  EXPECT_EQ(with.optimizer_phase_ns(2.0), 2 * with.optimizer_ns);
  doc["runtime_flush"]["write_back_us"] = 9000.25;
  doc["runtime_flush"]["write_backs"] = 6;
  const Trace written = parse_trace(doc, "m.json");
  EXPECT_DOUBLE_EQ(written.runtime_write_back_us.value(), 9000.25);
  EXPECT_EQ(written.optimizer_phase_ns(2.0), 2 * written.optimizer_ns + 9000250);
  const auto changed_probe = [&probe](const char* key, Json value) {
    Json changed = probe;
    changed[key] = std::move(value);
    return changed;
  };
  Json twice = probe;
  twice["tensors"][1]["name"] = "b";
  twice["tensors"][1]["elements"] = 2;
  const std::pair<Json, const char*> bad[] = {
      {changed_probe("bookkeeping_us", 0.5), "bookkeeping_us"},
      {changed_probe("max_elements", 0), "max_elements"},
      {changed_probe("flushes", 0), "flushes"},
      {changed_probe("method", 3), "method"},
      {changed_probe("extra", 1), "extra"},
      {changed_probe("tensors", Json::array()), "tensors"},
      {twice, "tensors/1/name"},
      {changed_probe("write_back_us", 10.0), "write_back_us"},  // without write_backs
      {changed_probe("write_backs", 3), "write_backs"},         // without write_back_us
  };
  for (const auto& [broken_probe, field] : bad) {
    Json broken = measured_trace();
    broken["runtime_flush"] = broken_probe;
    try {
      parse_trace(broken, "m.json");
      ADD_FAILURE() << field << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("runtime_flush/") + field), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("m.json"), std::string::npos) << e.what();
    }
  }
  for (const auto& [key, value] : {std::pair<const char*, Json>{"write_back_us", -1.0}, {"write_backs", 0}}) {
    Json broken = measured_trace();
    broken["runtime_flush"] = probe;
    broken["runtime_flush"]["write_back_us"] = 10.0;
    broken["runtime_flush"]["write_backs"] = 3;
    broken["runtime_flush"][key] = value;
    try {
      parse_trace(broken, "m.json");
      ADD_FAILURE() << key << " = " << value.dump() << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("runtime_flush/") + key), std::string::npos) << e.what();
    }
  }
  for (const auto& [key, value] : {std::pair<const char*, Json>{"name", "nope"}, {"elements", 6}, {"flush_us", -1},
                                   {"kernel_us", "x"}, {"extra", 1}}) {
    Json broken = measured_trace();
    broken["runtime_flush"] = probe;
    broken["runtime_flush"]["tensors"][1][key] = value;
    try {
      parse_trace(broken, "m.json");
      ADD_FAILURE() << key << " = " << value.dump() << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("runtime_flush/tensors/1"), std::string::npos) << e.what();
    }
  }
}

TEST(Trace, ShippedMeasuredTracesAreBuiltIn) {
  size_t measured = 0;
  for (const auto& name : builtin_trace_names()) {
    if (name.rfind("measured/", 0) != 0) continue;
    ++measured;
    Trace t = load_builtin_trace(name);
    EXPECT_EQ(t.provenance_kind(), "measured") << name;
    EXPECT_GT(t.iteration_ns, 0) << name;
    // The phases partition the iteration: their medians add up to the median iteration within 2 %
    // plus twice the standard error of a median (1.2533 cv / sqrt(iterations)), which noisy runs
    // (the launch-bound GPU ResNets, cv 0.1-0.26) need.
    double parts = double(t.forward_ns + t.backward_ns + t.optimizer_ns);
    const double iterations = t.provenance.at("iterations").get<double>();
    EXPECT_NEAR(parts / double(t.iteration_ns), 1.0, 0.02 + 2 * 1.2533 * t.iteration_cv / std::sqrt(iterations))
        << name;
  }
  EXPECT_GE(measured, 4u);
}

TEST(Trace, BackwardOrderAndTiedEmbedding) {
  Trace gpt = load_builtin_trace("gpt2-large");
  EXPECT_EQ(gpt.tensors.back().name, "transformer.wte.weight");  // tied LM head: ready last
  EXPECT_EQ(gpt.tensors.back().elements, 64'328'960);
  Trace bert = load_builtin_trace("bert-large");
  int without_grad = 0;
  for (const auto& t : bert.tensors) without_grad += !t.has_grad;
  EXPECT_EQ(without_grad, 2);  // the pooler gets no gradient in SQuAD fine-tuning
}

TEST(Trace, UnknownBuiltinIsAnInputError) { EXPECT_THROW(load_builtin_trace("alexnet"), InputError); }

}  // namespace
}  // namespace sparsefuse
