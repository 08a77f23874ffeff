import COPQBuildInfo
import OPQWire

/// The one source of the version every opq executable prints with `--version`.
///
/// The release number is this constant; the git revision is compiled in by `scripts/install.sh`
/// (`-Xcc -DOPQ_GIT_REVISION=…`, read from C in `COPQBuildInfo`), so a plain `swift build` needs no
/// generated file and no build plugin and says "revision unknown" instead.
public enum OPQVersion {
    /// The release: change it here, and only here, when a release is cut.
    public static let release = "0.1.0"

    /// The git revision the binary was built from (`git describe --always --dirty` form), if the build said.
    public static var revision: String? {
        guard let pointer = opq_build_git_revision() else { return nil }
        let text = String(cString: pointer)
        return text.isEmpty ? nil : text
    }

    /// The wire protocol version this build speaks (`Register.protocol_version`, the `OPQ/1` signature).
    public static var protocolVersion: UInt32 { WireLimits.protocolVersion }

    /// What `--version` prints, e.g. `0.1.0 (git 1a2b3c4, protocol 1)`; ArgumentParser prints it as is.
    public static var line: String {
        "\(release) (\(revision.map { "git \($0)" } ?? "revision unknown: not built by scripts/install.sh"), protocol \(protocolVersion))"
    }
}
