enum OPQWorkerPlaceholder {}
