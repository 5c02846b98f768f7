// Package breakdown breaks the GPU timeline of an LLM inference server down into steps and
// per-category time. It reads no trace file (package nsys does), does not decide what a
// kernel name is (package kernelclass does), and neither draws conclusions nor compares
// reports (packages findings and compare do, on its results).
//
// Summarize (summarize.go) runs the pipeline; each stage has its own file, in this order:
//
//  1. options.go: the Options, checked before any work.
//  2. classify.go: each distinct kernel name classified once (kernelclass), and the
//     Options.NVTXCategories overrides per kernel; steps.Timeline (steps/activity.go) merges
//     a device's kernels, memory operations and graph executions into one timeline in start
//     order.
//  3. kernels.go: the whole-trace kernel table (runs beside the steps).
//  4. package steps (breakdown/steps) finds each device's steps: steps.Detect runs the
//     detectors of the method asked for and returns a steps.Detection (the steps'
//     boundaries, the method and the model's forwards), all that the later stages read of
//     it; selfcheck.go warns when the steps look wrong; context.go then classifies kernels
//     by their place in their step.
//  5. sweep.go: one sweep of the timeline accounts each step's exclusive and busy time,
//     counts and idle gaps (long timelines in two halves at once).
//  6. hostgaps.go: idle gaps attributed to what the host was doing.
//  7. phases.go: prefill, decode, mixed or uncertain for steps whose detection gave no phase:
//     by what each step holds on the loop's stream against the loop's decode template, then
//     by copies (input copies per token against the read-back per sequence).
//  8. summary.go and stats.go: the steps of one phase summarised (medians, quantiles,
//     means that add up, shares).
//  9. ranks.go: the rank view of multi-GPU traces (collectives matched across devices);
//     sol.go: the speed-of-light view. run.go: a run given as several files
//     (nsys.MergeRun) is summarised on one clock: each file's offset checked against the
//     matched collectives' ends and refined (a second summary) where they disagree;
//     runmatch.go places the files by those ends before any step is found.
//  10. timeline.go: the median and the slowest summarised step kept as they ran, for the
//     HTML report's step timeline (one step's rows per device).
//
// procs.go splits a device that several processes share into one timeline per process;
// lifetime.go keeps a whole-process capture's served loop (DeviceReport.Lifetime names
// the load, warm-up, capture and shutdown around it); kind.go says when a device's steps
// are training steps or a loading window, not an inference loop (DeviceReport.Kind).
// report.go holds the result types; units.go how a time and a share are written in text.
//
//   - Steps are the iterations of the serving loop: one forward of the target model, or one
//     speculative round (the draft model's forwards and the target's verify forward).
//     Iterations differ in shape (batch, prompt chunk, number of draft tokens) and that is
//     normal; a run of iterations is never folded into one step. Found per device (per
//     process on a device that several processes share, procs.go: each is its own loop,
//     its own DeviceReport with PID and Processes, and no step holds another process's
//     work; such reports have no rank view), by the first of these that finds any
//     (`--steps auto`; the list is `breakdown/steps/method.go`'s one
//     table of methods):
//   - NVTX ranges (a `--steps nvtx:REGEX`, or the dialects of TensorRT-LLM `[Executor]
//     _forward_step N: X ctx reqs, Y gen reqs` (older releases without ` N`), vLLM `execute_context_*_generation_*`,
//     SGLang `step[decode bs=N]`, `step[prefill ...]`, `step[mixed ...]`,
//     `step[target_verify ...]` (a decode step), `step[idle]` (no step: its work, if any, is
//     outside steps), and plain `prefill`/`decode`/`step` names), mapped to the GPU work
//     they launched through each kernel's correlation id and the launching thread, not by
//     GPU time overlap. The text gives the phase (a batch of prompt and generating requests
//     is `mixed`) and, when it says, the batch size (SGLang `bs=N`; ctx + gen requests;
//     context + generation requests). A step ends with the work its range launched: work
//     that a process with step ranges launched outside every range (warm-up between the
//     prefill range and the first graph replay, work after the last step) is outside steps.
//   - Otherwise the iterations from what every serving loop does once per iteration
//     (`breakdown/steps/cuts.go`, `stepfind.go`, `forwards.go`). The end of a host synchronisation
//     (a synchronize call, or a device-to-host read-back), the first kernel of each CUDA
//     graph launch, and host-to-device input copies cut the timeline into segments
//     (copy-only segments join the segment they feed). The model itself marks where a
//     forward ends: its last GEMM (the lm_head) and the sampler after it (argmax,
//     multinomial, a top-k/top-p sampler, XLA's reduction fusion), with no GEMM or attention
//     kernel after the sampler before the next cut. A loop holds several cuts per iteration
//     (transformers' `generate()` syncs twice per token, an eager MoE loop once per expert);
//     the finder groups segments into steps that each end with one forward: the grouping of
//     k segments whose kernel mix repeats (over the second half of the trace), aligned to
//     the loop body, then split after every forward end a group holds, so that a prefill
//     that took in later iterations, a mid-run change of the kernel mix or a second request
//     becomes steps again; without a repeating grouping the forward ends alone make the
//     steps. Steps whose forward is shallower (at most 3/4 of the deepest forward's
//     attention kernels: the draft model's layers) join the target forward that follows into
//     one speculative round, a decode step with `draft_forwards`. When the device idles
//     after a step's work for more than two median steps (and 2 ms), the pause (between
//     requests) is outside steps, the step ending with its work (and the read-back that ends
//     it). Warm-up steps (eager iterations before the first replay of a CUDA graph loop) and
//     setup before the loop are outside steps. The method is reported as `graph` when graph
//     launches start most steps, else `sync`, with the signals and the segments per step in
//     the detail. Markers that a test workload adds for its own ground truth (a
//     `cudaMemGetInfo` in a forward hook) are not signals: the finder reads none of them
//     (`TestMarkersAreNotSignals` deletes them and compares).
//   - Periodicity of the kernel name sequence (no host signal), aligned to the first whole
//     period that repeats; a partial period at the end is outside steps. Linear in the
//     kernels whatever the period (`BenchmarkPeriodic1M`).
//   - Else the whole trace is one step, with a warning. `--steps graph|sync|periodic` forces
//     the finder onto one signal (periodic: the kernel sequence). A forced method that finds
//     no steps on any device fails with one line naming it and exit status 1, as `--steps
//     nvtx` without a matching range does: `stepstat: dense-eager.sqlite: step method graph
//     found no steps: no CUDA graph launch cuts the GPU work into repeating steps`; on a
//     device where it finds none while another device has steps, that device's whole trace
//     is one step, with a warning. Activity outside steps is in no step: the text report
//     prints an `Outside steps:` line (time, windows, kernels). A step runs from its first
//     GPU activity to the next window's first activity, so the host's time between steps is
//     the step's tail idle time.
//   - Self-checks warn (text, JSON and HTML warnings) when the steps look wrong, on every
//     phase: steps that hold several forwards of the model (a sampler after the lm_head
//     each, counted per step whatever the method: iterations folded together), step counts
//     that disagree with the forwards in them, a prefill more than 10x the median of three
//     or more; and on decode steps: steps that launch no kernel, kernel counts that
//     alternate between two values (a step cut in two), a first or last step cut short (not
//     one that holds its whole forward: a round with fewer drafts near the end is normal),
//     steps more than 10x away from the median, decode steps that are twins of a prefill
//     (its kernels in its time: several runs of one program in one capture, the later
//     prefills called decode), decode steps that change kernel regime mid-run (the steps
//     before one share no kernel mix with the steps from it on, each side repeating its own,
//     at least 3 a side: kernels added, dropped or moved between categories at the same
//     batch, eagerly launched; not a change with the copies' sizes, under CUDA graphs, or a
//     same-category variant), devices of one trace that disagree on the number of decode
//     steps, and lost launch rows (1% or more, and 20 or more, of a device's launches of
//     kernels and copies with no CUDA API row of their correlation id in their process: a
//     graph's kernels are one launch; a process without API rows is not counted).
//   - Phase: from NVTX text where present (`prefill`, `decode`, `mixed`); else from what each
//     step holds on the loop's own stream (the device's stream with the most kernels; side
//     streams' KV transfers are no part of a forward) against the loop's decode template,
//     the steps of its most common kernel mix (the sampler's kernels left out: top-k variants
//     change with the batch). Prompt tokens: more attention calls per forward than the
//     template (1.5x and one more: a prompt chunk's own attention beside the decode rows',
//     `mixed` when the template's attention calls are there too), attention kernels the
//     template never runs (unless the step holds the template's GEMMs in number and time and
//     its attention calls per forward: a multi-token decode, prompt-lookup's or a draft's
//     verify forward), eager while the template replays a CUDA graph, GEMM kernels running 3x
//     as long as the template's same kernels (or the GEMMs 3x its median time; never for the
//     template's own mix: time alone); at a request's start (the first step, or the first
//     after a window outside steps) also GEMMs other in number, or 5% more or fewer kernels.
//     Decode: a template step, or a step that holds its attention calls of its kernels, its
//     graph replay or eager launching and GEMMs under 3x its time. Else `uncertain` (phase
//     evidence says what differs), counted, out of the decode summary, warned about. The
//     template itself is checked: when every iteration runs attention calls per forward in
//     proportion to the sequences it reads back (one call a sequence, over two batch sizes or
//     more), or another iteration of the template's attention calls, GEMM count and read-back
//     copies half its input or less and runs its GEMMs 1.1x faster or more (the template holds
//     more tokens than one a sequence), the loop holds prompts only (a disaggregated prefill
//     worker): its steps are prefill. A speculative round is decode, but at a request's start
//     when it holds attention or GEMM kernels the other rounds never run (the prompt). Copies
//     then tell what the kernels cannot (continuous batching runs prompt chunks in decode's
//     kernels): on a device whose forwards end with a sampler, where at least half the steps
//     copy inputs to the device and read tokens back on the read-back's stream (the stream of
//     the first device-to-host copy after most forward ends; a transfer stream's copies are
//     no iteration's inputs), a step whose median host-to-device copy is at least 4x its
//     read-back, relative to the median step's ratio, processes prompt tokens (inputs are per
//     token, the read-back per sequence: in decode both are one per sequence, whatever the
//     batch), unless a template step that reads back as much or more copies as much input
//     (a graph's padded static inputs). Such a step is a prefill at a request's start;
//     inside one it is `mixed` (a prompt chunk beside decoding sequences) when it reads back
//     more than the run's smallest read-back and the step before it is decode, or a prompt
//     step that read back more than the smallest too (a token budget cuts at most one prompt
//     per iteration, so the others sample on); else a prefill (a prompt's next chunk, or
//     prompts alone). `serve-cb`: 2 prefill, 4 mixed, 33 decode, as its truth. A verify
//     forward that reads back a token per position keeps decode's ratio.
//   - Evidence: every step says which signal started it (`cut_by`, ids joined by `+` when
//     several apply: `nvtx`, `read_back`, `sync`, `graph_launch`, `input_copy`,
//     `forward_end`, `pause`, `periodicity`, `window_start`, `whole`) and why it has its
//     phase (`phase_evidence`); the text report counts them per device (`Steps cut by:`,
//     `Phases by:`), the HTML step table shows them. A step with no positive evidence is
//     decode, its evidence says "no evidence", and a self-check warning names those steps.
//     A speculative round is claimed only where the trace shows a draft: forwards of one
//     smaller depth (`draft_depth`, attention kernels) before each verify forward of full
//     depth (`verify_depth`), in at least two rounds. An iteration cut by the capture
//     window's start or end (`nsys start`/`stop`, a capture range, `--delay`) is `partial`:
//     kept out of every summary and named in a warning. An iteration that captures a CUDA
//     graph (`cudaStreamBeginCapture`, `cudaGraphInstantiate`) is one step marked
//     `graph_capture`, its host time in graph calls `capture_host_ns`, kept out of every
//     summary but the prefill's. vLLM's plain and detailed step ranges
//     (`execute_T_context_C(...)_generation_G(...)`) and SGLang's scheduler ranges
//     (`SGLANG_ENABLE_NVTX_SCHEDULER`) make whole iterations: a step runs from one range's
//     start to the next's, the sampler and the read-back inside it. Decode steps over 3x
//     the median with another kernel mix are named as likely prompt-holding.
//   - Exclusive time: at each instant the running kernel with the highest-priority category
//     owns the device (allreduce > collective > attention > moe_expert > gemm > moe_routing
//     > sampling > elementwise > other > untraced_graph > memory); instants with nothing
//     running are idle. A graph replay traced at graph level is real GPU work of unknown
//     kind: it owns its time over copies and idle, but any named kernel overlapping it on
//     another stream (unclassified ones included) owns the overlap. The categories of a step
//     sum exactly to its wall time. Summed kernel time ("busy") is kept separately and may
//     exceed the wall time when streams overlap.
//   - Idle gaps per step: count, total, sizes (<10 µs, 10-100 µs, 100 µs-1 ms, >1 ms), and
//     what the device's launching threads were doing meanwhile, by CUDA API group. The
//     launching threads are the threads of the device's processes that launch, copy, memset
//     or synchronize (a thread that only allocates or registers memory, such as a pinning or
//     NCCL helper, explains no idle time). Groups, highest priority first where calls
//     overlap (nested driver calls, several threads): synchronizing (`*Synchronize`),
//     copying (`*Memcpy*`, `*Memset*`), graph launch (`cudaGraphLaunch`, `cuGraphLaunch`),
//     launching (an ordinary kernel launch), module loading and run-time compilation
//     (`cuLibraryLoad*`, `cuModuleLoad*`, `cuLibraryGetKernel`, `cuModuleGetFunction`,
//     `cuKernelSetAttribute`, `cuFuncSetAttribute`, `cuLink*`, and a launch call that itself
//     lasts 1 ms or more: lazy loading inside it), memory management (`cudaMalloc*`,
//     `cudaFree*`, `cudaHostAlloc`, `cudaHostRegister`, `cuMemAlloc*`,
//     `cuMemCreate`/`Map`/`Unmap`, ...), other CUDA call (any other `cu*` call of 10 µs or
//     more: shorter bookkeeping calls such as `cudaEventRecord` are not read, to keep the
//     reader's memory and time), and no CUDA call. The groups add up to the idle time of
//     every step (tested). One sweep over the calls sorted by start for all gaps: each call
//     enters and leaves a heap of running calls once (80 000 calls overlapping one 10 ms
//     gap: the attribution takes no longer than reading the file,
//     `BenchmarkHostGapsOverlapFile`).
//     `host_ns` in JSON keeps the four coarse activities (graph and ordinary launches are
//     `launch`; module loading, memory management and other calls count as `none` there).
//   - Outlier steps: a step of the summarised phase longer than 3x the phase's median step
//     (among 4 or more steps of that phase; with `--phase all` each phase against its own
//     median) is left out of the summary, the decode table, the findings and `diff`, listed
//     on an `Outliers:` line and in JSON (`decode.outliers`), and is its own finding
//     (`outlier_steps`).
//   - Launches per step count host launches of the step's kernels; a CUDA graph launch
//     counts once however many kernels it ran.
//   - The decode table's counts: `kernels/step` counts kernels only (the lead line's
//     kernels/step, JSON `kernels_per_step`); memcpy and memset operations per step are the
//     `memory` row's `memops/step`, a column of their own; each column adds up to its total
//     row (tested on every capture).
//   - Classification is an ordered rule table on the demangled kernel name
//     (`breakdown/kernelclass/rules.go`), communication first, MoE before GEMM, sampling
//     before attention; custom all-reduces (`cross_device_reduce_*`, lamport one-/two-shot,
//     MNNVL, symmetric memory) are all-reduce. `stepstat classify` lists each name with the
//     rule that matched, unmatched names first. NCCL kernel names are decoded into op,
//     algorithm, protocol and data type (the protocol a name carries is the variant
//     launched, not the setting: see Run configuration).
//   - Context classification (`breakdown/context.go`): a generic kernel's place in its step
//     decides what it does. Each step's kernels are read in order. After the step's last
//     GEMM (the lm_head), top-k, sort, softmax, argmax and sampler kernels are `sampling`.
//     Before it, a top-k or sort may start MoE routing: the kernels from there to the first
//     GEMM (or inductor kernel that indexes expert weights) are `moe_routing`, except the
//     gathers directly before that GEMM (`vectorized_gather_kernel`, `index_select`: the
//     selected experts' weights or tokens, the same op as before every other expert of a
//     per-expert loop), which are expert work; from there on expert work is `moe_expert`
//     (per-expert or grouped GEMMs, gathers, activations) up to the last combine
//     (`index_add_`, `scatter_add`, the weighted sum, `moe_sum`/finalize, or inductor's sum
//     fused with the next norm) before the next norm, attention or collective kernel, so the
//     next layer's residual add, norm and RoPE are not experts. No MoE without a router: the
//     run must have a softmax or sigmoid (before the top-k, fused into it, or between it and
//     the GEMM), and the step must hold two such routed layers, or one with two expert GEMMs
//     or more and a combine; a lone top-p sort (a dense model's draft head) gets no MoE
//     category. On `hf-moe-eager` (OLMoE eager) this moves the gate/up weight gather out of
//     routing: 6 routing kernels a layer (24/step, 52.93µs) and 8 expert
//     kernels (32/step), and `moe_routing_overhead` no longer holds (8.2% of the busy time).
//     A top-k without a router followed by attention (DeepSeek/GLM-5's sparse-attention
//     indexer picking tokens) is `attention`; a sampler before the lm_head is `elementwise`.
//     torch.compile names are read by their fused-op list (`triton_per_fused__softmax_...`,
//     `..._index_...`, `..._mean_..._rsqrt_..._sum_...`). Kernels moved by `--nvtx-category`
//     keep the user's category but still guide the rules. The kernel table shows
//     context-moved kernels in rows of their own with the rule `context`. Not applied to a
//     whole-trace step.
//   - Ranks (two or more devices in one trace): collective kernels are matched across
//     devices per aligned step (the k-th call of each NCCL op, or kernel family, on every
//     device); each rank's kernel splits exactly into *wait* (until the last rank arrives)
//     and *transfer*. The text report adds a per-rank table (median step, allreduce and
//     collective time per step, wait and transfer per step, wait share, times last), names
//     the straggler, gives the step spread across ranks, and phrases the communication
//     sentences per rank (the HTML report has the same table and a wait-vs-transfer chart
//     per rank). The sentence starts with the decode table's mean (exclusive time over the
//     summarised steps) and then, labelled, the matched calls' kernel time over the aligned
//     steps (every step of the phase on every rank; "outliers included" when a device has
//     outliers), the numbers of the rank table: `allreduce: 101.6µs/step = 8.38% of the mean
//     decode step; matched collectives over the 12 aligned steps, outliers included: 8
//     calls/step, 335.7µs/step kernel time, of which 289.6µs waiting for rank 1`
//     (`tp2-moe-graph-serve` device 0, whose outlier step holds most of the wait).
//   - Speed of light (`--sol-step`, or `--sol-bytes` with `--bandwidth` or the datasheet
//     bandwidth of the GPU): floor, measured median step, measured/floor, efficiency, and
//     tokens/s per sequence and in total (`--batch`), with the bandwidth assumption named.
//
// `--rules FILE` format (see `testdata/rules/example.rules`): one rule per line, `<category>
// <regexp>`, blank lines and `#` lines ignored, tried in file order before the built-in
// rules:
//
//	moe_routing   ^void mymodel::route_tokens<
//	sampling      softmax_warp_forward
package breakdown
