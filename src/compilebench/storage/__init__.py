"""The results file and what is kept beside it: the SQLite store (schema, migrations, claims, one transaction per
repeat), results it could not take (unsaved), whether a path can be written, and writes that finish before a stop
signal is acted on.

Imports core alone. Workers never import it: only the driver, the reports and the command line touch the file."""
