"""The results file: the SQLite store (schema, migrations, claims, one transaction per repeat), whether a path can
be written, and writes that finish before a stop signal is acted on. (What the file could not take, the run that
measured it keeps beside it: run/storing.py.)

Imports core alone. Workers never import it: only the driver, the reports and the command line touch the file."""
