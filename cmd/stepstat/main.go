package main

import (
	"os"
	"runtime/debug"
)

func main() {
	// The big allocations (kernels, API calls) live until exit and hold no pointers: a
	// lower GC target keeps peak memory near the live data at little CPU cost.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(25)
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
