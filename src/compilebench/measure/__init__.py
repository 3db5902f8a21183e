"""Inside a worker process: one repeat of a case measured. The worker picks the timed unit (forward, generation,
serving shapes), the compiler applies the variant, timing alone times a model's calls, recording turns a measurement into a
Repeat with its conditions, invariants, correctness and compile counters; the environment's fingerprint.

Imports core, diagnostics and zoo; never the store (workers measure, the driver stores) nor anything above."""
