// Package history decides, in pure functions, what a state history keeps:
// the key of each snapshot in the destination store (deterministic, so a
// snapshot already stored is found again after a restart, never written
// twice), the snapshots a retention prunes (never the newest), and the
// serials a history missed between two reads. It reads and writes
// nothing.
package history
