// Package cputime reads the CPU time the process has used, for benchmarks
// that report CPU per unit of work beside wall time: on a shared machine
// wall time measures the neighbours too.
package cputime

import (
	"syscall"
	"time"
)

// Process is the CPU time (user and system, every thread's) the process has
// used so far; 0 when the system cannot tell.
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
