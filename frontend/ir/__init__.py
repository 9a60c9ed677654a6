"""The StableHLO IR: types, attributes, values/ops/regions and the op table."""
