// A Result's value for a test that needs it: an error fails the test (with the error's text) and
// reads as a default value, so the test goes on to report what else is wrong.
#pragma once

#include "shardgate/status.h"

#include <gtest/gtest.h>

#include <utility>

namespace sg::testing {

template <typename T>
T value_or_fail(Result<T> r) {
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? std::move(r).value() : T{};
}

}  // namespace sg::testing
