package breakdown

import (
	"testing"
	"time"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/nsys"
)

// TestGapAPIGroups checks the attribution of idle time by API group: each gap of 10µs is
// covered by one kind of call of the launching thread, and the groups' priority decides
// where calls overlap; a thread that never launches, copies or synchronizes does not count.
func TestGapAPIGroups(t *testing.T) {
	g := newTGen(t)
	gap := func(i int) (nsys.Time, nsys.Time) {
		s := nsys.Time(1000 + 11000*i)
		return s, s + 10_000
	}
	for i := 0; i <= 7; i++ {
		s := nsys.Time(11000 * i)
		g.launch(1, s-200, k(kernelclass.GEMM, 0, 7, s, s+1000))
	}
	// Gap 4 follows a 2ms kernel, so that the 1ms launch call before it overlaps no other gap.
	g.launch(1, 88000-200, k(kernelclass.GEMM, 0, 7, 88000, 2_000_000))
	g.launch(1, 2_010_000-200, k(kernelclass.GEMM, 0, 7, 2_010_000, 2_011_000))
	s0, e0 := gap(0)
	g.api(1, nsys.APIModule, "cuLibraryLoadData", s0, e0) // 0: module loading
	s1, _ := gap(1)
	g.api(1, nsys.APIMemMgmt, "cudaMalloc", s1, s1+4000) // 1: 4µs memory management, 6µs none
	s2, e2 := gap(2)
	g.api(1, nsys.APIMisc, "cudaMemGetInfo", s2, e2) // 2: other CUDA call
	s3, e3 := gap(3)
	g.api(1, nsys.APIGraphLaunch, "cudaGraphLaunch", s3-100, e3) // 3: graph launch
	s4 := nsys.Time(2_000_000)
	g.api(1, nsys.APILaunch, "cudaLaunchKernel", s4+5000-time1ms, s4+5000) // 4: a 1ms launch: 5µs module loading, 5µs launching
	s5, e5 := gap(5)
	g.api(1, nsys.APIModule, "cuKernelSetAttribute", s5, e5) // 5: launch over module loading where they nest
	g.api(1, nsys.APILaunch, "cuLaunchKernelEx", s5+2000, s5+3000)
	s6, e6 := gap(6)
	g.api(2, nsys.APIMemMgmt, "cudaHostRegister", s6, e6) // 6: a thread that never launches: none
	s7, e7 := gap(7)
	g.api(1, nsys.APISync, "cudaStreamSynchronize", s7, e7) // 7: synchronizing over everything
	g.api(1, nsys.APIModule, "cuModuleLoadData", s7, e7)
	rep := mustSummarize(t, g.trace(), Options{Steps: StepMethod{Method: MethodWhole}})
	st := devReport(t, rep, 0).Steps[0]
	// Exact where one call covers a gap; checkInvariants compares every group with a
	// brute-force attribution of each gap's pieces.
	api := st.Gaps.API
	for _, c := range []struct {
		g    APIGroup
		want time.Duration
	}{{APISynchronizing, 10_000}, {APIGraphLaunching, 10_000}, {APIMemoryManagement, 4000}} {
		if api[c.g] != c.want {
			t.Errorf("%s: %v, want %v (all groups %v)", APIGroupNames[c.g], api[c.g], c.want, api)
		}
	}
	// module loading: gap 0 (10µs), the 1ms launch's 5µs in gap 4, gap 5 less its 1µs launch
	if m := api[APIModuleLoading]; m < 23_900 || m > 24_000 {
		t.Errorf("module loading %v, want 24µs less the next kernels' launch calls", m)
	}
	if o := api[APIOther]; o < 9900 || o > 10_000 {
		t.Errorf("other CUDA call %v, want 10µs less the next kernel's launch call", o)
	}
	if st.Gaps.Count != 9 {
		t.Errorf("%d gaps, want 9", st.Gaps.Count)
	}
	var sum time.Duration
	for _, x := range st.Gaps.API {
		sum += x
	}
	if sum != st.Gaps.Total || st.Gaps.Total != st.Exclusive[kernelclass.Idle] {
		t.Errorf("API groups add up to %v, gaps %v, idle %v", sum, st.Gaps.Total, st.Exclusive[kernelclass.Idle])
	}
	checkInvariants(t, g.trace(), rep, Options{})
}

const time1ms = nsys.Time(time.Millisecond)

// benchOverlap builds a trace of two kernels around one 10 ms idle gap and n API calls of
// the launching thread: all overlapping the gap (over), or all inside the kernels' busy
// time before it (!over).
func benchOverlap(b *testing.B, n int, over bool) *nsys.Trace {
	g := newTGen(b)
	const gap0, gap1 = nsys.Time(20_000_000), nsys.Time(30_000_000)
	g.launch(1, 0, k(kernelclass.GEMM, 0, 7, 100, gap0))
	g.launch(1, gap1-100, k(kernelclass.GEMM, 0, 7, gap1, gap1+1000))
	for i := range n {
		s := nsys.Time(1000 + i*200)
		if over {
			s = gap0 - 1000 + nsys.Time(i)*100 // each call starts inside the gap and runs past its end
		}
		end := s + 11_000_000
		if !over {
			end = s + 150
		}
		g.api(1, nsys.APIMisc, "cudaEventQuery", s, end)
	}
	return g.trace()
}

// BenchmarkHostGapsOverlap: 80 000 calls overlapping one idle gap cost the attribution
// what 80 000 calls outside any gap cost (one sweep: each call enters and leaves the heap
// of running calls once), not 80 000 x the gap's pieces.
func BenchmarkHostGapsOverlap(b *testing.B) {
	for _, over := range []bool{false, true} {
		name := "apart"
		if over {
			name = "overlapping"
		}
		b.Run(name, func(b *testing.B) {
			tr := benchOverlap(b, 80_000, over)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := Summarize(tr, Options{Steps: StepMethod{Method: MethodWhole}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
