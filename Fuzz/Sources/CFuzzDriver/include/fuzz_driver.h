// libFuzzer's driver, called from each fuzz target's entry point. SwiftPM links an executable target
// with `--defsym main=<target>_main`, so the target provides that symbol and hands over to libFuzzer
// (which then does what its own `main` would: parse -flags, read the corpus, fuzz).
#ifndef OPQ_FUZZ_DRIVER_H
#define OPQ_FUZZ_DRIVER_H
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
