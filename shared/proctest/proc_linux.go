package proctest

import (
	"os/exec"
	"syscall"
)

// setProcAttr makes the kernel kill the process if the test process dies
// without cleaning up, so no stray server outlives a killed test run.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
