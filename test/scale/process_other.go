//go:build !linux

package main

import "os/exec"

// setParentDeathSignal does nothing outside Linux: the harness reads
// /proc, so it only runs on Linux anyway.
func setParentDeathSignal(*exec.Cmd) {}
