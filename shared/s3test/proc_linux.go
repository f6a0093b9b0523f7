package s3test

import (
	"os/exec"
	"syscall"
)

// setProcAttr makes the kernel kill the server if the test process dies
// without cleaning up, so no stray versitygw outlives a killed test run.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
