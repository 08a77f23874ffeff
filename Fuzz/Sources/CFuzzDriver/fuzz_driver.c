// Declarations only (see include/fuzz_driver.h); the driver itself is in clang's libFuzzer runtime.
#include "fuzz_driver.h"
