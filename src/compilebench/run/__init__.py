"""Processes and machines: a run prepared (plan), where its cases run (this device, local GPUs, a Ray cluster),
the sweep that hands every repeat to a worker process and stores what comes back, the launchers and executors that
start those processes, device locks, claims of other runs on the same file, the results dead drivers left, the
--env interpreters and the progress bar.

Imports core, storage, measure (what a worker runs), diagnostics and zoo; never the report or the command line."""
