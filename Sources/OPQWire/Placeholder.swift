// Placeholder until the protocol lands.
enum OPQWirePlaceholder {}
