package main

import "os"

// The garbage collector runs at its default target: the big arrays (kernels, API calls)
// of a large trace are mapped outside the Go heap (nsys.bigSlice), so the heap holds
// little, and a lower target (25 was tried) only made collections frequent, which cost
// 20-30% of the wall time on 20 M-kernel traces for 1-2% less peak memory.
func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
