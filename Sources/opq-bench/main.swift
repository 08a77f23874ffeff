// Placeholder: replaced by the benchmark program.
print("opq-bench")
