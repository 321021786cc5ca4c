package main

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal has the kernel kill cmd when the harness dies, so
// that no manager or state server outlives an interrupted run.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
