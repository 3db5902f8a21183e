"""Why a number is what it is, beside the measurement: profiles of a few calls, compile traces, the bytes a call
moves and the machine's peaks (datasheet figures, a CPU's measured rates).

Imports core alone; measure runs them after a timed loop, and the report reads what they left."""
