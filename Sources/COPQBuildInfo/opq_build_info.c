#include "opq_build_info.h"

const char *opq_build_git_revision(void) {
#ifdef OPQ_GIT_REVISION
    return OPQ_GIT_REVISION;
#else
    return 0;
#endif
}
