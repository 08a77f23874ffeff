#ifndef OPQ_BUILD_INFO_H
#define OPQ_BUILD_INFO_H

/// The git revision the binaries were built from, or NULL when the build did not say.
/// scripts/install.sh passes it as a C macro: swift build -Xcc -DOPQ_GIT_REVISION='"<hash>"'.
/// A plain `swift build` defines nothing, so a fresh clone builds with no step before it.
const char *opq_build_git_revision(void);

#endif
