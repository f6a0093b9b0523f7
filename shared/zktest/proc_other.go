//go:build !linux

package zktest

import "os/exec"

func setProcAttr(cmd *exec.Cmd) {}
