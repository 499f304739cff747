"""Op tests: a package, so their module names cannot clash with test files elsewhere."""
