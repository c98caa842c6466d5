// Built-in traces against the inventories of docs/seed-systems.md#model-inventories and docs/seed-systems.md
#include <gtest/gtest.h>

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
  EXPECT_EQ(builtin_trace_names().size(), 8u);
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
