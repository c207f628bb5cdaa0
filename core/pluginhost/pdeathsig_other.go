//go:build !linux

package pluginhost

import "os/exec"

func setParentDeathSignal(*exec.Cmd) {}

func killGroup(*exec.Cmd) {}
