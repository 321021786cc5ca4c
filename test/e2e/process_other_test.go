//go:build !linux

package e2e

import "os/exec"

// setParentDeathSignal is Linux only.
func setParentDeathSignal(*exec.Cmd) {}
