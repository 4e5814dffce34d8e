"""The vocabulary every kernel family shares: packed sequences and offsets, the params base,
results (columns plus an optional ragged CIGAR), CIGAR ops, scoring, backend choice, text helpers."""
