package e2e

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal kills the process when the test binary dies, so an
// aborted run leaves no manager or state server behind.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
