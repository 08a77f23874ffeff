public enum OPQCorePlaceholder {}
