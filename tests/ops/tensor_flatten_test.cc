#include "tests/ops/op_test_util.h"

namespace autodist::ops::testing {
namespace {

TEST(FlattenTest, CollapsesAroundTheAxis) {
  const Tensor x = RandomTensor({2, 3, 4, 5}, 1);
  EXPECT_EQ(RunOp(OpCase{"Flatten", {x}})[0].shape(), (Shape{2, 60}));
  EXPECT_EQ(RunOp(OpCase{"Flatten", {x}, {AttrInt("axis", 0)}})[0].shape(), (Shape{1, 120}));
  EXPECT_EQ(RunOp(OpCase{"Flatten", {x}, {AttrInt("axis", -1)}})[0].shape(), (Shape{24, 5}));
  EXPECT_EQ(RunOp(OpCase{"Flatten", {x}, {AttrInt("axis", 4)}})[0].shape(), (Shape{120, 1}));
  EXPECT_THROW(RunOp(OpCase{"Flatten", {x}, {AttrInt("axis", 5)}}), Error);
}

TEST(FlattenTest, IsAViewAndItsGradientMatches) {
  const Tensor x = RandomTensor({2, 3, 4}, 2);
  EXPECT_TRUE(RunOp(OpCase{"Flatten", {x}})[0].SharesStorageWith(x));
  ExpectGradientsMatch(OpCase{"Flatten", {x}, {AttrInt("axis", 2)}});
}

}  // namespace
}  // namespace autodist::ops::testing
