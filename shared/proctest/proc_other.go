//go:build !linux

package proctest

import "os/exec"

func setProcAttr(cmd *exec.Cmd) {}
