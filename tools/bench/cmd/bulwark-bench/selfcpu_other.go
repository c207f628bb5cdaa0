//go:build !unix

package main

import "time"

// selfCPU is 0 where the process's CPU time is not read.
func selfCPU() (time.Duration, int64) { return 0, 0 }
