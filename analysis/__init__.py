"""Analysis: questions over the warehouse → polars DataFrames → charts and reports."""
