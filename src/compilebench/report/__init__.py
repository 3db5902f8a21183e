"""Reports from the results store alone."""
