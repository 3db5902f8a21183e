"""The words and arithmetic every layer shares, as pure data: what a case is (variant, case, run spec, settings),
what it produced (repeats, results), the vocabulary of statuses, flags and verdicts, the statistics and speed-ups
between processes, drift between runs, the traffic of shapes, the suites and the machine's name.

Imports nothing of compilebench outside core, and neither torch nor any file or process: everything above reads it."""
